package gateway

import (
	"encoding/binary"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/throttle"
)

// fuzzOps encodes operations for FuzzCore: a one-byte op, a two-byte
// length and that many bytes of datagram.
func fuzzOps(ops ...[]byte) []byte {
	var out []byte
	for _, op := range ops {
		out = append(out, op[0])
		out = binary.BigEndian.AppendUint16(out, uint16(len(op)-1))
		out = append(out, op[1:]...)
	}
	return out
}

// FuzzCore feeds the core what the gateway parses — datagrams from four
// viewer endpoints and from the region on their circuits — interleaved
// with decisions and sending, on explicit time. Nothing panics, the caps
// hold, and every byte the scheduler took is sent, refused or discarded.
func FuzzCore(f *testing.F) {
	seedDatagrams := [][]byte{}
	if dir, err := filepath.Abs("../../../shared/testdata/real/opensim-networking-2017"); err == nil {
		paths, _ := filepath.Glob(filepath.Join(dir, "*.bin"))
		more, _ := filepath.Glob(filepath.Join(dir, "*", "*.bin"))
		for _, p := range append(paths, more[:min(len(more), 4)]...) {
			if b, err := os.ReadFile(p); err == nil {
				seedDatagrams = append(seedDatagrams, b)
			}
		}
	}
	agent := lludp.AgentData{AgentID: lludp.UUID{1, 1}, SessionID: lludp.UUID{2, 1}}
	enc := func(seq uint32, flags lludp.Flags, m lludp.Typed) []byte {
		b, _ := lludp.AppendMessage(nil, lludp.Header{Sequence: seq, Flags: flags}, m, []uint32{1, 2})
		return b
	}
	login := []byte{0}
	login = append(login, enc(1, lludp.FlagReliable, &lludp.UseCircuitCode{Code: 1, AgentID: agent.AgentID, SessionID: agent.SessionID})...)
	thr := append([]byte{0}, enc(2, lludp.FlagZeroCoded, &lludp.AgentThrottle{AgentData: agent, Throttles: throttle.ViewerSplit(100_000)})...)
	ack := append([]byte{0}, enc(3, 0, &lludp.PacketAck{IDs: []uint32{1, 2, 3}})...)
	pong := append([]byte{0}, enc(4, 0, &lludp.CompletePingCheck{PingID: 1})...)
	ping := append([]byte{4}, enc(5, 0, &lludp.StartPingCheck{PingID: 1})...)
	data := append([]byte{4}, regionDatagram(lludp.ImagePacketID, 6, lludp.FlagReliable, 600)...)
	resend := append([]byte{4}, regionDatagram(lludp.ImagePacketID, 6, lludp.FlagReliable|lludp.FlagResent, 600)...)
	f.Add(fuzzOps(login, thr, ping, data, []byte{8}, pong, ack, resend, []byte{9}, []byte{8}))
	proven := append([]byte{0x10}, login[1:]...)
	f.Add(fuzzOps(proven, thr, ping, data, []byte{8}, pong, ack, resend, []byte{9}, []byte{8}))
	for _, d := range seedDatagrams {
		f.Add(fuzzOps(proven, append([]byte{4}, d...), []byte{8}, append([]byte{1}, d...)))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := NewCore(Config{Routes: []Route{{Listen: testListen, Region: testRegion}}, MaxViewers: 3, MaxPending: 2, MaxPerPrefix: 3, Rand: seeded(1),
			Control: throttle.Config{Interval: 100 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Unix(1000, 0)
		var out [16]Out
		// Bytes from each endpoint while it had no circuit, and bytes
		// the core sent it then: at most 3x (RFC 9000 §8).
		unproven, probed := map[netip.AddrPort]int{}, map[netip.AddrPort]int{}
		for len(in) >= 3 {
			op := in[0]
			n := int(binary.BigEndian.Uint16(in[1:3]))
			in = in[3:]
			b := in[:min(n, len(in))]
			in = in[len(b):]
			now = now.Add(time.Duration(op&0xF0) * time.Millisecond)
			addr := netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, op & 3}), 5000)
			switch op & 0x0C {
			case 0: // from a viewer, which acks the probe it is sent
				if c.viewers[circuitKey{0, addr}] == nil {
					unproven[addr] += len(b)
				}
				c.FromViewer(0, addr, append([]byte(nil), b...), now)
				for _, r := range c.Replies(nil) {
					if probed[r.To] += len(r.B); probed[r.To] > antiAmplification*unproven[r.To] {
						t.Fatalf("%v: sent %d bytes before its proof, received %d", r.To, probed[r.To], unproven[r.To])
					}
					h, _, _, _ := lludp.ParseHeader(r.B)
					ack, _ := lludp.AppendMessage(nil, lludp.Header{Sequence: 99}, &lludp.PacketAck{IDs: []uint32{h.Sequence}}, nil)
					if op&0x10 != 0 { // and sometimes does not
						unproven[r.To] += len(ack)
						c.FromViewer(0, r.To, ack, now)
					}
				}
			case 4: // from the region, on that viewer's circuit
				if v := c.viewers[circuitKey{0, addr}]; v != nil {
					c.FromRegion(v, append([]byte(nil), b...), now)
				}
			case 8:
				c.Next(out[:], now)
			default:
				c.Tick(now, nil, nil)
			}
			all, pend := c.Viewers()
			if all > 3 || pend > 3 || c.Probes() > 2 {
				t.Fatalf("%d circuits, %d pending, %d probes: caps 3, 3 and 2", all, pend, c.Probes())
			}
		}
		for {
			n, _ := c.Next(out[:], now.Add(time.Hour))
			if n == 0 {
				break
			}
		}
		st := c.sched.Stats()
		if st.EnqueuedBytes != st.SentBytes+st.DiscardedBytes {
			t.Fatalf("bytes not conserved: %+v", st)
		}
	})
}

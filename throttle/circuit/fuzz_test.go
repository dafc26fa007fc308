package circuit

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/lludp"
)

// FuzzObserve: any sequence of datagrams between viewers and a simulator
// is measured without a panic, the counters stay consistent, the circuits
// never exceed MaxCircuits nor the candidates MaxCandidates, and every
// eviction is reported once.
func FuzzObserve(f *testing.F) {
	for _, m := range []lludp.Typed{
		&lludp.StartPingCheck{PingID: 1}, &lludp.CompletePingCheck{PingID: 1}, &lludp.PacketAck{IDs: []uint32{1, 2}},
		&lludp.UseCircuitCode{Code: 1}, &lludp.AgentThrottle{}, &lludp.LayerData{Type: lludp.LayerWind, Data: []byte{1}},
		&lludp.AgentUpdate{AgentData: agent}, &lludp.CompleteAgentMovement{AgentData: agent},
	} {
		b, _ := lludp.AppendMessage(nil, lludp.Header{Flags: lludp.FlagReliable, Sequence: 5}, m, []uint32{3})
		f.Add(b, uint8(0), uint8(0))
		f.Add(b, uint8(40), uint8(0x23))
	}
	f.Fuzz(func(t *testing.T, payload []byte, seqs uint8, limits uint8) {
		var evicted []Key
		cfg := Config{MaxCircuits: int(limits & 3), MaxCandidates: int(limits>>2&3) + 1,
			OnEvict: func(k Key) { evicted = append(evicted, k) }}
		tr := NewTracker(cfg)
		at := time.Unix(0, 0)
		viewers := int(limits>>4) + 1
		for i := range int(seqs%64) + 1 {
			b := append([]byte(nil), payload...)
			if len(b) >= 5 { // vary the sequence number and direction
				b[4] += byte(i * 7 / viewers)
			}
			v := netip.AddrPortFrom(viewer.Addr(), viewer.Port()+uint16(i%viewers))
			src, dst := sim, v
			if i%3 == 0 {
				src, dst = v, sim
			}
			tr.Observe(capture.Datagram{At: at.Add(time.Duration(i) * time.Millisecond), Src: src, Dst: dst, Payload: b})
			if cfg.MaxCircuits > 0 && len(tr.Circuits()) > cfg.MaxCircuits {
				t.Fatalf("%d circuits, at most %d", len(tr.Circuits()), cfg.MaxCircuits)
			}
			if n, _ := tr.Candidates(); n > cfg.MaxCandidates || n < 0 {
				t.Fatalf("%d candidates, at most %d", n, cfg.MaxCandidates)
			}
		}
		if uint64(len(evicted)) != tr.Evicted() {
			t.Fatalf("%d evictions reported, %d counted", len(evicted), tr.Evicted())
		}
		for _, k := range evicted {
			if c := tr.Circuit(k); c != nil && !c.Candidate() && c.Stats(Up).Packets+c.Stats(Down).Packets == 0 {
				t.Fatalf("%v evicted, still there and empty", k)
			}
		}
		for _, c := range tr.Circuits() {
			if c.Candidate() || tr.Circuit(c.Key) != c {
				t.Fatalf("%v: listed but a candidate or not found", c.Key)
			}
			for _, d := range []Direction{Down, Up} {
				s := c.Stats(d)
				if s.LossEventRate < 0 || s.LossEventRate > 1 || s.Lost > 1<<32 {
					t.Fatalf("%v: %+v", d, s)
				}
			}
		}
	})
}

// FuzzFastBody: the messages whose fields the tracker reads without a full
// decode are accepted and rejected exactly as lludp.Packet decodes them,
// and read the same fields as Unmarshal; the zero-code expansion that
// serves it agrees with lludp.ZeroDecode.
func FuzzFastBody(f *testing.F) {
	for _, m := range fastTyped() {
		for _, flags := range []lludp.Flags{0, lludp.FlagZeroCoded} {
			b, _ := lludp.AppendMessage(nil, lludp.Header{Flags: flags, Sequence: 5}, m, []uint32{3})
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		h, _, end, err := lludp.ParseHeader(p)
		if err != nil {
			return
		}
		if h.Flags.ZeroCoded() {
			want := make([]byte, lludp.MaxPacketSize-lludp.HeaderSize)
			n, zerr := lludp.ZeroDecode(want, p[lludp.HeaderSize:end])
			var got [64]byte
			total, ok := expandPrefix(got[:], p[lludp.HeaderSize:end], len(want))
			if ok != (zerr == nil) || ok && (total != n || !bytes.Equal(got[:min(n, len(got))], want[:min(n, len(got))])) {
				t.Fatalf("expandPrefix: %d bytes, ok %v; ZeroDecode: %d, %v", total, ok, n, zerr)
			}
		}
		which := -1
		for i, m := range fastTyped() {
			if m.MessageID() == h.ID {
				which = i
			}
		}
		if which < 0 {
			return
		}
		tr := NewTracker(Config{})
		body, err := tr.fields(which, p, h, end)
		var pkt lludp.Packet
		wantErr := pkt.DecodeFromBytes(p)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("fields: %v; DecodeFromBytes: %v", err, wantErr)
		}
		if wantErr != nil {
			return
		}
		m := fastTyped()[which]
		if uerr := pkt.Unmarshal(m); (uerr == nil) != (body != nil) {
			t.Fatalf("fields gave %d bytes; Unmarshal: %v", len(body), uerr)
		}
		if body == nil {
			return
		}
		again, err := lludp.AppendMessage(nil, lludp.Header{}, m, nil)
		if err != nil {
			t.Fatal(err)
		}
		read := tr.body[which].read
		if typed := again[lludp.HeaderSize+numberLen(h.ID):]; len(body) < read || !bytes.Equal(body[:read], typed[:read]) {
			t.Fatalf("fields read % x, Unmarshal % x", body, typed[:read])
		}
	})
}

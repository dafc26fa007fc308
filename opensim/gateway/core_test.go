package gateway

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
)

var (
	testListen = netip.MustParseAddrPort("127.0.0.1:9000")
	testRegion = netip.MustParseAddrPort("10.0.0.1:9000")
)

func newTestCore(t *testing.T, cfg Config) *Core {
	t.Helper()
	if cfg.Routes == nil {
		cfg.Routes = []Route{{Listen: testListen, Region: testRegion}}
	}
	c, err := NewCore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func datagram(t *testing.T, seq uint32, flags lludp.Flags, m lludp.Typed) []byte {
	t.Helper()
	b, err := lludp.AppendMessage(nil, lludp.Header{Sequence: seq, Flags: flags}, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func useCircuitCode(t *testing.T, code uint32) []byte {
	return datagram(t, 1, lludp.FlagReliable, &lludp.UseCircuitCode{Code: code, AgentID: lludp.UUID{1, byte(code)}, SessionID: lludp.UUID{2, byte(code)}})
}

func viewerAddr(a, b, c, d byte, port uint16) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{a, b, c, d}), port)
}

// regionDatagram is a region datagram of the given message and size.
func regionDatagram(id lludp.MessageID, seq uint32, flags lludp.Flags, size int) []byte {
	payload := lludp.AppendMessageNumber(nil, id)
	payload = append(payload, make([]byte, size-len(payload)-lludp.HeaderSize)...)
	return lludp.AppendPacket(nil, lludp.Header{Flags: flags, Sequence: seq}, payload, nil)
}

// TestAdmission: only UseCircuitCode opens a circuit; the caps hold; a
// pending circuit makes room for a new one, an established one never.
func TestAdmission(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c := newTestCore(t, Config{MaxViewers: 4, MaxPending: 2, MaxPerPrefix: 3})
	// Not a UseCircuitCode from an unknown endpoint: dropped, nothing kept.
	if _, _, d := c.FromViewer(0, viewerAddr(192, 0, 2, 1, 1), datagram(t, 1, 0, &lludp.AgentUpdate{}), t0); d != Orphan {
		t.Errorf("AgentUpdate from a stranger: %v", d)
	}
	if _, _, d := c.FromViewer(0, viewerAddr(192, 0, 2, 1, 1), []byte{0x40, 0, 0}, t0); d != Malformed {
		t.Errorf("three bytes: %v", d)
	}
	if _, _, d := c.FromViewer(3, viewerAddr(192, 0, 2, 1, 1), useCircuitCode(t, 1), t0); d != Malformed {
		t.Errorf("a route that does not exist: %v", d)
	}
	// An established circuit: it acks a region datagram.
	good := viewerAddr(192, 0, 2, 1, 1)
	v, out, d := c.FromViewer(0, good, useCircuitCode(t, 1), t0)
	if d != Passed || len(out) == 0 || v.Route != 0 {
		t.Fatalf("UseCircuitCode: %v", d)
	}
	if send, _ := c.FromRegion(v, regionDatagram(lludp.RegionHandshakeID, 1, lludp.FlagReliable, 200), t0); !send {
		t.Fatal("the handshake waits in the scheduler")
	}
	c.FromViewer(0, good, datagram(t, 2, 0, &lludp.PacketAck{IDs: []uint32{1}}), t0)
	if all, pend := c.Viewers(); all != 1 || pend != 0 {
		t.Fatalf("after the ack: %d circuits, %d pending", all, pend)
	}
	// A flood from fresh addresses: the pending slots cycle, the
	// established circuit stays.
	for i := range 100 {
		c.FromViewer(0, viewerAddr(198, 51, byte(i), 7, 5000), useCircuitCode(t, uint32(10+i)), t0.Add(time.Duration(i)*time.Millisecond))
	}
	if all, pend := c.Viewers(); all != 3 || pend != 2 {
		t.Errorf("after the flood: %d circuits, %d pending; want 3 and 2", all, pend)
	}
	if c.viewers[circuitKey{0, good}] != v {
		t.Error("the flood evicted the established circuit")
	}
	k := c.Counters()
	if k.Evicted != 98 {
		t.Errorf("evicted %d pending circuits, want 98", k.Evicted)
	}
	if gone := c.Gone(nil); len(gone) != 98 {
		t.Errorf("Gone reports %d evicted circuits, want 98: their sockets must close", len(gone))
	}
	// Per prefix: the fourth circuit from one /24 is refused.
	c2 := newTestCore(t, Config{MaxPerPrefix: 3})
	for i := range 4 {
		_, _, d := c2.FromViewer(0, viewerAddr(203, 0, 113, byte(i+1), 5000), useCircuitCode(t, uint32(i)), t0)
		if want := map[bool]Drop{true: Refused, false: Passed}[i == 3]; d != want {
			t.Errorf("circuit %d of one /24: %v, want %v", i+1, d, want)
		}
	}
	if _, _, d := c2.FromViewer(0, viewerAddr(203, 0, 114, 1, 5000), useCircuitCode(t, 9), t0); d != Passed {
		t.Errorf("another /24: %v", d)
	}
}

// TestTimeouts: pending, idle and logged-out circuits close when their
// time is up, and not before.
func TestTimeouts(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c := newTestCore(t, Config{PendingTimeout: 10 * time.Second, IdleTimeout: 60 * time.Second, Linger: 2 * time.Second})
	pend, _, _ := c.FromViewer(0, viewerAddr(192, 0, 2, 1, 1), useCircuitCode(t, 1), t0)
	idle, _, _ := c.FromViewer(0, viewerAddr(192, 0, 2, 2, 1), useCircuitCode(t, 2), t0)
	c.FromViewer(0, idle.Addr, datagram(t, 2, 0, &lludp.CompleteAgentMovement{}), t0)
	gone, _, _ := c.FromViewer(0, viewerAddr(192, 0, 2, 3, 1), useCircuitCode(t, 3), t0)
	c.FromViewer(0, gone.Addr, datagram(t, 2, 0, &lludp.CompleteAgentMovement{}), t0)
	c.FromRegion(gone, regionDatagram(lludp.LogoutReplyID, 6, lludp.FlagReliable, 40), t0.Add(time.Second))
	for _, tc := range []struct {
		at   time.Duration
		want []*Viewer
	}{
		{2 * time.Second, nil},
		{3100 * time.Millisecond, []*Viewer{gone}},
		{10 * time.Second, nil},
		{10100 * time.Millisecond, []*Viewer{pend}},
		{60 * time.Second, nil},
		{60100 * time.Millisecond, []*Viewer{idle}},
	} {
		_, closed := c.Tick(t0.Add(tc.at), nil, nil)
		if len(closed) != len(tc.want) || len(closed) == 1 && closed[0] != tc.want[0] {
			t.Errorf("at %v closed %d circuits, want %d", tc.at, len(closed), len(tc.want))
		}
	}
	if all, _ := c.Viewers(); all != 0 {
		t.Errorf("%d circuits left", all)
	}
	if gone := c.Gone(nil); len(gone) != 0 {
		t.Errorf("Tick reported the closed circuits, yet Gone has %d more", len(gone))
	}
}

// TestRewriteAndAssert: the viewer's AgentThrottle passes as sent while
// the fair rate is above it, and is rewritten to the fair rate once that is
// lower; the gateway asserts its rate from then on.
func TestRewriteAndAssert(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c := newTestCore(t, Config{Control: throttle.Config{Controller: throttle.TFRC, Interval: time.Second}})
	addr := viewerAddr(192, 0, 2, 1, 1)
	v, _, _ := c.FromViewer(0, addr, useCircuitCode(t, 1), t0)
	c.FromViewer(0, addr, datagram(t, 2, 0, &lludp.CompleteAgentMovement{}), t0)
	ask := ratecalc.RateFromBits(1_500_000)
	thr := &lludp.AgentThrottle{AgentData: lludp.AgentData{AgentID: lludp.UUID{1, 1}, SessionID: lludp.UUID{2, 1}}, Throttles: throttle.ViewerSplit(ask)}
	in := datagram(t, 3, lludp.FlagReliable, thr)
	_, out, _ := c.FromViewer(0, addr, in, t0)
	if string(out) != string(in) {
		t.Error("the first AgentThrottle was changed before any decision")
	}
	// The controller's decision: held at 200 kbit/s by its clamps.
	v.fair = ratecalc.RateFromBits(200_000)
	_, out, _ = c.FromViewer(0, addr, datagram(t, 4, lludp.FlagReliable, thr), t0.Add(time.Second))
	var p lludp.Packet
	var got lludp.AgentThrottle
	if err := p.DecodeFromBytes(out); err != nil || p.Unmarshal(&got) != nil {
		t.Fatalf("rewritten AgentThrottle does not decode: %v", err)
	}
	if r := ratecalc.RateFromBits(got.Total()); r < v.fair*0.99 || r > v.fair*1.01 || p.Sequence != 4 || !p.Flags.Reliable() {
		t.Errorf("rewritten to %v (seq %d, %v); want %v, seq 4, reliable", r, p.Sequence, p.Flags, v.fair)
	}
	if _, total, _ := c.sched.Rates(v.sched); total < int64(v.fair)*99/100 || total > int64(v.fair)*101/100 {
		t.Errorf("the scheduler sends at %d B/s, want %v", total, v.fair)
	}
	// A decision re-asserts, from the viewer's latest sequence number.
	c.FromViewer(0, addr, datagram(t, 9, 0, &lludp.AgentUpdate{}), t0.Add(1500*time.Millisecond))
	asserts, _ := c.Tick(t0.Add(5*time.Second), nil, nil)
	for range 5 {
		var more []Assert
		more, _ = c.Tick(t0.Add(10*time.Second), nil, nil)
		asserts = append(asserts, more...)
	}
	if len(asserts) == 0 {
		t.Fatal("no AgentThrottle asserted")
	}
	if err := p.DecodeFromBytes(asserts[0].B); err != nil || p.Unmarshal(&got) != nil || p.Sequence != 9 || p.Flags.Reliable() || got.AgentID != thr.AgentID {
		t.Errorf("assert: seq %d, flags %v, agent %v: %v", p.Sequence, p.Flags, got.AgentID, err)
	}
}

// TestChannelFairQueuing: with a texture backlog, an Avatar or Task
// datagram waits at most one texture datagram's transmission time at the
// viewer's rate — the debt the last texture datagram left in the viewer's
// bucket — plus the waiting calendar's slot (131 µs), and the texture
// channel gets the rest of the rate. The bound holds because an idle
// channel's next datagram takes the current virtual time as its start tag,
// ahead of the backlogged channel's next (start-time fair queuing, doc.go
// of package opensim). Explicit time: every datagram's wait is exact.
func TestChannelFairQueuing(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c := newTestCore(t, Config{})
	addr := viewerAddr(192, 0, 2, 1, 1)
	v, _, _ := c.FromViewer(0, addr, useCircuitCode(t, 1), t0)
	c.FromViewer(0, addr, datagram(t, 2, 0, &lludp.CompleteAgentMovement{}), t0)
	ask := ratecalc.RateFromBits(400_000)
	c.FromViewer(0, addr, datagram(t, 3, 0, &lludp.AgentThrottle{AgentData: lludp.AgentData{AgentID: lludp.UUID{1, 1}, SessionID: lludp.UUID{2, 1}},
		Throttles: throttle.ViewerSplit(ask)}), t0)
	_, rate, _ := c.sched.Rates(v.sched)
	const step = 100 * time.Microsecond
	const texSize, avatarSize, taskSize = 1000, 80, 1200
	var seq uint32
	queuedTex := 0
	var sentBytes [opensim.NumChannels]int
	var worst [opensim.NumChannels]time.Duration
	arrived := map[uint32]time.Time{}
	var out [64]Out
	const run = 10 * time.Second
	for now := t0; now.Before(t0.Add(run)); now = now.Add(step) {
		el := now.Sub(t0)
		enqueue := func(id lludp.MessageID, flags lludp.Flags, size int) {
			seq++
			arrived[seq] = now
			// The region's number goes in the body too: the viewer sees
			// another, in departure order (renumber.go).
			b := regionDatagram(id, seq, flags, size)
			binary.BigEndian.PutUint32(b[7:], seq)
			if _, d := c.FromRegion(v, b, now); d != Passed {
				t.Fatalf("queue full at %v", el)
			}
		}
		for queuedTex < 20 { // the region keeps a texture backlog
			enqueue(lludp.ImagePacketID, lludp.FlagReliable, texSize)
			queuedTex++
		}
		if el%(100*time.Millisecond) == 7*time.Millisecond {
			enqueue(lludp.ImprovedTerseObjectUpdateID, 0, avatarSize)
		}
		if el%(500*time.Millisecond) == 53*time.Millisecond {
			enqueue(lludp.ObjectUpdateID, lludp.FlagReliable, taskSize)
		}
		n, _ := c.Next(out[:], now)
		for _, o := range out[:n] {
			h, _, _, _ := lludp.ParseHeader(o.B)
			ch := opensim.ChannelOf(lludp.Builtin().Lookup(h.ID))
			sentBytes[ch] += len(o.B)
			worst[ch] = max(worst[ch], now.Sub(arrived[binary.BigEndian.Uint32(o.B[7:])]))
			if ch == opensim.Texture {
				queuedTex--
			}
		}
	}
	st := c.Circuits()[0]
	bound := time.Duration(texSize)*time.Second/time.Duration(rate) + 131*time.Microsecond + step
	t.Logf("rate %d B/s; worst wait: Avatar %v, Task %v, Texture %v; bound %v; mean Texture wait %v (what a FIFO would make every datagram wait)",
		rate, worst[opensim.Avatar], worst[opensim.Task], worst[opensim.Texture], bound, st.DelayMean[opensim.Texture])
	for _, ch := range []opensim.Channel{opensim.Avatar, opensim.Task} {
		if worst[ch] > bound {
			t.Errorf("%v waited %v, above the bound %v", ch, worst[ch], bound)
		}
		if st.Delay[ch] != worst[ch] {
			t.Errorf("%v: the gateway measured a largest wait of %v, the test %v", ch, st.Delay[ch], worst[ch])
		}
	}
	total := 0
	for _, b := range sentBytes {
		total += b
	}
	if got := float64(total) / run.Seconds(); got < 0.97*float64(rate) || got > 1.01*float64(rate) {
		t.Errorf("sent %.0f B/s at a rate of %d", got, rate)
	}
	// The texture channel keeps everything the others leave: the rate
	// less what Avatar and Task offered (100 and 20 datagrams).
	if tex, want := float64(sentBytes[opensim.Texture]), 0.97*float64(rate)*run.Seconds()-100*avatarSize-20*taskSize; tex < want {
		t.Errorf("texture got %.0f bytes, want at least %.0f", tex, want)
	}
}

// TestNewCircuitSameEndpoint: after a region restart a viewer logs in
// again from the same endpoint; the circuit keeps its socket, and its
// measurement starts afresh with the new circuit's sequence numbers.
func TestNewCircuitSameEndpoint(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c := newTestCore(t, Config{})
	addr := viewerAddr(192, 0, 2, 1, 1)
	v, _, _ := c.FromViewer(0, addr, useCircuitCode(t, 1), t0)
	c.FromViewer(0, addr, datagram(t, 2, 0, &lludp.CompleteAgentMovement{}), t0)
	for seq := uint32(1); seq <= 10; seq++ {
		c.FromRegion(v, regionDatagram(lludp.ObjectUpdateID, seq, lludp.FlagReliable, 300), t0)
	}
	var out [16]Out
	for ms := range 500 {
		c.Next(out[:], t0.Add(time.Duration(ms)*time.Millisecond))
	}
	if v.est.tail-v.est.head != 10 {
		t.Fatalf("%d reliable datagrams outstanding, want 10", v.est.tail-v.est.head)
	}
	// The new login: other IDs, numbers from 1 again.
	again, _, d := c.FromViewer(0, addr, useCircuitCode(t, 2), t0.Add(time.Second))
	if d != Passed || again != v {
		t.Fatalf("the second login made a new circuit (%v)", d)
	}
	if v.est.tail != v.est.head || v.code != 2 {
		t.Errorf("after the new login: %d outstanding, code %d", v.est.tail-v.est.head, v.code)
	}
	// The same login resent (a viewer resends an unacked UseCircuitCode)
	// changes nothing.
	c.FromRegion(v, regionDatagram(lludp.ObjectUpdateID, 1, lludp.FlagReliable, 300), t0.Add(time.Second))
	c.Next(out[:], t0.Add(1500*time.Millisecond))
	c.FromViewer(0, addr, useCircuitCode(t, 2), t0.Add(2*time.Second))
	if v.est.tail-v.est.head != 1 {
		t.Errorf("a resent UseCircuitCode reset the measurement")
	}
}

// TestRenumber: the viewer sees the region's datagrams numbered in
// departure order; a resend carries its original's number; the viewer's
// acks, in PacketAck (plain and zero-coded) and appended, reach the region
// under the region's numbers; a resend of a datagram still queued is
// dropped; StartPingCheck's OldestUnacked is translated too.
func TestRenumber(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c := newTestCore(t, Config{})
	addr := viewerAddr(192, 0, 2, 1, 1)
	v, _, _ := c.FromViewer(0, addr, useCircuitCode(t, 1), t0)
	c.FromViewer(0, addr, datagram(t, 2, 0, &lludp.CompleteAgentMovement{}), t0)
	// Region numbers 100 and 101 (Texture), 102 (Avatar).
	c.FromRegion(v, regionDatagram(lludp.ImagePacketID, 100, lludp.FlagReliable, 1000), t0)
	c.FromRegion(v, regionDatagram(lludp.ImagePacketID, 101, lludp.FlagReliable, 1000), t0)
	c.FromRegion(v, regionDatagram(lludp.ImprovedTerseObjectUpdateID, 102, lludp.FlagReliable, 100), t0)
	// A resend of 101 while it is still queued is dropped.
	if _, d := c.FromRegion(v, regionDatagram(lludp.ImagePacketID, 101, lludp.FlagReliable|lludp.FlagResent, 1000), t0); d != ResendQueued {
		t.Errorf("resend of a queued datagram: %v", d)
	}
	var out [16]Out
	var got []uint32
	for ms := range 200 {
		n, _ := c.Next(out[:], t0.Add(time.Duration(ms)*time.Millisecond))
		for _, o := range out[:n] {
			h, _, _, _ := lludp.ParseHeader(o.B)
			got = append(got, h.Sequence)
		}
	}
	if len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 3 {
		t.Fatalf("the viewer saw numbers %v, want 1 2 3", got)
	}
	region := func(viewer uint32) uint32 { return v.seq.region(viewer) }
	if region(1)+region(2)+region(3) != 303 {
		t.Errorf("numbers map to %d %d %d", region(1), region(2), region(3))
	}
	// The region resends 100: it carries the number the viewer saw.
	c.FromRegion(v, regionDatagram(lludp.ImagePacketID, 100, lludp.FlagReliable|lludp.FlagResent, 1000), t0.Add(time.Second))
	n, _ := c.Next(out[:], t0.Add(2*time.Second))
	if h, _, _, _ := lludp.ParseHeader(out[0].B); n != 1 || h.Sequence != v.seq.viewer(100) || !h.Flags.Resent() {
		t.Errorf("resend of 100 left as %d (%v), want %d", h.Sequence, h.Flags, v.seq.viewer(100))
	}
	var p lludp.Packet
	var ack lludp.PacketAck
	for _, flags := range []lludp.Flags{0, lludp.FlagZeroCoded} {
		b, _ := lludp.AppendMessage(nil, lludp.Header{Flags: flags, Sequence: 7}, &lludp.PacketAck{IDs: []uint32{1, 2}}, []uint32{3})
		_, fwd, _ := c.FromViewer(0, addr, b, t0.Add(3*time.Second))
		if err := p.DecodeFromBytes(fwd); err != nil || p.Unmarshal(&ack) != nil {
			t.Fatalf("%v: translated PacketAck does not decode: %v", flags, err)
		}
		if ids := ack.IDs; len(ids) != 2 || ids[0] != region(1) || ids[1] != region(2) || p.Acks.Len() != 1 || p.Acks.At(0) != region(3) || p.Sequence != 7 {
			t.Errorf("%v: passed on IDs %v, appended %v, seq %d", flags, ack.IDs, p.Acks.AppendTo(nil), p.Sequence)
		}
	}
	// StartPingCheck: OldestUnacked 101 becomes the viewer's number of 101.
	ping, _ := lludp.AppendMessage(nil, lludp.Header{Sequence: 104}, &lludp.StartPingCheck{PingID: 3, OldestUnacked: 101}, nil)
	if send, _ := c.FromRegion(v, ping, t0.Add(4*time.Second)); !send {
		t.Fatal("a ping waits in the scheduler")
	}
	var sp lludp.StartPingCheck
	if p.DecodeFromBytes(ping) != nil || p.Unmarshal(&sp) != nil || sp.OldestUnacked != v.seq.viewer(101) {
		t.Errorf("OldestUnacked %d, want %d", sp.OldestUnacked, v.seq.viewer(101))
	}
}

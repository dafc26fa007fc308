package gateway

import (
	"bytes"
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
	if cfg.Rand == nil {
		cfg.Rand = seeded(1)
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

// seeded is a seeded source of the core's random numbers (Config.Rand).
func seeded(seed byte) *bytes.Reader { return bytes.NewReader(bytes.Repeat([]byte{seed}, 32)) }

// login proves addr's address with the probe's ack and returns the circuit
// it opens (pending: the viewer has not acked the region yet).
func login(t *testing.T, c *Core, addr netip.AddrPort, code uint32, now time.Time) *Viewer {
	t.Helper()
	if _, _, d := c.FromViewer(0, addr, useCircuitCode(t, code), now); d != Probing {
		t.Fatalf("UseCircuitCode from %v: %v, want probing", addr, d)
	}
	r := c.Replies(nil)
	if len(r) != 1 || r[0].To != addr {
		t.Fatalf("probes %v, want one to %v", r, addr)
	}
	h, _, _, _ := lludp.ParseHeader(r[0].B)
	v, out, d := c.FromViewer(0, addr, datagram(t, 2, 0, &lludp.PacketAck{IDs: []uint32{h.Sequence}}), now)
	if d != Passed || v == nil || string(out) != string(useCircuitCode(t, code)) {
		t.Fatalf("the probe's ack from %v: %v, passed on %x", addr, d, out)
	}
	return v
}

// establish has the region send v a reliable datagram and the viewer ack
// it: the circuit is established.
func establish(t *testing.T, c *Core, v *Viewer, now time.Time) {
	t.Helper()
	b := regionDatagram(lludp.RegionHandshakeID, 1, lludp.FlagReliable, 200)
	if send, _ := c.FromRegion(v, b, now); !send {
		t.Fatal("the handshake waits in the scheduler")
	}
	h, _, _, _ := lludp.ParseHeader(b)
	c.FromViewer(0, v.Addr, datagram(t, 3, 0, &lludp.PacketAck{IDs: []uint32{h.Sequence}}), now)
	if v.state != active {
		t.Fatal("the ack of the region's datagram did not establish the circuit")
	}
}

// TestAdmission: only a UseCircuitCode starts a probe, and only the
// probe's ack from the endpoint opens a circuit; until then the endpoint
// gets at most 3x what it sent; a truncated UseCircuitCode costs nothing;
// CompleteAgentMovement establishes nothing; a full probe table refuses
// newcomers rather than evict a probe younger than PendingHold; the caps
// per prefix hold.
func TestAdmission(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c := newTestCore(t, Config{MaxViewers: 4, MaxPending: 2, MaxPerPrefix: 3})
	stranger := viewerAddr(192, 0, 2, 1, 1)
	for _, tc := range []struct {
		name  string
		route int
		b     []byte
		want  Drop
	}{
		{"AgentUpdate from a stranger", 0, datagram(t, 1, 0, &lludp.AgentUpdate{}), Orphan},
		{"three bytes", 0, []byte{0x40, 0, 0}, Malformed},
		{"a route that does not exist", 3, useCircuitCode(t, 1), Malformed},
		{"a truncated UseCircuitCode", 0, useCircuitCode(t, 1)[:20], Malformed},
		{"an ack from a stranger", 0, datagram(t, 1, 0, &lludp.PacketAck{IDs: []uint32{1, 2, 3}}), Orphan},
	} {
		if _, _, d := c.FromViewer(tc.route, stranger, tc.b, t0); d != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, d, tc.want)
		}
	}
	if c.Probes() != 0 || len(c.Replies(nil)) != 0 {
		t.Fatalf("%d probes, something sent, after datagrams that start none", c.Probes())
	}
	// A probe: guesses and CompleteAgentMovement prove nothing; the
	// probe's own number does.
	good := viewerAddr(192, 0, 2, 1, 1)
	use := useCircuitCode(t, 1)
	if _, _, d := c.FromViewer(0, good, use, t0); d != Probing {
		t.Fatalf("UseCircuitCode: %v", d)
	}
	r := c.Replies(nil)
	if len(r) != 1 || len(r[0].B) > 3*len(use) {
		t.Fatalf("probe %v: want one, within 3x the %d bytes received", r, len(use))
	}
	ph, _, _, _ := lludp.ParseHeader(r[0].B)
	if _, _, d := c.FromViewer(0, good, datagram(t, 2, lludp.FlagReliable, &lludp.CompleteAgentMovement{}), t0); d != Probing {
		t.Errorf("CompleteAgentMovement before the proof: %v", d)
	}
	v, out, d := c.FromViewer(0, good, datagram(t, 3, 0, &lludp.PacketAck{IDs: []uint32{ph.Sequence}}), t0)
	if d != Passed || string(out) != string(use) || v.Route != 0 || v.state != pending {
		t.Fatalf("the probe's ack: %v, passed on %x", d, out)
	}
	establish(t, c, v, t0)
	// A flood from fresh addresses: two probe slots, each kept
	// PendingHold; the established circuit untouched.
	refused := 0
	for i := range 100 {
		at := t0.Add(time.Duration(i) * 20 * time.Millisecond)
		if _, _, d := c.FromViewer(0, viewerAddr(198, 51, byte(i), 7, 5000), useCircuitCode(t, uint32(10+i)), at); d == Refused {
			refused++
		}
	}
	// Over 2 s, a slot frees once a probe is 1 s old: 4 admitted.
	if k := c.Counters(); k.Probes != 2 || k.Evicted != 2 || refused != 96 {
		t.Errorf("after the flood: %d probes, %d evicted, %d refused; want 2, 2, 96", k.Probes, k.Evicted, refused)
	}
	if c.viewers[circuitKey{0, good}] != v {
		t.Error("the flood touched the established circuit")
	}
	// Guessing: 16 wrong acks are taken, the 17th drops the probe.
	c3 := newTestCore(t, Config{})
	c3.FromViewer(0, good, use, t0)
	wrong := make([]uint32, maxGuesses)
	for i := range wrong {
		wrong[i] = uint32(i + 1)
	}
	if _, _, d := c3.FromViewer(0, good, datagram(t, 2, 0, &lludp.PacketAck{IDs: wrong}), t0); d != Probing {
		t.Errorf("%d wrong acks: %v", maxGuesses, d)
	}
	if _, _, d := c3.FromViewer(0, good, datagram(t, 3, 0, &lludp.PacketAck{IDs: []uint32{1 << 23}}), t0); d != BadProof || c3.Probes() != 0 {
		t.Errorf("one more: %v, %d probes", d, c3.Probes())
	}
	// Per prefix: the fourth circuit from one /24 is refused.
	c2 := newTestCore(t, Config{MaxPerPrefix: 3})
	for i := range 4 {
		_, _, d := c2.FromViewer(0, viewerAddr(203, 0, 113, byte(i+1), 5000), useCircuitCode(t, uint32(i)), t0)
		if want := map[bool]Drop{true: Refused, false: Probing}[i == 3]; d != want {
			t.Errorf("probe %d of one /24: %v, want %v", i+1, d, want)
		}
	}
	if _, _, d := c2.FromViewer(0, viewerAddr(203, 0, 114, 1, 5000), useCircuitCode(t, 9), t0); d != Probing {
		t.Errorf("another /24: %v", d)
	}
}

// TestTimeouts: probes, pending, idle and logged-out circuits close when
// their time is up, and not before.
func TestTimeouts(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c := newTestCore(t, Config{PendingTimeout: 10 * time.Second, IdleTimeout: 60 * time.Second, Linger: 2 * time.Second})
	c.FromViewer(0, viewerAddr(192, 0, 2, 9, 1), useCircuitCode(t, 9), t0) // a probe never answered
	c.Replies(nil)
	pend := login(t, c, viewerAddr(192, 0, 2, 1, 1), 1, t0)
	idle := login(t, c, viewerAddr(192, 0, 2, 2, 1), 2, t0)
	establish(t, c, idle, t0)
	gone := login(t, c, viewerAddr(192, 0, 2, 3, 1), 3, t0)
	establish(t, c, gone, t0)
	c.FromRegion(gone, regionDatagram(lludp.LogoutReplyID, 6, lludp.FlagReliable, 40), t0.Add(time.Second))
	for _, tc := range []struct {
		at     time.Duration
		want   []*Viewer
		probes int
	}{
		{2 * time.Second, nil, 1},
		{3100 * time.Millisecond, []*Viewer{gone}, 1},
		{10 * time.Second, nil, 1},
		{10100 * time.Millisecond, []*Viewer{pend}, 0},
		{60 * time.Second, nil, 0},
		{60100 * time.Millisecond, []*Viewer{idle}, 0},
	} {
		_, closed := c.Tick(t0.Add(tc.at), nil, nil)
		if len(closed) != len(tc.want) || len(closed) == 1 && closed[0] != tc.want[0] || c.Probes() != tc.probes {
			t.Errorf("at %v closed %d circuits, %d probes left; want %d, %d", tc.at, len(closed), c.Probes(), len(tc.want), tc.probes)
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
	v := login(t, c, addr, 1, t0)
	establish(t, c, v, t0)
	ask := ratecalc.RateFromBits(1_500_000)
	thr := &lludp.AgentThrottle{AgentData: lludp.AgentData{AgentID: lludp.UUID{1, 1}, SessionID: lludp.UUID{2, 1}}, Throttles: throttle.ViewerSplit(ask)}
	in := datagram(t, 3, lludp.FlagReliable, thr)
	_, out, _ := c.FromViewer(0, addr, in, t0)
	// The fair rate applies from the circuit's first datagram: before
	// any decision it is the controller's initial one, below the ask.
	if v.fair <= 0 || v.fair >= ask || string(out) == string(in) || v.rate != v.fair {
		t.Errorf("before any decision: fair %v, rate %v, ask %v, rewritten %v; want the initial fair rate in force", v.fair, v.rate, ask, string(out) != string(in))
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
	v := login(t, c, addr, 1, t0)
	establish(t, c, v, t0)
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
			ch := lludp.ChannelOf(lludp.Builtin().Lookup(h.ID))
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

// TestUseCircuitCodeNoReset: a UseCircuitCode from a viewer's endpoint
// with another circuit code, agent or session (a spoofed one, issue 34)
// is dropped and counted, and the circuit's numbering and measurement go
// on; the viewer's own resend passes and changes nothing; once the
// circuit has logged out, a new login from the endpoint starts a probe.
func TestUseCircuitCodeNoReset(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c := newTestCore(t, Config{})
	addr := viewerAddr(192, 0, 2, 1, 1)
	v := login(t, c, addr, 1, t0)
	establish(t, c, v, t0)
	for seq := uint32(2); seq <= 11; seq++ {
		c.FromRegion(v, regionDatagram(lludp.ObjectUpdateID, seq, lludp.FlagReliable, 300), t0)
	}
	var out [16]Out
	for ms := range 500 {
		c.Next(out[:], t0.Add(time.Duration(ms)*time.Millisecond))
	}
	next := v.seq.next
	use := func(code uint32, agent, session byte) []byte {
		return datagram(t, 1, lludp.FlagReliable, &lludp.UseCircuitCode{Code: code, AgentID: lludp.UUID{1, agent}, SessionID: lludp.UUID{2, session}})
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want Drop
	}{
		{"another code", use(2, 1, 1), Mismatch},
		{"another agent", use(1, 9, 1), Mismatch},
		{"another session", use(1, 1, 9), Mismatch},
		{"the viewer's own resend", use(1, 1, 1), Passed},
	} {
		if _, _, d := c.FromViewer(0, addr, tc.b, t0.Add(time.Second)); d != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, d, tc.want)
		}
		if v.est.tail-v.est.head != 10 || v.seq.next != next || v.code != 1 || c.viewers[circuitKey{0, addr}] != v {
			t.Errorf("%s: %d outstanding, next number %d (was %d), code %d: the circuit was reset", tc.name, v.est.tail-v.est.head, v.seq.next, next, v.code)
		}
	}
	if k := c.Counters(); k.Drops[Mismatch] != 3 {
		t.Errorf("%d mismatches counted, want 3", k.Drops[Mismatch])
	}
	// Logged out: the next login from the endpoint is a new circuit.
	c.FromRegion(v, regionDatagram(lludp.LogoutReplyID, 20, lludp.FlagReliable, 40), t0.Add(2*time.Second))
	if _, _, d := c.FromViewer(0, addr, use(2, 2, 2), t0.Add(2*time.Second)); d != Probing || c.viewers[circuitKey{0, addr}] != nil {
		t.Errorf("a new login after logout: %v", d)
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
	v := login(t, c, addr, 1, t0)
	first := v.seq.next
	if first == 0 || first > seqMask {
		t.Fatalf("the circuit's numbering starts at %d", first)
	}
	establish(t, c, v, t0)
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
	// The handshake took the probe's number + 1: these follow it.
	f := first + 1
	if len(got) != 3 || got[0] != f+1 || got[1] != f+2 || got[2] != f+3 {
		t.Fatalf("the viewer saw numbers %v, want %d %d %d", got, f+1, f+2, f+3)
	}
	region := func(viewer uint32) uint32 { return v.seq.region(viewer + f) }
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
		b, _ := lludp.AppendMessage(nil, lludp.Header{Flags: flags, Sequence: 7}, &lludp.PacketAck{IDs: []uint32{f + 1, f + 2}}, []uint32{f + 3})
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

// TestFairRateFromStart (issue 34, item 3): a new circuit is held at its
// controller's initial rate from its first datagram — below the
// scheduler's default, 66,747 B/s, which reflected traffic rode on — and
// a circuit that acks nothing reads as losing everything: its reliable
// datagrams are declared lost after the ack timeout, and the next
// decision brings its rate down to the clamp's floor.
func TestFairRateFromStart(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c := newTestCore(t, Config{})
	v := login(t, c, viewerAddr(192, 0, 2, 1, 1), 1, t0)
	_, total, _ := c.sched.Rates(v.sched)
	if v.fair <= 0 || v.rate != v.fair || float64(total) > float64(v.fair)*1.01 || total >= 66_747 {
		t.Fatalf("before any AgentThrottle: fair %v, in force %v, the scheduler's %d B/s; want the fair rate, under 66,747", v.fair, v.rate, total)
	}
	initial := v.fair
	// The region sends 2 s of reliable datagrams; the viewer acks none.
	var out [64]Out
	for ms := range 2000 {
		now := t0.Add(time.Duration(ms) * time.Millisecond)
		if ms%10 == 0 {
			c.FromRegion(v, regionDatagram(lludp.ObjectUpdateID, uint32(ms/10+1), lludp.FlagReliable, 300), now)
		}
		c.Next(out[:], now)
		if ms%100 == 0 {
			c.Tick(now, nil, nil)
		}
	}
	e := v.est.stats
	if e.Expired == 0 || e.Lost != e.Expired || e.Acked != 0 {
		t.Errorf("nothing acked in 2 s: %+v; want the old ones expired as lost", e)
	}
	floor := c.cfg.Control.Clamp(0)
	if v.fair > initial || v.fair != floor {
		t.Errorf("after 2 s of no acks the fair rate is %v (initial %v); want the floor %v", v.fair, initial, floor)
	}
}

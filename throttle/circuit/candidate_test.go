package circuit

import (
	"bytes"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/ratecalc"
)

// TestPromotion: a circuit is measured once its traffic goes both ways, or
// three datagrams advance one way's sequence; until then it is a
// candidate, and on promotion it has everything it carried.
func TestPromotion(t *testing.T) {
	ms := time.Millisecond
	up := func(s *script, at time.Duration, seq uint32, flags lludp.Flags) {
		s.add(at, Up, lludp.Header{Flags: flags, Sequence: seq}, &lludp.AgentUpdate{AgentData: agent})
	}
	for _, tc := range []struct {
		name            string
		build           func(s *script)
		circuit         bool
		up, down        uint64 // packets measured, if a circuit
		folded, waiting uint64 // datagrams
	}{
		{"one datagram", func(s *script) { up(s, 0, 1, 0) }, false, 0, 0, 0, 1},
		{"two in sequence", func(s *script) { up(s, 0, 1, 0); up(s, ms, 2, 0) }, false, 0, 0, 0, 2},
		{"three in sequence", func(s *script) { up(s, 0, 1, 0); up(s, ms, 2, 0); up(s, 2*ms, 4, 0) }, true, 3, 0, 0, 0},
		{"down only, mid-stream", func(s *script) { s.down(0, 70000, 0); s.down(ms, 70001, 0); s.down(2*ms, 70002, 0) }, true, 0, 3, 0, 0},
		{"an answer", func(s *script) {
			up(s, 0, 1, lludp.FlagReliable)
			s.add(ms, Down, lludp.Header{}, &lludp.PacketAck{IDs: []uint32{1}})
		}, true, 1, 1, 0, 0},
		{"resends", func(s *script) {
			up(s, 0, 1, lludp.FlagReliable)
			up(s, 5000*ms, 1, lludp.FlagReliable|lludp.FlagResent)
			up(s, 10000*ms, 1, lludp.FlagReliable|lludp.FlagResent)
		}, false, 0, 0, 1, 2},
		{"a jump too far", func(s *script) { up(s, 0, 1, 0); up(s, ms, 2, 0); up(s, 2*ms, 2+maxJump+1, 0) }, false, 0, 0, 1, 2},
		{"across the 24-bit wrap", func(s *script) { up(s, 0, 0xFFFFFE, 0); up(s, ms, 0xFFFFFF, 0); up(s, 2*ms, 1, 0) }, true, 3, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &script{t: t}
			tc.build(s)
			tr, err := track(t, pcapBytes(t, s.ds, false), Config{})
			if err != nil {
				t.Fatal(err)
			}
			_, waiting := tr.Candidates()
			if got := len(tr.Circuits()) == 1; got != tc.circuit || tr.FoldedDatagrams() != tc.folded || waiting != tc.waiting {
				t.Fatalf("circuit %v, %d datagrams folded, %d waiting; want %v, %d, %d", got, tr.FoldedDatagrams(), waiting, tc.circuit, tc.folded, tc.waiting)
			}
			if !tc.circuit {
				if tr.Circuit(Key{Viewer: viewer, Sim: sim}) != nil {
					t.Error("Circuit returns a candidate")
				}
				return
			}
			c := tr.Circuits()[0]
			if c.Candidate() || c.Stats(Up).Packets != tc.up || c.Stats(Down).Packets != tc.down {
				t.Errorf("candidate %v; up %d, down %d packets; want %d, %d", c.Candidate(), c.Stats(Up).Packets, c.Stats(Down).Packets, tc.up, tc.down)
			}
		})
	}
}

// TestPromotionReplays: what a candidate held is measured on promotion as
// if it had been a circuit all along: its ping answered by the promoting
// datagram is an RTT sample, its reliable packet acked by it an ack sample,
// its times and identity are kept.
func TestPromotionReplays(t *testing.T) {
	ms := time.Millisecond
	s := &script{t: t}
	s.add(0, Up, lludp.Header{Flags: lludp.FlagReliable, Sequence: 1}, &lludp.UseCircuitCode{Code: 7, SessionID: agent.SessionID, AgentID: agent.AgentID})
	s.add(2*ms, Up, lludp.Header{Sequence: 2}, &lludp.StartPingCheck{PingID: 3})
	s.add(10*ms, Down, lludp.Header{Sequence: 1}, &lludp.CompletePingCheck{PingID: 3})
	s.add(30*ms, Down, lludp.Header{Sequence: 2}, &lludp.PacketAck{IDs: []uint32{1}})
	var ctrl []Key
	tr, err := track(t, pcapBytes(t, s.ds, false), Config{NewController: func(k Key) ratecalc.Controller {
		ctrl = append(ctrl, k)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	cs := tr.Circuits()
	if len(cs) != 1 || len(ctrl) != 1 {
		t.Fatalf("%d circuits, %d controllers made", len(cs), len(ctrl))
	}
	c := cs[0]
	if c.RTT().Samples() != 1 || c.RTT().SRTT() != 8*ms || c.AckRTT().Samples() != 1 || c.AckRTT().Latest() != 30*ms {
		t.Errorf("rtt %v (%d), ack rtt %v (%d)", c.RTT().SRTT(), c.RTT().Samples(), c.AckRTT().Latest(), c.AckRTT().Samples())
	}
	if !c.First().Equal(t0) || !c.Last().Equal(t0.Add(30*ms)) || c.Stats(Up).Packets != 2 || c.Stats(Up).Reliable != 1 || c.UpSequence != 2 {
		t.Errorf("first %v last %v, up %+v, up sequence %d", c.First(), c.Last(), c.Stats(Up), c.UpSequence)
	}
	if c.AgentID != agent.AgentID || c.CircuitCode != 7 || c.IdentityDatagrams != 1 || !c.IdentitySince.Equal(t0) {
		t.Errorf("identity %+v, %d datagrams since %v", c.Identity, c.IdentityDatagrams, c.IdentitySince)
	}
}

// TestIdentityEvidence: the IDs are counted by the datagrams that carried
// them; other IDs are counted as conflicts, and restart the count unless an
// AgentThrottle carried them.
func TestIdentityEvidence(t *testing.T) {
	other := lludp.AgentData{AgentID: lludp.UUID{7}, SessionID: lludp.UUID{8}}
	ms := time.Millisecond
	s := &script{t: t}
	s.add(0, Up, lludp.Header{Sequence: 1}, &lludp.AgentThrottle{}) // no IDs: nothing to count
	s.add(ms, Up, lludp.Header{Sequence: 2}, &lludp.UseCircuitCode{Code: 1, SessionID: agent.SessionID, AgentID: agent.AgentID})
	s.down(2*ms, 1, 0)
	for i := range 3 {
		s.add(time.Duration(3+i)*ms, Up, lludp.Header{Sequence: uint32(3 + i)}, &lludp.AgentUpdate{AgentData: agent})
	}
	s.add(10*ms, Up, lludp.Header{Sequence: 6}, &lludp.AgentThrottle{AgentData: other})
	tr, err := track(t, pcapBytes(t, s.ds, false), Config{})
	if err != nil {
		t.Fatal(err)
	}
	c := tr.Circuits()[0]
	if c.AgentID != agent.AgentID || c.IdentityDatagrams != 4 || c.IdentityConflicts != 1 || !c.IdentitySince.Equal(t0.Add(ms)) || !c.ViewerThrottleAt.Equal(t0) {
		t.Errorf("after the foreign AgentThrottle: %+v, %d datagrams since %v, %d conflicts, throttle at %v", c.Identity, c.IdentityDatagrams, c.IdentitySince, c.IdentityConflicts, c.ViewerThrottleAt)
	}
	s.ds = s.ds[:0]
	s.add(20*ms, Up, lludp.Header{Sequence: 7}, &lludp.AgentUpdate{AgentData: other})
	s.add(21*ms, Up, lludp.Header{Sequence: 8}, &lludp.AgentUpdate{AgentData: other})
	r, err := capture.NewReader(bytes.NewReader(pcapBytes(t, s.ds, false)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := trackWith(tr, r); err != nil {
		t.Fatal(err)
	}
	if c.AgentID != other.AgentID || c.IdentityDatagrams != 2 || c.IdentityConflicts != 2 || !c.IdentitySince.Equal(t0.Add(20*ms)) {
		t.Errorf("after the other IDs: %+v, %d datagrams since %v, %d conflicts", c.Identity, c.IdentityDatagrams, c.IdentitySince, c.IdentityConflicts)
	}
}

// TestMaxCircuits: beyond MaxCircuits, a new circuit evicts the least
// recently active circuit of unknown identity, else the least recently
// active; the owner hears of each.
func TestMaxCircuits(t *testing.T) {
	var evicted []Key
	tr := NewTracker(Config{MaxCircuits: 3, OnEvict: func(k Key) { evicted = append(evicted, k) }})
	at := t0
	key := func(i int) Key {
		return Key{Viewer: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}), 50000), Sim: sim}
	}
	var seq [10]uint32
	send := func(i int, m lludp.Typed) {
		t.Helper()
		seq[i]++
		b, err := lludp.AppendMessage(nil, lludp.Header{Sequence: seq[i]}, m, nil)
		if err != nil {
			t.Fatal(err)
		}
		at = at.Add(time.Millisecond)
		if _, _, err := tr.Observe(capture.Datagram{At: at, Src: key(i).Viewer, Dst: sim, Payload: b}); err != nil {
			t.Fatal(err)
		}
	}
	open := func(i int, identified bool) { // three datagrams: a circuit
		for range 3 {
			if identified {
				send(i, &lludp.AgentUpdate{AgentData: lludp.AgentData{AgentID: lludp.UUID{byte(i)}, SessionID: lludp.UUID{byte(i)}}})
			} else {
				send(i, &lludp.StartPingCheck{})
			}
		}
	}
	keys := func() []Key {
		var ks []Key
		for _, c := range tr.Circuits() {
			ks = append(ks, c.Key)
		}
		return ks
	}
	for _, step := range []struct {
		do      func()
		want    []int // circuits, in order of appearance
		evicted []int
	}{
		{func() { open(1, true); open(2, false); open(3, true) }, []int{1, 2, 3}, nil},
		{func() { open(4, true) }, []int{1, 3, 4}, []int{2}},                    // the unidentified one, though 1 is older
		{func() { send(1, &lludp.StartPingCheck{}) }, []int{1, 3, 4}, []int{2}}, // 1 is now the latest active
		{func() { open(5, false) }, []int{1, 4, 5}, []int{2, 3}},                // all identified: the least recently active
		{func() { open(6, true) }, []int{1, 4, 6}, []int{2, 3, 5}},              // the unidentified newcomer goes first
	} {
		step.do()
		var want, wantEvicted []Key
		for _, i := range step.want {
			want = append(want, key(i))
		}
		for _, i := range step.evicted {
			wantEvicted = append(wantEvicted, key(i))
		}
		if got := keys(); !slices.Equal(got, want) || !slices.Equal(evicted, wantEvicted) || tr.Evicted() != uint64(len(wantEvicted)) {
			t.Fatalf("circuits %v, evicted %v (%d); want %v, %v", got, evicted, tr.Evicted(), want, wantEvicted)
		}
		for _, k := range wantEvicted {
			if tr.Circuit(k) != nil {
				t.Errorf("%v evicted but still found", k)
			}
		}
	}
}

// TestForgetCandidates: Forget removes idle circuits and folds idle
// candidates.
func TestForgetCandidates(t *testing.T) {
	ms := time.Millisecond
	s := &script{t: t}
	s.down(0, 1, 0)
	s.down(ms, 2, 0)
	s.down(2*ms, 3, 0)
	other := netip.MustParseAddrPort("192.0.2.11:50000")
	b, _ := lludp.AppendMessage(nil, lludp.Header{Sequence: 1}, &lludp.StartPingCheck{}, nil)
	s.ds = append(s.ds, dgram{10 * ms, other, sim, b})
	tr, err := track(t, pcapBytes(t, s.ds, false), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if n := tr.Forget(t0.Add(5 * ms)); n != 1 || len(tr.Circuits()) != 0 || tr.Folded() != 0 {
		t.Errorf("forgot %d, %d left, %d folded: want the circuit gone, the candidate kept", n, len(tr.Circuits()), tr.Folded())
	}
	if n := tr.Forget(t0.Add(20 * ms)); n != 0 || tr.Folded() != 1 || tr.FoldedDatagrams() != 1 {
		t.Errorf("forgot %d, %d folded (%d datagrams): want the candidate folded", n, tr.Folded(), tr.FoldedDatagrams())
	}
	if e, d := tr.Candidates(); e != 0 || d != 0 {
		t.Errorf("%d candidates (%d datagrams) left", e, d)
	}
}

// TestCircuitOrder: circuits are listed in the order they appeared, not
// the order they were promoted in.
func TestCircuitOrder(t *testing.T) {
	ms := time.Millisecond
	other := netip.MustParseAddrPort("192.0.2.11:50000")
	s := &script{t: t}
	s.add(0, Up, lludp.Header{Sequence: 1}, &lludp.StartPingCheck{}) // the first to appear
	for i := range 3 {
		b, _ := lludp.AppendMessage(nil, lludp.Header{Sequence: uint32(i + 1)}, &lludp.StartPingCheck{}, nil)
		s.ds = append(s.ds, dgram{time.Duration(1+i) * ms, other, sim, b}) // the first promoted
	}
	s.down(10*ms, 1, 0)
	tr, err := track(t, pcapBytes(t, s.ds, false), Config{})
	if err != nil {
		t.Fatal(err)
	}
	cs := tr.Circuits()
	if len(cs) != 2 || cs[0].Key.Viewer != viewer || cs[1].Key.Viewer != other {
		var ks []Key
		for _, c := range cs {
			ks = append(ks, c.Key)
		}
		t.Errorf("circuits %v, want %v first", ks, viewer)
	}
}

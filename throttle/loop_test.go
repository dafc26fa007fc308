package throttle

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/ratecalc"
)

var (
	viewerEP = netip.MustParseAddrPort("10.0.0.2:50000")
	simEP    = netip.MustParseAddrPort("10.0.0.1:9000")
	agent    = lludp.AgentData{AgentID: lludp.UUID{1}, SessionID: lludp.UUID{2}}
	t0       = time.Unix(1_700_000_000, 0)
)

// feed is a scripted circuit for the loop.
type feed struct {
	t        *testing.T
	l        *Loop
	up, down uint32
}

func (f *feed) send(at time.Duration, up bool, flags lludp.Flags, m lludp.Typed) bool {
	seq := &f.down
	src, dst := simEP, viewerEP
	if up {
		seq, src, dst = &f.up, viewerEP, simEP
	}
	*seq++
	b, err := lludp.AppendMessage(nil, lludp.Header{Flags: flags, Sequence: *seq}, m, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	return f.l.Observe(lludp.Datagram{At: t0.Add(at), Src: src, Dst: dst, Payload: b})
}

// agentUpdates sends n AgentUpdates, 100 ms apart from at, as a viewer
// does once in a region: they carry its IDs (see IdentityDatagrams).
func (f *feed) agentUpdates(at time.Duration, n int) {
	for i := range n {
		f.send(at+time.Duration(i)*100*time.Millisecond, true, lludp.FlagZeroCoded, &lludp.AgentUpdate{AgentData: agent})
	}
}

// stream sends n simulator packets of 1000 bytes from at, every 10 ms.
func (f *feed) stream(at time.Duration, n int) {
	for i := range n {
		f.send(at+time.Duration(i)*10*time.Millisecond, false, lludp.FlagReliable, &lludp.ImagePacket{Data: make([]byte, 970)})
	}
}

func TestLoopDecisions(t *testing.T) {
	l, err := New(Config{Sims: []netip.AddrPort{simEP}, MinChange: new(0.05), ResendEvery: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &feed{t: t, l: l}
	// Before the IDs are known: measured, nothing requested.
	f.stream(0, 100)
	if rs := l.Tick(t0.Add(5 * time.Second)); len(rs) != 0 || l.Stats().Waiting != 1 {
		t.Fatalf("requests before the IDs were known: %v", rs)
	}
	f.send(5*time.Second, true, lludp.FlagReliable|lludp.FlagZeroCoded, &lludp.AgentThrottle{AgentData: agent, CircuitCode: 9, Throttles: ViewerSplit(ratecalc.RateFromBits(1536000))})
	f.agentUpdates(5*time.Second, IdentityDatagrams-1)
	f.stream(5*time.Second, 300)
	rs := l.Tick(t0.Add(10 * time.Second))
	if len(rs) != 1 {
		t.Fatalf("got %d requests", len(rs))
	}
	r := rs[0]
	if r.Agent != agent || r.Sequence != f.up || r.Reason != Changed || r.Total < l.cfg.Min || r.Total > l.cfg.Max {
		t.Errorf("request %+v", r)
	}
	var sum float32
	for _, v := range r.Throttles {
		sum += v
	}
	if d := float64(sum)/r.Total.BitsPerSecond() - 1; d > 0.001 || d < -0.001 {
		t.Errorf("the split sums to %v bit/s for a %v request", sum, r.Total)
	}
	wire, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	var p lludp.Packet
	var back lludp.AgentThrottle
	if p.DecodeFromBytes(wire) != nil || p.Unmarshal(&back) != nil || p.Flags.Reliable() || p.Sequence != f.up || back.AgentData != agent {
		t.Errorf("encoded request: flags %v seq %d, %+v", p.Flags, p.Sequence, back)
	}

	// The loop's own injection, seen in the capture: not the viewer's.
	if f.send(10*time.Second+time.Millisecond, true, lludp.FlagZeroCoded, &lludp.AgentThrottle{AgentData: agent, Throttles: r.Throttles}) {
		t.Error("the loop's own AgentThrottle was taken for the viewer's")
	}
	// The viewer's own: re-asserted at once with its newest sequence number.
	if !f.send(11*time.Second, true, lludp.FlagReliable|lludp.FlagZeroCoded, &lludp.AgentThrottle{AgentData: agent, Throttles: ViewerSplit(ratecalc.RateFromBits(4608000))}) {
		t.Fatal("the viewer's AgentThrottle did not call for a re-assertion")
	}
	again := l.Reassert()
	if len(again) != 1 || again[0].Total != r.Total || again[0].Reason != Reassert || again[0].Sequence != f.up {
		t.Errorf("re-assertion %+v", again)
	}
	if len(l.Reassert()) != 0 {
		t.Error("re-asserted twice")
	}
}

// TestLoopHysteresis: an unchanged rate is not re-sent until ResendEvery
// intervals have passed.
func TestLoopHysteresis(t *testing.T) {
	// A fixed split: the total's hysteresis alone (the demand's split
	// moves from the viewer's proportions at the second decision).
	l, _ := New(Config{Controller: "viewer", Sims: []netip.AddrPort{simEP}, ResendEvery: 3, FixedSplit: true}, nil)
	f := &feed{t: t, l: l}
	f.send(0, true, lludp.FlagReliable, &lludp.UseCircuitCode{Code: 1, SessionID: agent.SessionID, AgentID: agent.AgentID})
	f.agentUpdates(0, IdentityDatagrams-1)
	var reasons []Reason
	for k := 1; k <= 7; k++ {
		f.stream(time.Duration(k-1)*5*time.Second, 100) // loss-free: the viewer rule sits at its 1.5 cap
		for _, r := range l.Tick(t0.Add(time.Duration(k) * 5 * time.Second)) {
			reasons = append(reasons, r.Reason)
		}
	}
	want := []Reason{Changed, Refresh, Refresh}
	if len(reasons) != len(want) {
		t.Fatalf("reasons %v, want %v", reasons, want)
	}
	for i := range want {
		if reasons[i] != want[i] {
			t.Errorf("reasons %v, want %v", reasons, want)
		}
	}
}

// TestLoopMinChangeZero: MinChange 0 sends a rate that moved by 1 %,
// which the default (nil, 5 %) holds back; an unchanged rate waits for
// the refresh with either. The rate is moved by the floor, above the
// viewer rule's loss-free cap.
func TestLoopMinChangeZero(t *testing.T) {
	for _, tc := range []struct {
		name      string
		minChange *float64
		want      []Reason // at the three ticks: the first, after a 1 % move, unchanged
	}{
		{"default", nil, []Reason{Changed}},
		{"zero", new(0.0), []Reason{Changed, Changed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Controller: "viewer", Sims: []netip.AddrPort{simEP}, Floor: ratecalc.RateFromBits(3_000_000), MinChange: tc.minChange, ResendEvery: 10, FixedSplit: true}
			l, err := New(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			f := &feed{t: t, l: l}
			f.send(0, true, lludp.FlagReliable, &lludp.UseCircuitCode{Code: 1, SessionID: agent.SessionID, AgentID: agent.AgentID})
			f.agentUpdates(0, IdentityDatagrams-1)
			var reasons []Reason
			var totals []float64
			for k := 1; k <= 3; k++ {
				if k == 2 {
					cfg.Floor = ratecalc.RateFromBits(3_030_000)
					if _, err := l.Reconfigure(cfg); err != nil {
						t.Fatal(err)
					}
				}
				f.stream(time.Duration(k-1)*5*time.Second, 100)
				for _, r := range l.Tick(t0.Add(time.Duration(k) * 5 * time.Second)) {
					reasons, totals = append(reasons, r.Reason), append(totals, r.Total.BitsPerSecond())
				}
			}
			if !slices.Equal(reasons, tc.want) {
				t.Errorf("reasons %v (totals %v bit/s), want %v", reasons, totals, tc.want)
			}
		})
	}
}

func TestLoopConfig(t *testing.T) {
	for _, cfg := range []Config{{Controller: "cubic"}, {Segment: "1460"}, {Interval: time.Millisecond}, {Min: 10, Max: 5}, {MinChange: new(2.0)}, {Floor: -1}} {
		if _, err := New(cfg, nil); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
}

// TestRootOnly: with RootOnly, only the circuit the agent arrived in last
// gets requests; its neighbour is measured but left alone.
func TestRootOnly(t *testing.T) {
	neighbour := netip.MustParseAddrPort("10.0.0.3:9001")
	l, _ := New(Config{Sims: []netip.AddrPort{simEP, neighbour}, RootOnly: true}, nil)
	f := &feed{t: t, l: l}
	f.send(0, true, lludp.FlagReliable, &lludp.UseCircuitCode{Code: 1, SessionID: agent.SessionID, AgentID: agent.AgentID})
	f.send(time.Millisecond, true, lludp.FlagReliable, &lludp.CompleteAgentMovement{AgentData: agent, CircuitCode: 1})
	f.agentUpdates(time.Millisecond, IdentityDatagrams-2)
	// The neighbour: a circuit opened with UseCircuitCode only.
	b, _ := lludp.AppendMessage(nil, lludp.Header{Flags: lludp.FlagReliable, Sequence: 1}, &lludp.UseCircuitCode{Code: 1, SessionID: agent.SessionID, AgentID: agent.AgentID}, nil)
	l.Observe(lludp.Datagram{At: t0, Src: viewerEP, Dst: neighbour, Payload: b})
	f.stream(0, 100)
	rs := l.Tick(t0.Add(5 * time.Second))
	if len(rs) != 1 || rs[0].Circuit.Sim != simEP {
		t.Errorf("requests %+v, want one, to the root region", rs)
	}
}

// TestReasonText: every reason's name parses back to it, logs and JSON
// read the name, and anything else is refused with the names listed.
func TestReasonText(t *testing.T) {
	for _, r := range []Reason{Changed, Refresh, Reassert} {
		b, err := r.MarshalText()
		var back Reason
		if err != nil || back.UnmarshalText(b) != nil || back != r || string(b) != r.String() {
			t.Errorf("%v: marshalled %q (%v), back %v", r, b, err, back)
		}
	}
	for _, bad := range []string{"", "Changed", "reasserted", "0"} {
		var r Reason
		if err := r.UnmarshalText([]byte(bad)); err == nil || !strings.Contains(err.Error(), "want changed, refresh or reassert") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if _, err := Reason(0).MarshalText(); err == nil {
		t.Error("the zero Reason marshalled")
	}
	if got := Reason(9).String(); got != "reason(9)" {
		t.Errorf("Reason(9) = %q", got)
	}
}

package proxy

import (
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/circuit"
)

// TestProxyKeepsViewerLimit (issue 33): a viewer asking for 500 kbit/s
// through the proxy, on a loss-free path where one share is far more,
// gets requests of at most 500 kbit/s, although the proxy rewrites its
// AgentThrottle to fairgrid's request; the viewer's own request stays
// known as such.
func TestProxyKeepsViewerLimit(t *testing.T) {
	const asked = 500_000 // bit/s
	r := newProxyRig(t, 100*time.Millisecond)
	r.up(t, &lludp.UseCircuitCode{Code: 9, SessionID: rigAgent.SessionID, AgentID: rigAgent.AgentID}, lludp.FlagReliable)
	for range throttle.IdentityDatagrams {
		r.up(t, &lludp.AgentUpdate{AgentData: rigAgent, Far: 64}, 0)
	}
	relay := r.lastFrom
	key := circuit.Key{Viewer: relay, Sim: r.simAt}
	var seq uint32
	down := func(n int) {
		for range n {
			seq++
			b, err := lludp.AppendMessage(nil, lludp.Header{Flags: lludp.FlagReliable, Sequence: seq}, &lludp.ImagePacket{Data: make([]byte, 970)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.sim.WriteToUDPAddrPort(b, relay); err != nil {
				t.Fatal(err)
			}
		}
	}
	down(50)
	// The first request: after it the viewer's AgentThrottle is rewritten.
	for {
		var p lludp.Packet
		if p.DecodeFromBytes(r.read(t)) == nil && p.ID == lludp.AgentThrottleID {
			break
		}
	}
	r.up(t, &lludp.AgentThrottle{AgentData: rigAgent, CircuitCode: 9, Throttles: lludp.ViewerSplit(asked)}, lludp.FlagReliable|lludp.FlagZeroCoded)
	if r.p.rewritten.Load() != 1 {
		t.Fatalf("%d AgentThrottles rewritten, want the viewer's", r.p.rewritten.Load())
	}
	// Loss-free traffic until one share is well above what the viewer
	// asked: every request the simulator gets from then on stays at or
	// below it. The simulator's reads wait for the requests (the read
	// deadline fails the test if none comes).
	checked := 0
	for checked < 3 {
		down(50)
		b := r.read(t)
		var p lludp.Packet
		var m lludp.AgentThrottle
		if p.DecodeFromBytes(b) != nil || p.ID != lludp.AgentThrottleID || p.Unmarshal(&m) != nil {
			continue
		}
		req, _ := r.loop.Request(key)
		if req.Decided <= ratecalc.RateFromBits(1.2*asked) {
			continue
		}
		checked++
		if got := m.Total(); got > asked*1.0001 || req.Total > ratecalc.RateFromBits(asked*1.0001) {
			t.Errorf("the simulator got a request for %.0f bit/s (decided %v, one share %v) for a viewer that asked %d", got, req.Total, req.Decided, asked)
		}
		if req.ViewerAsked != ratecalc.RateFromBits(asked) {
			t.Errorf("the viewer's request reads %v, want %d bit/s", req.ViewerAsked, asked)
		}
	}
}

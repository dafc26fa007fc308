package render

import (
	"testing"

	"github.com/fairgrid/fairgrid/internal/audit"
)

// TestOneLegPerAgent: of a relay's two legs the figures over time keep the
// one that lost (the viewer's side of the bottleneck); a viewer's circuits
// to two regions, and an agent's later session, are all kept.
func TestOneLegPerAgent(t *testing.T) {
	c := func(viewer, sim string, start int64, lossEvents int64) *audit.Circuit {
		return &audit.Circuit{Circuit: viewer + " > " + sim, AgentID: "a", Viewer: viewer, Sim: sim, StartUnixMs: start, DurationS: 60, LossEvents: lossEvents}
	}
	before := c("127.0.0.1:9101", "127.0.0.1:9000", 0, 0)  // relay → simulator: before the losses
	after := c("127.0.0.1:50000", "127.0.0.1:9100", 0, 12) // viewer ← relay: what the viewer received
	neighbour := c("127.0.0.1:50000", "127.0.0.1:9001", 0, 3)
	later := c("127.0.0.1:50001", "127.0.0.1:9002", 120_000, 0)
	for _, tc := range []struct {
		name string
		in   []*audit.Circuit
		want []*audit.Circuit
	}{
		{"relay legs", []*audit.Circuit{before, after}, []*audit.Circuit{after}},
		{"neighbouring regions", []*audit.Circuit{after, neighbour}, []*audit.Circuit{after, neighbour}},
		{"a later session", []*audit.Circuit{before, later}, []*audit.Circuit{before, later}},
	} {
		got := oneLegPerAgent(tc.in)
		if len(got) != len(tc.want) {
			t.Errorf("%s: kept %d, want %d", tc.name, len(got), len(tc.want))
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: kept %s, want %s", tc.name, got[i].Circuit, tc.want[i].Circuit)
			}
		}
	}
}

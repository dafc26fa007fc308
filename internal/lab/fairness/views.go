package fairness

import (
	"strings"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
)

// The rig's views: `fairgrid lab gateway` (internal/lab/gatewaylab) and
// the demo (internal/lab/demo) run cells of this rig with a product seat
// and render their own reports from its Result, adjusting the seat
// (Options.SeatConfig: what its viewer asks for, its front-end's
// controller, their hooks) and reading it as it runs (Options.OnSeat:
// the gateway's circuit, the sidecar's loop).

// seatQueueDelay is a product seat's root circuit's queueing delay
// towards its viewer in d, mean and 95th percentile, ms: its first
// circuit's flow at the bottleneck that is not a neighbour's (the
// root's relay has no name: link.Config.Name).
func seatQueueDelay(d link.BottleneckStats) (mean, p95 float64) {
	for _, f := range d.Flows {
		if isSeatCircuit(f.Name) && !strings.Contains(f.Name, " neighbour ") {
			ms := func(x time.Duration) float64 { return float64(x) / float64(time.Millisecond) }
			return ms(f.QueueDelay.Mean()), ms(f.QueueDelay.Quantile(0.95))
		}
	}
	return 0, 0
}

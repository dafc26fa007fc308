package demand

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/fairgrid/fairgrid/ratecalc"
)

// TestSidecarAndGatewayAgree (issue 33, item 5): on one path (3 % loss,
// 40 ms each way), the sidecar, measuring at the viewer, and the gateway,
// measuring at the region's side, decide rates within 25 % of each other
// (the mean of their controller's rate each second over 40 s) where the
// region sends more than one share (flying). With terrain alone, at 0.08
// of one share, a rate is only a bound the stream never reaches, and
// wanders with the loss events (0.93–2.02 of each other over six runs):
// there each keeps at least twice what arrives, where the issue saw
// 389 kbit/s at the gateway against 1,085 at the sidecar, and both
// collapsing, on a real OpenSim's terrain.
func TestSidecarAndGatewayAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("real time on loopback: 50 s (-short)")
	}
	t.Parallel()
	path := link.PipeConfig{Delay: 40 * time.Millisecond, Loss: 0.03}
	activities := []region.Activity{region.Flying, region.Terrain}
	fronts := []FrontEnd{Sidecar, Gateway}
	type key struct {
		a region.Activity
		f FrontEnd
	}
	results := map[key]chan Result{}
	for _, a := range activities {
		for _, f := range fronts {
			ch := make(chan Result, 1)
			results[key{a, f}] = ch
			go func() {
				r, err := Run(context.Background(), Config{FrontEnd: f, Activity: a, Path: path, Interval: time.Second,
					ViewerAsks: ratecalc.RateFromBits(5_120_000), Warmup: 10 * time.Second, Duration: 40 * time.Second, Seed: 11}, nil)
				if err != nil {
					t.Errorf("%v, %v: %v", a, f, err)
				}
				ch <- r
			}()
		}
	}
	for _, a := range activities {
		side, gw := <-results[key{a, Sidecar}], <-results[key{a, Gateway}]
		ratio := gw.ControllerBPS / side.ControllerBPS
		t.Logf("%v: the sidecar's controller %.0f bit/s, the gateway's %.0f: %.2f (received %.0f and %.0f)", a, side.ControllerBPS, gw.ControllerBPS, ratio, side.ReceivedBPS, gw.ReceivedBPS)
		switch {
		case a == region.Flying && !(math.Abs(math.Log(ratio)) <= math.Log(1.25)):
			t.Errorf("%v: the gateway decides %.2f of the sidecar's rate on the same path, want within 25 %%", a, ratio)
		case a == region.Terrain && (side.ControllerBPS < 1.9*side.ReceivedBPS || gw.ControllerBPS < 1.9*gw.ReceivedBPS):
			t.Errorf("%v: a controller under twice what arrived", a)
		}
	}
}

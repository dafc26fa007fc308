package demand

import (
	"context"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/fairgrid/fairgrid/ratecalc"
)

// TestNeverSlowerWithRoom (issue 33): a region with OpenSim's non-lending
// category buckets sends each application-limited workload, below one
// share, over a path with 3 % loss and 40 ms each way. Through the
// sidecar, the proxy and the gateway the viewer receives at least 0.95 of what
// it receives with no fairgrid, in the same run, counting what was new to
// it (GoodputBPS: the stock viewer's larger Resend rate brings it more
// duplicates). Decisions every second
// (the product's 5 s would make the run five times as long): 40 of them,
// where the collapse on a real OpenSim took 12.
func TestNeverSlowerWithRoom(t *testing.T) {
	if testing.Short() {
		t.Skip("real time on loopback: 50 s a run (-short)")
	}
	t.Parallel() // beside TestSidecarAndGatewayAgree: both wait on the clock
	path := link.PipeConfig{Delay: 40 * time.Millisecond, Loss: 0.03}
	share := ratecalc.TCPShareRate(ratecalc.NominalSegmentSize, 2*path.Delay, path.Loss).BitsPerSecond()
	type key struct {
		a region.Activity
		f FrontEnd
	}
	results := map[key]chan Result{}
	workloads := []region.Activity{region.Terrain, region.Objects, region.Avatars}
	for _, a := range workloads {
		for _, f := range FrontEnds {
			results[key{a, f}] = make(chan Result, 1)
		}
	}
	// Every run at once, in one wall-clock time: they wait on the clock
	// far more than they compute (t.Parallel would hold them to
	// GOMAXPROCS at a time).
	for k, ch := range results {
		go func() {
			r, err := Run(context.Background(), Config{FrontEnd: k.f, Activity: k.a, Path: path, Interval: time.Second,
				Warmup: 10 * time.Second, Duration: 40 * time.Second, Seed: 7}, nil)
			if err != nil {
				t.Errorf("%v, %v: %v", k.a, k.f, err)
			}
			ch <- r
		}()
	}
	for _, a := range workloads {
		stock := <-results[key{a, Stock}]
		if stock.DemandBPS >= share {
			t.Fatalf("%v: demand %.0f bit/s is not below one share %.0f: the case tests nothing", a, stock.DemandBPS, share)
		}
		for _, f := range FrontEnds[1:] {
			r := <-results[key{a, f}]
			ratio := r.GoodputBPS / stock.GoodputBPS
			var lowest float64
			for i, q := range r.Requests {
				if i == 0 || q.Total.BitsPerSecond() < lowest {
					lowest = q.Total.BitsPerSecond()
				}
			}
			t.Logf("%v (demand %.0f bit/s, %.2f of one share): %v received %.0f bit/s (%.0f new), stock %.0f (%.0f): %.3f; %d requests, the lowest %.0f bit/s",
				a, r.DemandBPS, r.DemandBPS/share, f, r.ReceivedBPS, r.GoodputBPS, stock.ReceivedBPS, stock.GoodputBPS, ratio, len(r.Requests), lowest)
			if f != Gateway && len(r.Requests) == 0 {
				t.Errorf("%v, %v: fairgrid sent no request in the measured part: the run tests nothing", a, f)
			}
			if ratio < 0.95 {
				t.Errorf("%v, %v: received %.3f of what the stock viewer received", a, f, ratio)
			}
		}
	}
}

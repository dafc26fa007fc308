package demand

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/fairgrid/fairgrid/ratecalc"
)

// TestBesideTCP (issue 33): the region has more to send than one share
// (flying: every category busy) and the viewer asks for OpenSim's
// largest request, 5,120 kbit/s; one bulk download of gVisor's CUBIC
// shares the bottleneck. Two cells, three seeds each, every front-end:
//
//   - the lab's centre cell (6 Mbit/s, 80 ms, 100 packets), where one
//     share is about 3 Mbit/s: OpenSim's 50-unacked stall (the region's
//     ackStall, protocol.md §8.5) holds every viewer, stock or not, near
//     50 datagrams per round trip and ack delay, far below it. fairgrid
//     must then not cut the viewer further: through each front-end it
//     takes at least 0.9 of what the stock viewer takes, pooled;
//   - TestShares' cell (2 Mbit/s, 40 ms, 30 packets), below the stall's
//     ceiling, where the seat's share of the TCP flow's bytes is reported
//     beside the stock viewer's (the 0.8–1.25 band is issue 36's goal for
//     the product path; docs/opensim.md gives the figures).
//
// About 70 s of real time with 18 TCP flows at once, beyond make test's
// budget for the lab's real-time step: FAIRGRID_LONG_LAB=1 runs it.
func TestBesideTCP(t *testing.T) {
	if os.Getenv("FAIRGRID_LONG_LAB") == "" {
		t.Skip("70 s of real TCP beside the product's front-ends: set FAIRGRID_LONG_LAB=1")
	}
	type cellCfg struct {
		name   string
		bps    int64
		oneWay time.Duration
		buffer int
	}
	cells := []cellCfg{{"centre", 6_000_000, 40 * time.Millisecond, 100}, {"2 Mbit/s", 2_000_000, 20 * time.Millisecond, 30}}
	fronts := []FrontEnd{Stock, Sidecar, Proxy}
	seeds := []uint64{1, 2, 3}
	type key struct {
		cell string
		f    FrontEnd
	}
	type out struct {
		k key
		r Result
	}
	ch := make(chan out, len(cells)*len(fronts)*len(seeds))
	for _, c := range cells {
		for _, f := range fronts {
			for _, seed := range seeds {
				go func() {
					b := &link.BottleneckConfig{Seed: seed,
						Down: link.PipeConfig{Rate: c.bps / 8, Delay: c.oneWay, Buffer: c.buffer},
						Up:   link.PipeConfig{Rate: c.bps / 8, Delay: c.oneWay, Buffer: 1000}}
					r, err := Run(context.Background(), Config{FrontEnd: f, Activity: region.Flying, Bottleneck: b, Interval: time.Second,
						ViewerAsks: ratecalc.RateFromBits(5_120_000), Warmup: 30 * time.Second, Duration: 40 * time.Second, Seed: seed}, nil)
					if err != nil {
						t.Errorf("%s, %v, seed %d: %v", c.name, f, seed, err)
					}
					ch <- out{key{c.name, f}, r}
				}()
			}
		}
	}
	viewer, tcp := map[key]float64{}, map[key]float64{}
	for range cap(ch) {
		o := <-ch
		viewer[o.k] += o.r.ReceivedBPS / float64(len(seeds))
		tcp[o.k] += o.r.TCPBPS / float64(len(seeds))
	}
	for _, c := range cells {
		stock := viewer[key{c.name, Stock}]
		for _, f := range fronts {
			k := key{c.name, f}
			t.Logf("%s, %v: the viewer %.0f bit/s, the TCP flow %.0f: %.2f of it; %.2f of the stock viewer's", c.name, f, viewer[k], tcp[k], viewer[k]/tcp[k], viewer[k]/stock)
			if c.name == "centre" && f != Stock && viewer[k] < 0.9*stock {
				t.Errorf("centre, %v: the viewer took %.2f of what the stock viewer took, held by the region's stall below one share", f, viewer[k]/stock)
			}
		}
	}
}

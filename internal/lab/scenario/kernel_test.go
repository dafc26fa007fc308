package scenario

import (
	"context"
	"testing"

	"github.com/fairgrid/fairgrid/internal/lab/kerneltcp"
)

// TestCoexistenceKernel: Linux's reno, cubic and bbr (kerneltcp, as root)
// beside the stock viewer on the seed study's link with 200-packet
// buffers: each flow moves data, and the loss-based ones add several
// hundred milliseconds to the viewer's uplink (at least 300 ms: the seed
// study's "nearly 300 ms").
func TestCoexistenceKernel(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time runs: skipped with -short")
	}
	if err := kerneltcp.Supported(); err != nil {
		t.Skipf("Linux TCP in network namespaces needs root, /dev/net/tun and iproute2 (CI runs as root): %v", err)
	}
	t.Parallel()
	o := Options{Seed: 1, Parallel: 3}.withDefaults()
	jobs := kernelCoexistenceJobs(o, labRun, []int{seedLarge})
	runs, err := runAll(context.Background(), o, jobs)
	if err != nil {
		t.Fatal(err)
	}
	skipJudgingUnderRace(t)
	for _, r := range runs {
		m := r.Measurement
		v := m.Viewer
		t.Logf("%s: viewer %.0f kbit/s, added delay up %.0f ms, down %.0f ms; up %.0f, down %.0f kbit/s", r.Name,
			v.Down.ThroughputBPS/1000, v.Up.QueueDelayMeanMs, v.Down.QueueDelayMeanMs, m.TCP[0].GoodputBPS/1000, m.TCP[1].GoodputBPS/1000)
		for _, f := range m.TCP {
			if f.GoodputBPS <= 0 {
				t.Errorf("%s: %s moved nothing", r.Name, f.Name)
			}
		}
		if m.TCP[0].CC != "linux bbr" && v.Up.QueueDelayMeanMs < 300 {
			t.Errorf("%s: the viewer's uplink waited %.0f ms on average, want at least 300 ms", r.Name, v.Up.QueueDelayMeanMs)
		}
	}
}

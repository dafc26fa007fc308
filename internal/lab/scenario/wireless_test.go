package scenario

import (
	"context"
	"testing"

	"github.com/fairgrid/fairgrid/ratecalc"
)

// TestWirelessFloor: with fairgrid's QoS floor of 512 kbit/s, the viewer
// receives at least 85 % of it beside three CUBIC downloads, with the
// smallest and a large access-point buffer (the rest of the floor's
// requests is lost to the full queue: drop-tail spares no flow).
func TestWirelessFloor(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time runs: skipped with -short")
	}
	t.Parallel()
	o := Options{Seed: 1, Parallel: 2}.withDefaults()
	runs, err := runAll(context.Background(), o, wirelessJobs(o, labRun, []int{37, 256}, []ratecalc.Rate{wirelessFloor}))
	if err != nil {
		t.Fatal(err)
	}
	skipJudgingUnderRace(t)
	for _, r := range runs {
		v := r.Measurement.Viewer
		got := v.Down.ThroughputBPS / wirelessFloor.BitsPerSecond()
		t.Logf("%s: viewer %.0f kbit/s (%.2f× the floor), delay %.0f ms, TCP %.0f / %.0f / %.0f kbit/s", r.Name, v.Down.ThroughputBPS/1000, got,
			v.Down.QueueDelayMeanMs, r.Measurement.TCP[0].GoodputBPS/1000, r.Measurement.TCP[1].GoodputBPS/1000, r.Measurement.TCP[2].GoodputBPS/1000)
		if got < 0.85 {
			t.Errorf("%s: the viewer received %.2f× its floor, want at least 0.85×", r.Name, got)
		}
	}
}

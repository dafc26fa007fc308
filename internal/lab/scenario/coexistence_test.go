package scenario

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// labRun is a reduced run's measured part: the scenarios' qualitative
// results show within it, and the package's tests, which run their runs
// side by side, stay near a minute of wall clock.
const labRun = 15 * time.Second

// TestCoexistenceBufferDelay: with loss-based TCP (gVisor's Reno and
// CUBIC) filling the queues, the stock viewer's added queueing delay (up
// plus down, mean) with 200-packet buffers is at least 3× the delay with
// 20 (the seed study: nearly 300 ms at 200 packets, "much less" at 20).
func TestCoexistenceBufferDelay(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time runs of 25 s: skipped with -short")
	}
	t.Parallel()
	o := Options{Seed: 1, Parallel: 4}.withDefaults()
	all, _ := coexistenceJobs(o, labRun)
	var jobs []job
	for _, j := range all {
		if j.cfg.Viewer.Mode == Stock && len(j.cfg.Kernel) == 0 { // the kernel's: TestCoexistenceKernel
			jobs = append(jobs, j)
		}
	}
	runs, err := runAll(context.Background(), o, jobs)
	if err != nil {
		t.Fatal(err)
	}
	skipJudgingUnderRace(t)
	added := map[string]float64{}
	for i, r := range runs {
		v := r.Measurement.Viewer
		key := fmt.Sprintf("%d %s", jobs[i].cfg.Up.Buffer, jobs[i].cfg.TCP[0].CC)
		added[key] = v.Up.QueueDelayMeanMs + v.Down.QueueDelayMeanMs
		t.Logf("%s: viewer %.0f kbit/s, added delay up %.0f ms, down %.0f ms; TCP up %.0f, down %.0f kbit/s",
			r.Name, v.Down.ThroughputBPS/1000, v.Up.QueueDelayMeanMs, v.Down.QueueDelayMeanMs,
			r.Measurement.TCP[0].GoodputBPS/1000, r.Measurement.TCP[1].GoodputBPS/1000)
	}
	for _, cc := range []string{"reno", "cubic"} {
		small, large := added["20 "+cc], added["200 "+cc]
		if !(large >= 3*small) || small <= 0 {
			t.Errorf("%s: added delay %.0f ms with 200 packets, %.0f ms with 20: want at least 3×", cc, large, small)
		}
	}
}

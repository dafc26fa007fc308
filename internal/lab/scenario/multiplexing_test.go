package scenario

import (
	"context"
	"testing"
)

// TestMultiplexing: in the congested configurations (300 and 250 kbit/s)
// the multiplexed branch gets more than the plain one, as published, and
// each branch's aggregate throughput is within ±30 % of the published
// figure; uncongested (10 Mbit/s), each branch gets its offered load
// within ±30 %.
func TestMultiplexing(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time runs: skipped with -short")
	}
	t.Parallel()
	o := Options{Seed: 1, Parallel: 4}.withDefaults()
	cases := []multiplexCase{multiplexCases[1], multiplexCases[2], multiplexCases[3]}
	runs, err := runAll(context.Background(), o, multiplexJobs(o, 2*labRun, cases))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range runs {
		c := cases[i]
		got := branchThroughputs(r.Measurement)
		t.Logf("%s: plain %.0f kbit/s (published %.0f), multiplexed %.0f (published %.0f)", r.Name, got[0], c.published[0], got[1], c.published[1])
		for b := range got {
			if d := got[b]/c.published[b] - 1; d < -0.3 || d > 0.3 {
				t.Errorf("%s: branch %d: %.0f kbit/s, published %.0f: off by %+.0f %%, want within ±30 %%", r.Name, b, got[b], c.published[b], d*100)
			}
		}
		if c.rate < 1_000_000 && !(got[1] > got[0]) {
			t.Errorf("%s: the multiplexed branch got %.0f kbit/s, the plain one %.0f: published the other way", r.Name, got[1], got[0])
		}
	}
}

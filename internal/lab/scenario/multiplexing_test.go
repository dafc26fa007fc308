package scenario

import (
	"context"
	"testing"
)

// TestMultiplexing: each branch's aggregate throughput is within ±30 % of
// the published figure, and in the congested configurations (300 and 250
// kbit/s) the ratio of the multiplexed branch's to the plain one's is
// within ±30 % of the published ratio (1.12 and 1.16). Whether the
// multiplexed branch comes out ahead at all is logged, not asserted: over
// repeated runs the ratio ranged from 0.88 to 1.15 at 300 kbit/s and from
// 0.97 to 1.09 at 250 kbit/s, noise around 1 rather than the published
// 12 and 16 % advantage.
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
	skipJudgingUnderRace(t)
	for i, r := range runs {
		c := cases[i]
		got := branchThroughputs(r.Measurement)
		ratio, published := got[1]/got[0], c.published[1]/c.published[0]
		t.Logf("%s: plain %.0f kbit/s (published %.0f), multiplexed %.0f (published %.0f); multiplexed/plain %.2f (published %.2f)",
			r.Name, got[0], c.published[0], got[1], c.published[1], ratio, published)
		for b := range got {
			if d := got[b]/c.published[b] - 1; d < -0.3 || d > 0.3 {
				t.Errorf("%s: branch %d: %.0f kbit/s, published %.0f: off by %+.0f %%, want within ±30 %%", r.Name, b, got[b], c.published[b], d*100)
			}
		}
		if d := ratio/published - 1; c.rate < 1_000_000 && (d < -0.3 || d > 0.3) {
			t.Errorf("%s: multiplexed/plain %.2f, published %.2f: want within ±30 %%", r.Name, ratio, published)
		}
	}
}

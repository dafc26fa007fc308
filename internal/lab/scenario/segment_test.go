package scenario

import (
	"context"
	"testing"
)

// TestSegmentChoice: beside one bulk CUBIC download, window tracking with
// s = the mean payload leaves the viewer well under the TCP flow's bytes/s
// (below 0.7×), and with the nominal 1460 B it gets more than with the
// mean (RFC 4828's argument), without flooding the uplink with its own
// requests (at most 50 upward datagrams a second: acks, agent updates and
// a request per interval).
func TestSegmentChoice(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time runs: skipped with -short")
	}
	t.Parallel()
	o := Options{Seed: 1, Parallel: 2}.withDefaults()
	all, seg := coexistenceJobs(o, 2*labRun)
	jobs := all[seg:]
	runs, err := runAll(context.Background(), o, jobs)
	if err != nil {
		t.Fatal(err)
	}
	skipJudgingUnderRace(t)
	var ratios []float64
	for _, r := range runs {
		m := r.Measurement
		v := m.Viewer
		ratio := v.Down.ThroughputBPS / m.TCP[0].Data.ThroughputBPS
		ratios = append(ratios, ratio)
		upRate := float64(v.Up.Arrived) / m.Seconds
		t.Logf("%s: viewer %.0f kbit/s (s %.0f B, p %.4f), TCP %.0f kbit/s: %.2f×; viewer up %.0f datagrams/s", r.Name,
			v.Down.ThroughputBPS/1000, v.SegmentBytes, v.LossEventRate, m.TCP[0].Data.ThroughputBPS/1000, ratio, upRate)
		if upRate > 50 {
			t.Errorf("%s: the viewer's side sent %.0f datagrams/s up", r.Name, upRate)
		}
	}
	if ratios[0] >= 0.7 {
		t.Errorf("with s = the mean payload the viewer got %.2f× the TCP flow's bytes/s, want below 0.7×", ratios[0])
	}
	if !(ratios[1] > ratios[0]) {
		t.Errorf("with s = 1460 B the viewer got %.2f× the TCP flow's bytes/s, with the mean %.2f×: want more", ratios[1], ratios[0])
	}
}

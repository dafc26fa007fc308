package scenario

import (
	"math"
	"testing"
	"time"
)

// TestAskedMean: the throttle asked over the measured part, each value
// weighted by how long it stood, the one asked before the part standing
// from its start.
func TestAskedMean(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	for _, tc := range []struct {
		name  string
		asked []askedAt
		want  float64
	}{
		{"none", nil, 0},
		{"only after the part", []askedAt{{at(11), 500}}, 0},
		{"one before the part stands throughout", []askedAt{{at(-3), 800}}, 800},
		{"half and half", []askedAt{{at(-1), 1000}, {at(5), 2000}}, 1500},
		{"asked within the part covers only its rest", []askedAt{{at(5), 2000}}, 2000},
		{"a quarter, then three", []askedAt{{at(0), 400}, {at(2.5), 800}, {at(20), 1}}, 700},
	} {
		if got := askedMean(tc.asked, at(0), at(10)); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: %g, want %g", tc.name, got, tc.want)
		}
	}
}

package lludp

import (
	"math"
	"testing"
)

// TestViewerSplit: the worked splits of protocol.md §7.2 and §7.3 (units
// of 1024 bit/s), and the clamps.
func TestViewerSplit(t *testing.T) {
	for _, tc := range []struct {
		kbps float64
		want [NumCategories]float64
	}{
		{207, [NumCategories]float64{20.7, 28.8, 6.8, 6.8, 57.7, 57.7, 28.5}},
		{646, [NumCategories]float64{64.6, 78.8, 15.8, 15.8, 186.8, 186.8, 97.5}},
		{1500, [NumCategories]float64{150, 130, 26, 26, 484, 484, 200}},
		{4500, [NumCategories]float64{450, 310, 62, 62, 1528, 1528, 560}},
		{150, [NumCategories]float64{15.0, 22.0, 5.4, 5.4, 40.4, 40.4, 21.4}},
		{9000, [NumCategories]float64{600, 400, 80, 80, 2050, 2050, 740}}, // capped at 6000
		{10, [NumCategories]float64{5, 10, 3, 3, 10, 10, 9}},              // floored at 50
		{math.NaN(), [NumCategories]float64{5, 10, 3, 3, 10, 10, 9}},      // the floor, not NaN throttles
		{math.Inf(1), [NumCategories]float64{600, 400, 80, 80, 2050, 2050, 740}},
	} {
		got := ViewerSplit(tc.kbps * viewerKbps)
		var sum float64
		for c := range got {
			sum += float64(got[c])
			if k := float64(got[c]) / viewerKbps; math.Abs(k-tc.want[c]) > 0.06 {
				t.Errorf("%v kbps: %v = %.2f, want %.1f", tc.kbps, Category(c), k, tc.want[c])
			}
		}
		clamped := viewerMinKbps + 0.0
		if !math.IsNaN(tc.kbps) {
			clamped = min(max(tc.kbps, viewerMinKbps), viewerMaxKbps)
		}
		if math.Abs(sum/viewerKbps-clamped) > 0.01 {
			t.Errorf("%v kbps: the split sums to %.2f, want %v", tc.kbps, sum/viewerKbps, clamped)
		}
	}
	// The default on the wire (protocol.md §7.3): 460800, 317440, 63488,
	// 63488, 1564672, 1564672, 573440 bit/s.
	want := [NumCategories]float32{460800, 317440, 63488, 63488, 1564672, 1564672, 573440}
	if got := ViewerSplit(4500 * viewerKbps); got != want {
		t.Errorf("default split %v, want %v", got, want)
	}
}

package throttle

import (
	"math"
	"testing"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/ratecalc"
)

// TestViewerSplit: the worked splits of protocol.md §7.2 and §7.3 (units
// of 1024 bit/s).
func TestViewerSplit(t *testing.T) {
	for _, tc := range []struct {
		kbps float64
		want [lludp.NumCategories]float64
	}{
		{207, [lludp.NumCategories]float64{20.7, 28.8, 6.8, 6.8, 57.7, 57.7, 28.5}},
		{646, [lludp.NumCategories]float64{64.6, 78.8, 15.8, 15.8, 186.8, 186.8, 97.5}},
		{1500, [lludp.NumCategories]float64{150, 130, 26, 26, 484, 484, 200}},
		{4500, [lludp.NumCategories]float64{450, 310, 62, 62, 1528, 1528, 560}},
		{150, [lludp.NumCategories]float64{15.0, 22.0, 5.4, 5.4, 40.4, 40.4, 21.4}},
		{9000, [lludp.NumCategories]float64{600, 400, 80, 80, 2050, 2050, 740}}, // capped at 6000
		{10, [lludp.NumCategories]float64{5, 10, 3, 3, 10, 10, 9}},              // floored at 50
	} {
		got := ViewerSplit(ratecalc.RateFromBits(tc.kbps * kbps))
		var sum float64
		for c := range got {
			sum += float64(got[c])
			if k := float64(got[c]) / kbps; math.Abs(k-tc.want[c]) > 0.06 {
				t.Errorf("%v kbps: %v = %.2f, want %.1f", tc.kbps, lludp.Category(c), k, tc.want[c])
			}
		}
		clamped := min(max(tc.kbps, viewerMinKbps), viewerMaxKbps)
		if math.Abs(sum/kbps-clamped) > 0.01 {
			t.Errorf("%v kbps: the split sums to %.2f", tc.kbps, sum/kbps)
		}
	}
	// The default on the wire (protocol.md §7.3): 460800, 317440, 63488,
	// 63488, 1564672, 1564672, 573440 bit/s.
	want := [lludp.NumCategories]float32{460800, 317440, 63488, 63488, 1564672, 1564672, 573440}
	if got := ViewerSplit(ratecalc.RateFromBits(4500 * kbps)); got != want {
		t.Errorf("default split %v, want %v", got, want)
	}
}

package throttle

import (
	"testing"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/ratecalc"
)

// TestViewerSplit: the loop's split is lludp's, at the same total in the
// loop's unit (lludp's test covers the presets).
func TestViewerSplit(t *testing.T) {
	for _, bits := range []float64{10 * 1024, 207 * 1024, 1500 * 1024, 4500 * 1024, 9000 * 1024} {
		if got, want := ViewerSplit(ratecalc.RateFromBits(bits)), lludp.ViewerSplit(bits); got != want {
			t.Errorf("%v bit/s: %v, want lludp's %v", bits, got, want)
		}
	}
}

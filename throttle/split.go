package throttle

import (
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/ratecalc"
)

// kbps is the viewer's "kbps": 1024 bit/s (protocol.md §1).
const kbps = 1024

// viewerPresets are the viewer's bandwidth presets (llviewerthrottle.cpp
// BW_PRESET_*; protocol.md §7.2): a total in kbps and its split over
// Resend, Land, Wind, Cloud, Task, Texture, Asset.
var viewerPresets = [...]struct {
	total float64
	split [lludp.NumCategories]float64
}{
	{50, [lludp.NumCategories]float64{5, 10, 3, 3, 10, 10, 9}},
	{300, [lludp.NumCategories]float64{30, 40, 9, 9, 86, 86, 40}},
	{500, [lludp.NumCategories]float64{50, 70, 14, 14, 136, 136, 80}},
	{1000, [lludp.NumCategories]float64{100, 100, 20, 20, 310, 310, 140}},
}

// The viewer's bounds on a total (llviewerthrottle.cpp MIN_BANDWIDTH,
// MAX_BANDWIDTH), in kbps.
const (
	viewerMinKbps = 50
	viewerMaxKbps = 6000
)

// ViewerSplit splits a total rate over the seven AgentThrottle categories
// the way the Second Life viewer does (getThrottleGroup): the total is
// clamped to 50–6000 kbps (1024 bit/s), interpolated linearly between the
// presets, and extrapolated above 1000 along the 500→1000 slope. The
// result is in bits per second, ready for an AgentThrottle, and sums to the
// clamped total. Requests shaped like the viewer's are what simulators
// already expect.
func ViewerSplit(total ratecalc.Rate) [lludp.NumCategories]float32 {
	k := min(max(total.BitsPerSecond()/kbps, viewerMinKbps), viewerMaxKbps)
	lo, hi := viewerPresets[len(viewerPresets)-2], viewerPresets[len(viewerPresets)-1]
	for i := 1; i < len(viewerPresets); i++ {
		if k <= viewerPresets[i].total {
			lo, hi = viewerPresets[i-1], viewerPresets[i]
			break
		}
	}
	frac := (k - lo.total) / (hi.total - lo.total)
	var out [lludp.NumCategories]float32
	for c := range out {
		out[c] = float32((lo.split[c] + frac*(hi.split[c]-lo.split[c])) * kbps)
	}
	return out
}

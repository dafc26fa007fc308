package lludp

// viewerKbps is the viewer's "kbps": 1024 bit/s (protocol.md §1).
const viewerKbps = 1024

// viewerPresets are the viewer's bandwidth presets (llviewerthrottle.cpp
// BW_PRESET_*; protocol.md §7.2): a total in kbps and its split over
// Resend, Land, Wind, Cloud, Task, Texture, Asset.
var viewerPresets = [...]struct {
	total float64
	split [NumCategories]float64
}{
	{50, [NumCategories]float64{5, 10, 3, 3, 10, 10, 9}},
	{300, [NumCategories]float64{30, 40, 9, 9, 86, 86, 40}},
	{500, [NumCategories]float64{50, 70, 14, 14, 136, 136, 80}},
	{1000, [NumCategories]float64{100, 100, 20, 20, 310, 310, 140}},
}

// The viewer's bounds on a total (llviewerthrottle.cpp MIN_BANDWIDTH,
// MAX_BANDWIDTH), in kbps.
const (
	viewerMinKbps = 50
	viewerMaxKbps = 6000
)

// ViewerSplit splits a total over the seven AgentThrottle categories the
// way the Second Life viewer does (getThrottleGroup): the total is clamped
// to 50–6000 kbps (of 1024 bit/s), interpolated linearly between the
// presets, and extrapolated above 1000 along the 500→1000 slope. Total and result are in bits per second, the unit of
// AgentThrottle's Throttles, and the result sums to the clamped total.
// A NaN total is taken as the minimum, so the result is always a valid
// request.
func ViewerSplit(totalBitsPerSecond float64) [NumCategories]float32 {
	k := totalBitsPerSecond / viewerKbps
	if !(k >= viewerMinKbps) { // NaN too
		k = viewerMinKbps
	}
	k = min(k, viewerMaxKbps)
	lo, hi := viewerPresets[len(viewerPresets)-2], viewerPresets[len(viewerPresets)-1]
	for i := 1; i < len(viewerPresets); i++ {
		if k <= viewerPresets[i].total {
			lo, hi = viewerPresets[i-1], viewerPresets[i]
			break
		}
	}
	frac := (k - lo.total) / (hi.total - lo.total)
	var out [NumCategories]float32
	for c := range out {
		out[c] = float32((lo.split[c] + frac*(hi.split[c]-lo.split[c])) * viewerKbps)
	}
	return out
}

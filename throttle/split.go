package throttle

import (
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/ratecalc"
)

// ViewerSplit splits a total rate over the seven AgentThrottle categories
// the way the Second Life viewer does; lludp.ViewerSplit is the one
// definition, beside the message it fills, and this converts the loop's
// unit to its bits per second.
func ViewerSplit(total ratecalc.Rate) [lludp.NumCategories]float32 {
	return lludp.ViewerSplit(total.BitsPerSecond())
}

package ratecalc

import (
	"math"
	"strconv"
	"time"
)

// Rate is a data rate in bytes per second. It is a float64 because rates
// come from equations and are clamped, never accumulated; integer tick
// accounting belongs to the token buckets that enforce a rate.
type Rate float64

// BitsPerSecond returns r in bits per second.
func (r Rate) BitsPerSecond() float64 { return float64(r) * 8 }

// RateFromBits converts bits per second to a Rate.
func RateFromBits(bps float64) Rate { return Rate(bps / 8) }

// RateFromDelta is the rate of bytes delivered over d; 0 when d ≤ 0.
func RateFromDelta(bytes float64, d time.Duration) Rate {
	if d <= 0 {
		return 0
	}
	return Rate(bytes / d.Seconds())
}

func (r Rate) String() string {
	return strconv.FormatFloat(r.BitsPerSecond()/1000, 'f', 1, 64) + " kbit/s"
}

// sane maps NaN to 0 and clamps r to [lo, hi]: no controller output is ever
// NaN, infinite or negative.
func sane(r, lo, hi Rate) Rate {
	if math.IsNaN(float64(r)) || r < lo {
		return lo
	}
	if r > hi {
		return hi
	}
	return r
}

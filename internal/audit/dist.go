package audit

import (
	"math"
	"slices"
)

// exactLimit is how many per-second values a direction keeps exactly for
// its percentiles: a bit over an hour of seconds, 32 KiB. Beyond it they
// go into a log-spaced histogram, so that a day-long capture costs what
// an hour-long one does (the audit streams: memory must not grow with the
// capture).
const exactLimit = 4096

// histStep is the histogram's bucket width: 1 %, so a percentile taken
// from it is within ½ % of the exact one.
var histStep = math.Log(1.01)

// dist is a distribution of non-negative values for the per-connection
// percentiles: exact up to exactLimit values, then within ½ %.
type dist struct {
	n     int
	sum   float64
	exact []float64
	hist  map[int32]uint64 // bucket → count, once exact overflowed
	zeros uint64           // zeros in the histogram
}

func (d *dist) add(v float64) {
	d.n++
	d.sum += v
	if d.hist == nil && len(d.exact) < exactLimit {
		d.exact = append(d.exact, v)
		return
	}
	if d.hist == nil {
		d.hist = map[int32]uint64{}
		for _, x := range d.exact {
			d.bucket(x)
		}
		d.exact = nil
	}
	d.bucket(v)
}

func (d *dist) bucket(v float64) {
	if !(v > 0) {
		d.zeros++
		return
	}
	d.hist[int32(math.Floor(math.Log(v)/histStep))]++
}

func (d *dist) mean() float64 { return d.sum / float64(d.n) }

// quantile is the q-quantile: R-7 over the exact values, or the
// geometric middle of the bucket holding that rank.
func (d *dist) quantile(q float64) float64 {
	if d.n == 0 {
		return 0
	}
	if d.hist == nil {
		sorted := slices.Clone(d.exact)
		slices.Sort(sorted)
		return quantile(sorted, q)
	}
	rank := uint64(math.Round(q * float64(d.n-1)))
	if rank < d.zeros {
		return 0
	}
	keys := make([]int32, 0, len(d.hist))
	for k := range d.hist {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	seen := d.zeros
	for _, k := range keys {
		seen += d.hist[k]
		if rank < seen {
			return math.Exp((float64(k) + 0.5) * histStep)
		}
	}
	return math.Exp((float64(keys[len(keys)-1]) + 0.5) * histStep)
}

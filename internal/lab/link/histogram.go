package link

import (
	"math"
	"math/bits"
	"time"
)

// Delay histogram layout: log-linear buckets over microseconds, as
// HdrHistogram does. Below delaySubBuckets µs every microsecond has its
// bucket; above, each power of two is split into delaySubBuckets/2 equal
// buckets, so a bucket is at most 1/32 of the values it holds wide and its
// midpoint is within 1/64 (1.6 %) of any of them. Delays beyond 2^36 µs
// (about 19 hours) count in the top bucket.
const (
	delaySubBits    = 6
	delaySubBuckets = 1 << delaySubBits // 64
	delayMaxOctave  = 30
	delayBuckets    = delaySubBuckets + delayMaxOctave*delaySubBuckets/2
)

// DelayHistogram is a bounded distribution of delays: a fixed number of
// buckets whatever the number of samples, exact count, sum, minimum and
// maximum, and quantiles to within 1.6 % (see Quantile).
type DelayHistogram struct {
	Count    uint64
	Sum      time.Duration
	Min, Max time.Duration
	buckets  [delayBuckets]uint64
}

func delayBucket(d time.Duration) int {
	us := uint64(max(d, 0) / time.Microsecond)
	if us < delaySubBuckets {
		return int(us)
	}
	// us >> shift lies in [32, 64): the top delaySubBits-1 bits below the
	// leading one pick the sub-bucket.
	shift := bits.Len64(us) - delaySubBits
	b := delaySubBuckets + (shift-1)*delaySubBuckets/2 + int(us>>shift) - delaySubBuckets/2
	return min(b, delayBuckets-1)
}

// delayBucketRange is the half-open range [lo, hi) of microseconds a
// bucket holds.
func delayBucketRange(b int) (lo, hi uint64) {
	if b < delaySubBuckets {
		return uint64(b), uint64(b) + 1
	}
	i := b - delaySubBuckets
	shift := i/(delaySubBuckets/2) + 1
	m := uint64(i%(delaySubBuckets/2) + delaySubBuckets/2)
	return m << shift, (m + 1) << shift
}

// Add records one delay; a negative one counts as zero.
func (h *DelayHistogram) Add(d time.Duration) {
	d = max(d, 0)
	if h.Count == 0 || d < h.Min {
		h.Min = d
	}
	if d > h.Max {
		h.Max = d
	}
	h.Count++
	h.Sum += d
	h.buckets[delayBucket(d)]++
}

// Mean is the exact mean delay, 0 without samples.
func (h *DelayHistogram) Mean() time.Duration {
	if h.Count == 0 {
		return 0
	}
	return h.Sum / time.Duration(h.Count)
}

// Quantile returns the delay below or at which a fraction q of the samples
// lie (nearest rank): the midpoint of the bucket holding that rank, kept
// within [Min, Max]. Above 64 µs it is within 1.6 % of the true sample,
// below within half a microsecond. 0 without samples.
func (h *DelayHistogram) Quantile(q float64) time.Duration {
	if h.Count == 0 || math.IsNaN(q) {
		return 0
	}
	rank := uint64(math.Ceil(min(max(q, 0), 1) * float64(h.Count)))
	rank = max(rank, 1)
	var seen uint64
	for b, n := range h.buckets {
		seen += n
		if seen >= rank {
			lo, hi := delayBucketRange(b)
			mid := time.Duration(lo+hi) * time.Microsecond / 2
			return min(max(mid, h.Min), h.Max)
		}
	}
	return h.Max
}

// Since returns the samples added after earlier, a snapshot of the same
// histogram. Min and Max cannot be taken apart; they stay this snapshot's,
// bounds that still hold.
func (h DelayHistogram) Since(earlier DelayHistogram) DelayHistogram {
	h.Count -= earlier.Count
	h.Sum -= earlier.Sum
	for i := range h.buckets {
		h.buckets[i] -= earlier.buckets[i]
	}
	return h
}

// merge adds o's samples to h.
func (h *DelayHistogram) merge(o *DelayHistogram) {
	if o.Count == 0 {
		return
	}
	if h.Count == 0 || o.Min < h.Min {
		h.Min = o.Min
	}
	h.Max = max(h.Max, o.Max)
	h.Count += o.Count
	h.Sum += o.Sum
	for i := range h.buckets {
		h.buckets[i] += o.buckets[i]
	}
}

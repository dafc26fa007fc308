package link

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestDelayHistogram: against the sorted samples themselves, the
// histogram's mean is exact and its quantiles are within the stated 1/64
// (or half a microsecond below 64 µs), for distributions from
// microseconds to seconds; Since gives the histogram of the later samples.
func TestDelayHistogram(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name string
		draw func() time.Duration
	}{
		{"exponential, mean 40 ms", func() time.Duration { return time.Duration(rng.ExpFloat64() * 40e6) }},
		{"uniform 0–300 ms", func() time.Duration { return time.Duration(rng.Int64N(300e6)) }},
		{"microseconds", func() time.Duration { return time.Duration(rng.Int64N(100e3)) }},
		{"a few values", func() time.Duration { return []time.Duration{0, 23437500, 2 * time.Second}[rng.IntN(3)] }},
		{"log-uniform 1 µs – 100 s", func() time.Duration { return time.Duration(math.Pow(10, 3+rng.Float64()*8)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h, first DelayHistogram
			var all, later []time.Duration
			var sum time.Duration
			for i := range 20_000 {
				d := tc.draw()
				h.Add(d)
				all = append(all, d)
				sum += d
				if i == 4_999 {
					first = h
				}
				if i >= 5_000 {
					later = append(later, d)
				}
			}
			if h.Count != 20_000 || h.Mean() != sum/20_000 || h.Min != slices.Min(all) || h.Max != slices.Max(all) {
				t.Errorf("count %d mean %v min %v max %v", h.Count, h.Mean(), h.Min, h.Max)
			}
			check := func(h *DelayHistogram, samples []time.Duration) {
				t.Helper()
				slices.Sort(samples)
				for _, q := range []float64{0, 0.01, 0.5, 0.95, 0.99, 1} {
					rank := max(int(math.Ceil(q*float64(len(samples)))), 1)
					want := samples[rank-1]
					got := h.Quantile(q)
					if tol := max(float64(want)/64, float64(time.Microsecond)/2); math.Abs(float64(got-want)) > tol {
						t.Errorf("q %v: %v, want %v ± %v", q, got, want, time.Duration(tol))
					}
				}
			}
			check(&h, all)
			rest := h.Since(first)
			if rest.Count != 15_000 {
				t.Fatalf("since: %d samples", rest.Count)
			}
			check(&rest, later)
		})
	}
	var empty DelayHistogram
	if empty.Mean() != 0 || empty.Quantile(0.5) != 0 || empty.Quantile(math.NaN()) != 0 {
		t.Error("an empty histogram reports delays")
	}
	var neg DelayHistogram
	neg.Add(-time.Second)
	if neg.Min != 0 || neg.Quantile(1) != 0 {
		t.Errorf("a negative delay counted as %v", neg.Quantile(1))
	}
}

// TestDelayBucketRanges: the buckets tile the microseconds without gaps
// or overlaps, each no wider than 1/32 of its lower bound, and every value
// falls in the bucket whose range holds it.
func TestDelayBucketRanges(t *testing.T) {
	var next uint64
	for b := range delayBuckets {
		lo, hi := delayBucketRange(b)
		if lo != next || hi <= lo || lo >= delaySubBuckets && (hi-lo)*32 > lo {
			t.Fatalf("bucket %d: [%d, %d) after %d", b, lo, hi, next)
		}
		for _, us := range []uint64{lo, (lo + hi) / 2, hi - 1} {
			if got := delayBucket(time.Duration(us) * time.Microsecond); got != b {
				t.Fatalf("%d µs in bucket %d, want %d [%d, %d)", us, got, b, lo, hi)
			}
		}
		next = hi
	}
	if got := delayBucket(24 * time.Hour); got != delayBuckets-1 {
		t.Errorf("a day in bucket %d", got)
	}
}

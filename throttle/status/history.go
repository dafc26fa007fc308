package status

import (
	"math"
	"time"
)

// sample is one circuit at one instant: 28 bytes. Rates are kbit/s,
// loss a fraction, RTT ms; float32 holds them to a part in ten million.
type sample struct {
	at                         int32 // seconds since the page started
	recv, share, viewer, asked float32
	loss, rtt                  float32
}

// ring holds the last len(buf) samples of a circuit.
type ring struct {
	buf  []sample
	next int  // where the next sample goes
	full bool // buf has wrapped
	gen  uint64
	seen time.Time // the last sample's time
}

func newRing(n int) *ring { return &ring{buf: make([]sample, n)} }

func (r *ring) add(s sample, at time.Time) {
	r.buf[r.next] = s
	r.next++
	if r.next == len(r.buf) {
		r.next, r.full = 0, true
	}
	r.gen++
	r.seen = at
}

// samples returns the samples oldest first, appended to out.
func (r *ring) samples(out []sample) []sample {
	if r.full {
		out = append(out, r.buf[r.next:]...)
	}
	return append(out, r.buf[:r.next]...)
}

// minRTT is the least RTT sampled, 0 with none.
func (r *ring) minRTT() float64 {
	least := float32(math.Inf(1))
	n := r.next
	if r.full {
		n = len(r.buf)
	}
	for _, s := range r.buf[:n] {
		if s.rtt > 0 && s.rtt < least {
			least = s.rtt
		}
	}
	if math.IsInf(float64(least), 1) {
		return 0
	}
	return float64(least)
}

// sampleBytes is the size of one sample, for the memory a circuit's
// history takes.
const sampleBytes = 28

package ratecalc

import "time"

// lossIntervalWeights are w_0..w_7 of RFC 5348 §5.4 for n = 8:
// w_i = 1 for i < n/2, else 2(n−i)/(n+2).
var lossIntervalWeights = [lossIntervals]float64{1, 1, 1, 1, 0.8, 0.6, 0.4, 0.2}

const (
	// lossIntervals is n, the number of loss intervals averaged (RFC 5348 §5.4).
	lossIntervals = 8
	// discountThreshold is THRESHOLD of RFC 5348 §5.5, the smallest
	// discount factor history discounting applies.
	discountThreshold = 0.25
)

// LossHistory groups losses into loss events and keeps the loss intervals
// between them (RFC 5348 §5.2–5.5). Every sequence number — received or
// lost — counts as one packet. A loss starts a new loss event only if it
// happened more than one RTT after the first loss of the current event;
// losses within that RTT belong to it. The zero value is ready to use.
type LossHistory struct {
	// Discount enables the optional history discounting of RFC 5348 §5.5:
	// after a long loss-free run, older intervals weigh less, so the loss
	// event rate falls faster when congestion ends.
	Discount bool

	// open is I_0, packets since the start of the latest loss event (or
	// since the start, before any); closed[0..count-1] are I_1..I_n.
	open       float64
	closed     [lossIntervals]float64
	discounts  [lossIntervals]float64 // accumulated discount of each closed interval
	count      int
	events     uint64
	eventStart time.Time
}

// OnPacket counts one sequence number. For a lost one, at is its estimated
// send (or arrival) time and rtt the current round-trip estimate; it
// reports whether the loss began a new loss event, and whether that event
// is the first.
func (h *LossHistory) OnPacket(lost bool, at time.Time, rtt time.Duration) (newEvent, first bool) {
	if lost && (h.events == 0 || at.Sub(h.eventStart) > rtt) {
		first = h.events == 0
		h.push()
		h.events++
		h.eventStart = at
		newEvent = true
	}
	h.open++
	return newEvent, first
}

// push closes I_0: it becomes I_1, and the older intervals shift. The
// interval before the first loss event is kept as I_1 too: a real run of
// loss-free packets, which TFRC may replace (SetFirstInterval).
func (h *LossHistory) push() {
	df := h.discountFactor()
	copy(h.closed[1:], h.closed[:lossIntervals-1])
	copy(h.discounts[1:], h.discounts[:lossIntervals-1])
	for i := 1; i < lossIntervals; i++ {
		h.discounts[i] *= df
	}
	h.closed[0], h.discounts[0] = h.open, 1
	h.count = min(h.count+1, lossIntervals)
	h.open = 0
}

// SetFirstInterval replaces I_1 after the first loss event with a
// synthetic interval, as RFC 5348 §6.3.1 derives it from the receive rate.
func (h *LossHistory) SetFirstInterval(packets float64) {
	if h.events == 1 && packets >= 1 {
		h.closed[0] = packets
	}
}

// Events is the number of loss events so far.
func (h *LossHistory) Events() uint64 { return h.events }

// Intervals appends I_0 (the open interval) and then I_1..I_k, newest first.
func (h *LossHistory) Intervals(dst []float64) []float64 {
	return append(append(dst, h.open), h.closed[:h.count]...)
}

// meanClosed is the weighted mean of the closed intervals, undiscounted.
func (h *LossHistory) meanClosed() float64 {
	var tot, w float64
	for i := range h.count {
		tot += h.closed[i] * lossIntervalWeights[i]
		w += lossIntervalWeights[i]
	}
	return tot / w
}

// discountFactor is DF of RFC 5348 §5.5: 1 unless discounting is on and
// I_0 exceeds twice the mean of the closed intervals.
func (h *LossHistory) discountFactor() float64 {
	if !h.Discount || h.count == 0 {
		return 1
	}
	if mean := h.meanClosed(); h.open > 2*mean {
		return max(discountThreshold, 2*mean/h.open)
	}
	return 1
}

// LossEventRate is p = 1/I_mean (RFC 5348 §5.4): the larger of the
// weighted means with and without the open interval I_0, so a loss-free run
// can lower p but a short one never raises it. It is 0 before the first
// loss event.
func (h *LossHistory) LossEventRate() float64 {
	if h.count == 0 {
		return 0
	}
	df := h.discountFactor()
	// I_tot1: closed intervals I_1..I_k with weights w_0..w_{k-1}.
	var tot1, w1 float64
	for i := range h.count {
		w := lossIntervalWeights[i] * h.discounts[i] * df
		tot1 += h.closed[i] * w
		w1 += w
	}
	// I_tot0: I_0 with weight 1, then I_1..I_{n-1} with weights w_1..w_{n-1}.
	tot0, w0 := h.open, 1.0
	for i := range min(h.count, lossIntervals-1) {
		w := lossIntervalWeights[i+1] * h.discounts[i] * df
		tot0 += h.closed[i] * w
		w0 += w
	}
	mean := max(tot0/w0, tot1/w1)
	if !(mean >= 1) {
		return 1
	}
	return 1 / mean
}

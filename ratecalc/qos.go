package ratecalc

import "time"

// QoS wraps a controller with the guarantees of QoS-TCP (from wireless-LAN
// studies): a floor no decision goes below, and optionally a target rate
// held while the loss event rate stays at or under a limit — above it, the
// wrapped controller decides (never below the floor). The wrapped
// controller still sees every event and makes every decision, so it is
// ready to take over at once.
type QoS struct {
	Controller
	// Floor is the guaranteed minimum rate.
	Floor Rate
	// Target, when positive, is held while LossEventRate ≤ MaxLossEventRate.
	Target           Rate
	MaxLossEventRate float64

	rate Rate
}

var _ Controller = (*QoS)(nil)

func (q *QoS) Rate(now time.Time) Rate {
	r := q.Controller.Rate(now)
	if q.Target > 0 && q.Controller.Stats().LossEventRate <= q.MaxLossEventRate {
		r = q.Target
	}
	q.rate = sane(max(r, q.Floor), 0, Rate(1e300))
	return q.rate
}

func (q *QoS) Stats() Stats {
	st := q.Controller.Stats()
	st.Rate = q.rate
	return st
}

package ratecalc

import (
	"math"
	"time"
)

// TFRCConfig configures a TFRC controller.
type TFRCConfig struct {
	Config
	// Discount enables RFC 5348 §5.5 history discounting.
	Discount bool
}

// TFRC computes what a TFRC receiver lets its sender send (RFC 5348),
// adapted to a request every few seconds instead of feedback every RTT:
//
//   - after a loss: X = max(min(X_calc, 2·max(X_recv_set)), s/t_mbi), where
//     X_calc is TFRCRate at the measured p, R and s, and X_recv_set holds the
//     receive rates of the last two request intervals (§4.3);
//   - before any loss (slow start): X doubles per request interval at most,
//     limited by 2·X_recv and floored at the initial rate
//     W_init/R = min(4s, max(2s, 4380 B))/R (§4.2, RFC 3390), because
//     doubling per RTT for a whole interval would overshoot by 2^(interval/R);
//   - the first loss interval is synthesised from the receive rate: the p
//     at which the equation gives X_recv (§6.3.1).
//
// With Config.NominalSegment, s in X_calc, the first interval and the
// floor is the nominal size (RFC 4828 §3); the initial rate, a window in
// packets the viewer receives (RFC 3390), keeps the mean.
//
// The no-feedback timer of §4.4 has no analogue: when nothing arrives, the
// receive limit shrinks the rate instead.
type TFRC struct {
	flow
	rate    Rate
	recvSet [2]Rate
	started bool
}

var _ Controller = (*TFRC)(nil)

// NewTFRC validates cfg and returns a TFRC controller.
func NewTFRC(cfg TFRCConfig) (*TFRC, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	t := &TFRC{flow: newFlow(c)}
	t.loss.Discount = cfg.Discount
	return t, nil
}

func (t *TFRC) OnPacket(p Packet) {
	_, _, first := t.observe(p)
	if first {
		// RFC 5348 §6.3.1: the first interval is 1/p for the p at which
		// the equation gives the current receive rate.
		// The equation's own s: with a nominal s, p found with the mean
		// would make the first loss raise the rate by nominal/mean.
		s := t.fairS()
		xrecv := t.partialRate()
		if xrecv <= 0 {
			xrecv = Rate(s / (2 * t.srtt().Seconds())) // X_target = s/(2R) when the first packets are lost
		}
		t.loss.SetFirstInterval(1 / LossEventRateFor(s, t.srtt(), xrecv))
	}
}

func (t *TFRC) OnRTT(sample time.Duration, at time.Time) { t.onRTT(sample, at) }

func (t *TFRC) initialRate() Rate {
	w := min(4*t.s, max(2*t.s, 4380))
	return Rate(w / t.srtt().Seconds())
}

func (t *TFRC) Rate(now time.Time) Rate {
	xrecv := t.closeInterval(now)
	t.recvSet = [2]Rate{t.recvSet[1], xrecv}
	recvLimit := 2 * max(t.recvSet[0], t.recvSet[1])
	switch p := t.loss.LossEventRate(); {
	case p == 0 && !t.started:
		t.rate = t.initialRate()
	case p == 0:
		t.rate = max(min(2*t.rate, recvLimit), t.initialRate())
	default:
		s := t.fairS()
		xcalc := TFRCRate(s, t.srtt(), p)
		t.rate = max(min(xcalc, recvLimit), Rate(s/tMBI.Seconds()))
	}
	t.started = true
	t.rate = t.clamp(t.rate)
	return t.rate
}

func (t *TFRC) Stats() Stats {
	st := t.stats()
	st.Rate, st.SlowStart = t.rate, st.LossEvents == 0
	if math.IsNaN(float64(st.EquationRate)) {
		st.EquationRate = 0
	}
	return st
}

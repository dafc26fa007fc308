package ratecalc

import (
	"cmp"
	"fmt"
	"math"
	"time"
)

// WindowConfig configures a window tracking controller.
type WindowConfig struct {
	Config
	// InitialWindow is the starting window in packets. Default 4
	// (congestion.md §6.1: 2–4 packets).
	InitialWindow float64
	// MinWindow is the smallest window after a halving. Default 2.
	MinWindow float64
}

// Window tracking (the Mongoose client of the St Andrews thesis;
// congestion.md §6) emulates at the receiver the congestion window a Reno
// TCP flow would have on the same path, and requests the rate that window
// implies, cwnd·s/SRTT:
//
//   - each received packet plays the part of an ACK: +1 per packet in slow
//     start, +1/cwnd in congestion avoidance (so +1 per RTT);
//   - each loss event (losses within one RTT are one event) halves the
//     window, at most once per RTT: cwnd = max(cwnd/2, MinWindow),
//     ssthresh = cwnd — classic Reno, β = ½, not quic-go's 0.7;
//   - the window does not grow while the flow is application-limited:
//     while the bytes received over the last RTT are below half of what the
//     window allows (RFC 7661's idea), so an idle avatar cannot inflate it
//     (what it allows in bytes is cwnd times the mean payload, whatever s
//     the rate stands on: the window counts the viewer's packets);
//   - the window never exceeds what Max allows at the current RTT.
//
// Its steady state is Reno's AIMD(1, ½): the Mathis rate (congestion.md §6.7).
type Window struct {
	flow
	cfg      WindowConfig
	cwnd     float64
	ssthresh float64
	rate     Rate

	lastGrowth  time.Time
	recentStart time.Time // the RTT-long window over which the received rate is measured
	recentBytes float64
	recentRate  Rate
	appLimited  bool
}

var _ Controller = (*Window)(nil)

const (
	defaultInitialWindow = 4
	defaultMinWindow     = 2
	// appLimitedFraction: below this share of the window's rate the flow
	// is application-limited (congestion.md §6.4).
	appLimitedFraction = 0.5
)

// NewWindow validates cfg and returns a window tracking controller.
func NewWindow(cfg WindowConfig) (*Window, error) {
	c, err := cfg.withDefaults()
	cfg.InitialWindow = cmp.Or(cfg.InitialWindow, defaultInitialWindow)
	cfg.MinWindow = cmp.Or(cfg.MinWindow, defaultMinWindow)
	if err == nil && !(cfg.MinWindow >= 1 && cfg.InitialWindow >= cfg.MinWindow && cfg.InitialWindow < 1e6) {
		err = fmt.Errorf("windows: initial %v, min %v: want 1 ≤ min ≤ initial < 1e6: %w", cfg.InitialWindow, cfg.MinWindow, ErrConfig)
	}
	if err != nil {
		return nil, err
	}
	cfg.Config = c
	return &Window{flow: newFlow(c), cfg: cfg, cwnd: cfg.InitialWindow, ssthresh: math.Inf(1)}, nil
}

func (w *Window) OnPacket(p Packet) {
	at, newEvent, _ := w.observe(p)
	if p.Repeat {
		return // a copy grows nothing
	}
	if p.Lost {
		if newEvent {
			w.cwnd = max(w.cwnd/2, w.cfg.MinWindow)
			w.ssthresh = w.cwnd
		}
		return
	}
	w.measureRecent(at, float64(max(p.Size, 0)))
	elapsed := at.Sub(w.lastGrowth)
	w.lastGrowth = at
	if w.appLimited || elapsed < 0 {
		return
	}
	if w.cwnd < w.ssthresh {
		w.cwnd++
	} else {
		// +1 packet per RTT of time, not per cwnd packets received: the
		// packet rate follows the throttle, which lags the window by up to a
		// request interval, and per-packet growth would inherit that lag.
		w.cwnd += min(elapsed.Seconds()/w.srtt().Seconds(), 1)
	}
	w.cwnd = min(w.cwnd, w.maxWindow())
}

// measureRecent keeps the receive rate over the latest RTT-long window and
// decides whether the flow is application-limited.
func (w *Window) measureRecent(at time.Time, size float64) {
	if w.recentStart.IsZero() {
		w.recentStart = at
	}
	w.recentBytes += size
	if d := at.Sub(w.recentStart); d >= w.srtt() {
		w.recentRate = RateFromDelta(w.recentBytes, d)
		w.recentStart, w.recentBytes = at, 0
	}
	// Checked on every packet, so the window stops within one packet of
	// twice what the flow uses (RFC 7661's limit), not one RTT later. The
	// window counts the viewer's own packets, so what it allows is
	// measured with their mean size even when the rate stands on a nominal
	// s: against cwnd·1460/SRTT, a flow of 300-byte packets would always
	// look application-limited and its window would never grow.
	w.appLimited = w.recentRate > 0 && w.recentRate < appLimitedFraction*Rate(w.cwnd*w.s/w.srtt().Seconds())
}

// windowRate is the rate the window implies, cwnd·s/SRTT, with s the fair
// segment size (Config.NominalSegment or the mean).
func (w *Window) windowRate() Rate { return Rate(w.cwnd * w.fairS() / w.srtt().Seconds()) }

// maxWindow is the window at which the rate reaches Max.
func (w *Window) maxWindow() float64 {
	return max(float64(w.cfg.Max)*w.srtt().Seconds()/w.fairS(), w.cfg.MinWindow)
}

func (w *Window) OnRTT(sample time.Duration, at time.Time) { w.onRTT(sample, at) }

func (w *Window) Rate(now time.Time) Rate {
	w.closeInterval(now)
	w.rate = w.clamp(w.windowRate())
	return w.rate
}

func (w *Window) Stats() Stats {
	st := w.stats()
	st.Rate, st.Window, st.SlowStart, st.AppLimited = w.rate, w.cwnd, w.cwnd < w.ssthresh, w.appLimited
	return st
}

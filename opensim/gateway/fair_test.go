package gateway

import (
	"github.com/fairgrid/fairgrid/capture/circuit"
	"math"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
)

// tcpFair is the TCP-fair rate of what a simulated viewer received after
// the warm-up, from the link's ground truth: the TFRC equation (RFC 5348
// §3.1) at the loss event rate of the dropped originals grouped by the
// link's round trip, that round trip, and the mean datagram received (s
// as the audit and the sidecar take it by default); and what it received.
func tcpFair(v *simViewer, rtt, d time.Duration) (fair, received ratecalc.Rate, p float64) {
	w := &v.after
	p = float64(truthEvents(w.dropped, rtt)) / float64(w.originals)
	s := w.payload / float64(w.deliveredOrigins)
	return ratecalc.TFRCRate(s, rtt, p), ratecalc.RateFromDelta(float64(w.bytes), d), p
}

// TestStockViewerGetsFairRate: a stock viewer asking for 1,500 kbit/s on
// a link with 3 % loss each way and 50 ms each way (the demo's delay; a
// 100 ms round trip) receives within ±20 % of the TCP-fair rate through
// the gateway, where without it the region would send what it asks
// (README: about 2.4× at 3 %). Each controller the gateway can take by
// name; virtual time, 120 s of which the last 80 are judged.
//
// TFRC holds ±20 %. Window tracking emulates Reno, whose steady state is
// the Mathis rate, 1.22·s/(R·√p): at p ≈ 3 % that is about 1.2× the TFRC
// equation, whose RTO term the Mathis rate lacks (congestion.md §6.7), and
// the window's halving at most once per RTT adds to it; it is held to
// [0.8, 1.5] here and the ±20 % is not claimed for it.
func TestStockViewerGetsFairRate(t *testing.T) {
	const delay = 50 * time.Millisecond
	ask := ratecalc.RateFromBits(1_500_000)
	for _, tc := range []struct {
		ctl    throttle.ControllerName
		lo, hi float64
	}{{throttle.TFRC, 0.8, 1.2}, {throttle.Window, 0.8, 1.5}} {
		ctl := tc.ctl
		t.Run(string(ctl), func(t *testing.T) {
			for _, seed := range seeds(3, 5, 9) {
				r := runSim(t, simConfig{loss: 0.03, delay: delay, viewers: []ratecalc.Rate{ask}, ctl: ctl,
					run: 120 * time.Second, warmup: 40 * time.Second, seed: seed})
				fair, got, p := tcpFair(r.viewers[0], 2*delay, 80*time.Second)
				st := r.stats[0]
				t.Logf("seed %d: received %.0f bit/s, TCP-fair %.0f bit/s at p %.4f (%.2f×); asked %.0f; gateway: fair %.0f, p %.4f, RTT %v",
					seed, got.BitsPerSecond(), fair.BitsPerSecond(), p, float64(got/fair), ask.BitsPerSecond(), st.Fair.BitsPerSecond(), st.Controller.LossEventRate, st.RTT)
				k := r.core.Counters()
				t.Logf("seed %d: %d AgentThrottles asserted, %d rewritten, %d datagrams dropped at full queues", seed, k.Asserts, k.Rewrites, k.Drops[QueueFull])
				if q := float64(got / fair); q < tc.lo || q > tc.hi {
					t.Errorf("seed %d: received %.2f× the TCP-fair rate", seed, q)
				}
			}
		})
	}
}

// cv is the coefficient of variation of rates: their standard deviation
// over their mean.
func cv(rs []ratecalc.Rate) float64 {
	var sum, sq float64
	for _, r := range rs {
		sum += float64(r)
	}
	mean := sum / float64(len(rs))
	for _, r := range rs {
		sq += (float64(r) - mean) * (float64(r) - mean)
	}
	return math.Sqrt(sq/float64(len(rs))) / mean
}

// TestClientSideBehindGateway: a viewer that also runs fairgrid's client
// side (the sidecar or the proxy: the circuit tracker at the viewer and a
// request every 5 s) behind the gateway gets at most the lesser of the two
// fair rates, within ±20 % of the TCP-fair rate, and the two do not fight:
// the rate in force varies no more than with the gateway alone (its
// coefficient of variation at most 1.5 times that, plus 0.05). Same
// simulation and link as TestStockViewerGetsFairRate, TFRC on both sides.
//
// They fought before the gateway numbered the region's datagrams in
// departure order (renumber.go): its fair queuing reordered them across
// channels, the client side's NDUPACK rule read the reordering as loss, and
// the client asked for as little as 64 kbit/s (0.66× the TCP-fair rate,
// variation 0.47 against 0.25 alone).
func TestClientSideBehindGateway(t *testing.T) {
	const delay = 50 * time.Millisecond
	ask := ratecalc.RateFromBits(1_500_000)
	for _, seed := range seeds(3, 5, 9) {
		sc := simConfig{loss: 0.03, delay: delay, viewers: []ratecalc.Rate{ask}, ctl: throttle.TFRC,
			run: 120 * time.Second, warmup: 40 * time.Second, seed: seed}
		alone := runSim(t, sc)
		sc.sidecar = throttle.TFRC
		both := runSim(t, sc)
		v, st := both.viewers[0], both.stats[0]
		fair, got, _ := tcpFair(v, 2*delay, 80*time.Second)
		judged := func(rs []ratecalc.Rate) []ratecalc.Rate { return rs[len(rs)/3:] } // after the warm-up
		var lost, reordered uint64
		for _, c := range v.tracker.Circuits() {
			d := c.Stats(circuit.Down)
			lost, reordered = d.Lost, d.Reordered
		}
		t.Logf("seed %d: received %.2f× the TCP-fair rate (gateway alone %.2f×); the rate in force varies %.3f (gateway alone %.3f); "+
			"the client side counted %d lost (the link dropped %d originals) and %d reordered; largest queueing delay by channel %v",
			seed, float64(got/fair), float64(tcpFairRatio(alone.viewers[0], 2*delay)), cv(judged(v.inForce)), cv(judged(alone.viewers[0].inForce)),
			lost, len(v.droppedAt), reordered, st.Delay)
		if st.Asked == 0 || st.Rate > st.Asked*1.001 || st.Fair > 0 && st.Rate > st.Fair*1.001 {
			t.Errorf("seed %d: rate in force %v: want at most the client's %v and the gateway's %v", seed, st.Rate, st.Asked, st.Fair)
		}
		if q := float64(got / fair); q < 0.8 || q > 1.2 {
			t.Errorf("seed %d: received %.2f× the TCP-fair rate", seed, q)
		}
		if cb, ca := cv(judged(v.inForce)), cv(judged(alone.viewers[0].inForce)); cb > 1.5*ca+0.05 {
			t.Errorf("seed %d: the rate in force varies %.3f with both sides, %.3f with the gateway alone", seed, cb, ca)
		}
		if reordered > 0 {
			t.Errorf("seed %d: the client side saw %d datagrams out of order", seed, reordered)
		}
		if len(v.asks) < 20 {
			t.Errorf("seed %d: the client side asked %d times in 120 s", seed, len(v.asks))
		}
	}
}

// tcpFairRatio is what a viewer received over the TCP-fair rate.
func tcpFairRatio(v *simViewer, rtt time.Duration) ratecalc.Rate {
	fair, got, _ := tcpFair(v, rtt, 80*time.Second)
	return got / fair
}

package gateway

import (
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
			for _, seed := range []uint64{3, 5, 9} {
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

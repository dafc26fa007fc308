package gateway

import (
	"cmp"
	"math"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/circuit"
)

// tcpFair is the TCP-fair rate of what a simulated viewer received after
// the warm-up by the TFRC equation at the viewer's own packets: RFC 5348
// §3.1 at the loss event rate of the dropped originals grouped by the
// link's round trip, that round trip, and the mean datagram received (s as
// RFC 5348 and window tracking take it by default); and what it received.
// docs/fairness.md shows this per-packet rate starving a viewer beside real
// TCP: it is what tfrc and window aim at, not one share (tcpShare).
func tcpFair(v *simViewer, rtt, d time.Duration) (fair, received ratecalc.Rate, p float64) {
	w := &v.after
	p = float64(truthEvents(w.dropped, rtt)) / float64(w.originals)
	s := w.payload / float64(w.deliveredOrigins)
	return ratecalc.TFRCRate(s, rtt, p), ratecalc.RateFromDelta(float64(w.bytes), d), p
}

// tcpShare is one TCP share on the simulated link, the project's
// TCP-fair rate (docs/fairness.md; the audit's Circuit.FairTCP): one bulk
// flow of 1,460-byte segments (ratecalc.TCPShareRate: the TFRC equation,
// with CUBIC's window where that is the larger), at the loss event rate
// per segment of the bytes the viewer received (no more events than whole
// segments' worth of bytes were dropped: ratecalc.SegmentLossEventRateOver),
// from the link's ground truth, and the link's round trip. At random loss
// a segment is lost as often per byte as the viewer's datagrams, so this
// is what a TCP flow beside it gets; the audit's estimate of it was
// 0.78–0.97 of a real gVisor CUBIC flow at 3 % loss (docs/fairness.md).
func tcpShare(v *simViewer, rtt time.Duration) (share ratecalc.Rate, pSeg float64) {
	w := &v.after
	s := w.payload / float64(w.deliveredOrigins)
	pSeg = ratecalc.SegmentLossEventRateOver(float64(w.bytes), float64(len(w.dropped)), float64(truthEvents(w.dropped, rtt)), s)
	return ratecalc.TCPShareRate(ratecalc.NominalSegmentSize, rtt, pSeg), pSeg
}

// TestStockViewerGetsFairRate: a stock viewer asking for 1,500 kbit/s on
// a link with 3 % loss each way and 50 ms each way (the demo's delay; a
// 100 ms round trip) receives within ±20 % of the TCP-fair rate through
// the gateway, where without it the region would send what it asks.
// Virtual time, 120 s of which the last 80 are judged, three seeds.
//
// The TCP-fair rate is one TCP share (tcpShare), the project's and the
// issue's: the stock viewer's 1,500 kbit/s is about twice it here
// (docs/gateway.md gives the measured ratio). The default controller, vtcp, is held to ±20 % of it. The
// baselines aim elsewhere and are held to their own models: tfrc to ±20 %
// of the TFRC equation at the viewer's mean datagram (tcpFair), window
// tracking to [0.8, 1.5] of it (Reno's steady state is the Mathis rate,
// 1.22·s/(R·√p), about 1.25× the TFRC equation at p ≈ 2.5 %, whose RTO
// term Mathis lacks). Both are 0.4–0.6 of one share: the equation at the
// viewer's 570-byte mean datagram is 0.39 of the same equation at 1,460
// bytes. With the nominal segment (control.segment = "nominal", TFRC-SP's
// s) tfrc reaches one share at random loss too; at drop-tail loss it does
// not (docs/fairness.md), which is why vtcp is the default.
func TestStockViewerGetsFairRate(t *testing.T) {
	const delay = 50 * time.Millisecond
	ask := ratecalc.RateFromBits(1_500_000)
	for _, tc := range []struct {
		ctl     throttle.ControllerName
		segment throttle.Segment
		share   bool // judged against one share (tcpShare), else the equation at the mean datagram (tcpFair)
		lo, hi  float64
	}{
		{throttle.VirtualTCP, "", true, 0.8, 1.2},
		{throttle.TFRC, throttle.SegmentNominal, true, 0.8, 1.2},
		{throttle.TFRC, "", false, 0.8, 1.2},
		{throttle.Window, "", false, 0.8, 1.5},
	} {
		t.Run(string(tc.ctl)+"/"+cmp.Or(string(tc.segment), "default"), func(t *testing.T) {
			for _, seed := range seeds(3, 5, 9) {
				r := runSim(t, simConfig{loss: 0.03, delay: delay, viewers: []ratecalc.Rate{ask}, ctl: tc.ctl, segment: tc.segment,
					run: 120 * time.Second, warmup: 40 * time.Second, seed: seed})
				fair, got, p := tcpFair(r.viewers[0], 2*delay, 80*time.Second)
				share, pSeg := tcpShare(r.viewers[0], 2*delay)
				st := r.stats[0]
				t.Logf("seed %d: received %.0f bit/s: %.2f× one share (%.0f bit/s at p %.4f per segment), %.2f× the equation at the mean datagram (%.0f bit/s at p %.4f); "+
					"the ask is %.2f× one share; gateway: fair %.0f, p %.4f, RTT %v",
					seed, got.BitsPerSecond(), float64(got/share), share.BitsPerSecond(), pSeg, float64(got/fair), fair.BitsPerSecond(), p,
					float64(ask/share), st.Fair.BitsPerSecond(), st.Controller.LossEventRate, st.RTT)
				k := r.core.Counters()
				t.Logf("seed %d: %d AgentThrottles asserted, %d rewritten, %d datagrams dropped at full queues", seed, k.Asserts, k.Rewrites, k.Drops[QueueFull])
				q := float64(got / fair)
				if tc.share {
					q = float64(got / share)
				}
				if q < tc.lo || q > tc.hi {
					t.Errorf("seed %d: received %.2f× the rate it is judged against, want %.2f–%.2f", seed, q, tc.lo, tc.hi)
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
// fair rates, and the two do not fight: the rate in force varies no more
// than with the gateway alone (its coefficient of variation at most 1.5
// times that, plus 0.05). Same simulation and link as
// TestStockViewerGetsFairRate, the same controller on both sides: vtcp, the
// default, judged against one TCP share, and tfrc against its own equation.
// The lesser of two estimates, each a little under one share alone
// (0.86–0.88 for vtcp), is lower than either: vtcp's pair is held to
// 0.7–1.2, tfrc's to ±20 %.
//
// They fought before the gateway numbered the region's datagrams in
// departure order (renumber.go): its fair queuing reordered them across
// channels, the client side's NDUPACK rule read the reordering as loss, and
// the client asked for as little as 64 kbit/s (0.66× the TCP-fair rate,
// variation 0.47 against 0.25 alone).
func TestClientSideBehindGateway(t *testing.T) {
	const delay = 50 * time.Millisecond
	ask := ratecalc.RateFromBits(1_500_000)
	for _, tc := range []struct {
		ctl    throttle.ControllerName
		share  bool // judged against one share, else the equation at the mean datagram
		lo, hi float64
	}{{throttle.VirtualTCP, true, 0.7, 1.2}, {throttle.TFRC, false, 0.8, 1.2}} {
		t.Run(string(tc.ctl), func(t *testing.T) {
			ratio := func(v *simViewer) float64 {
				fair, got, _ := tcpFair(v, 2*delay, 80*time.Second)
				if tc.share {
					fair, _ = tcpShare(v, 2*delay)
				}
				return float64(got / fair)
			}
			for _, seed := range seeds(3, 5, 9) {
				sc := simConfig{loss: 0.03, delay: delay, viewers: []ratecalc.Rate{ask}, ctl: tc.ctl,
					run: 120 * time.Second, warmup: 40 * time.Second, seed: seed}
				alone := runSim(t, sc)
				sc.sidecar = tc.ctl
				both := runSim(t, sc)
				v, st := both.viewers[0], both.stats[0]
				judged := func(rs []ratecalc.Rate) []ratecalc.Rate { return rs[len(rs)/3:] } // after the warm-up
				var lost, reordered uint64
				for _, c := range v.tracker.Circuits() {
					d := c.Stats(circuit.Down)
					lost, reordered = d.Lost, d.Reordered
				}
				q := ratio(v)
				t.Logf("seed %d: received %.2f× the TCP-fair rate (gateway alone %.2f×); the rate in force varies %.3f (gateway alone %.3f); "+
					"the client side counted %d lost (the link dropped %d originals) and %d reordered; largest queueing delay by channel %v",
					seed, q, ratio(alone.viewers[0]), cv(judged(v.inForce)), cv(judged(alone.viewers[0].inForce)),
					lost, len(v.droppedAt), reordered, st.Delay)
				if st.Asked == 0 || st.Rate > st.Asked*1.001 || st.Fair > 0 && st.Rate > st.Fair*1.001 {
					t.Errorf("seed %d: rate in force %v: want at most the client's %v and the gateway's %v", seed, st.Rate, st.Asked, st.Fair)
				}
				if q < tc.lo || q > tc.hi {
					t.Errorf("seed %d: received %.2f× the TCP-fair rate, want %.2f–%.2f", seed, q, tc.lo, tc.hi)
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
		})
	}
}

package ratecalc

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// TestSteadyState: on a link with random loss and spare capacity, TFRC's
// mean rate is within ±15 % of the TFRC equation at the loss event rate and
// RTT it measured, and window tracking within ±20 % of the Mathis rate,
// which Reno's AIMD follows (congestion.md §6.7).
func TestSteadyState(t *testing.T) {
	const size = 1200
	for _, loss := range []float64{0.0001, 0.005, 0.03, 0.1} {
		for _, rttMs := range []int{50, 100, 300} {
			delay := time.Duration(rttMs) * time.Millisecond / 2
			t.Run(fmt.Sprintf("p=%v/R=%dms", loss, rttMs), func(t *testing.T) {
				t.Parallel()
				dur := runFor(loss, delay, 150)
				warm := dur / 5
				cfg := linkConfig{delay: delay, loss: loss, size: size, seed: uint64(rttMs)*1000 + uint64(loss*1e6)}

				tf := runLink(mustTFRC(t, TFRCConfig{}), cfg, dur, warm)
				want := TFRCRate(size, tf.meanRTT, tf.lossEvent)
				t.Logf("TFRC   mean %v, equation %v at p=%.5f R=%v (%+.1f%%), %d loss events in %v",
					tf.meanRate, want, tf.lossEvent, tf.meanRTT, 100*relErr(tf.meanRate, want), tf.events, dur)
				if e := relErr(tf.meanRate, want); e < -0.15 || e > 0.15 {
					t.Errorf("TFRC mean rate %v is %+.1f%% from the equation's %v", tf.meanRate, 100*e, want)
				}

				wt := runLink(mustWindow(t, WindowConfig{}), cfg, dur, warm)
				wantW := MathisRate(size, wt.meanRTT, wt.lossEvent)
				t.Logf("window mean %v, Mathis %v at p=%.5f R=%v (%+.1f%%), %d loss events",
					wt.meanRate, wantW, wt.lossEvent, wt.meanRTT, 100*relErr(wt.meanRate, wantW), wt.events)
				if e := relErr(wt.meanRate, wantW); e < -0.20 || e > 0.20 {
					t.Errorf("window tracking mean rate %v is %+.1f%% from the Mathis rate %v", wt.meanRate, 100*e, wantW)
				}
			})
		}
	}
}

// TestConvergence: after a step from 0.5 % to 3 % loss, window tracking is
// within ±20 % of its new steady rate within 3 request intervals (15 s).
// The test measures TFRC's time too and prints both with -v: the thesis
// reported that window tracking converges faster than the equation.
// "Within" means the mean over 40 seeds of the request k intervals after the
// step, and of the two requests after it; the new steady rate is each
// controller's own mean on a long run at 3 % (congestion.md: window tracking
// follows the Mathis rate, TFRC the TFRC equation).
func TestConvergence(t *testing.T) {
	const (
		seeds     = 40
		stepAt    = 300 * time.Second
		delay     = 50 * time.Millisecond
		interval  = 5 * time.Second
		horizon   = 24 // intervals after the step
		tolerance = 0.20
	)
	step := func(d time.Duration) float64 {
		if d < stepAt {
			return 0.005
		}
		return 0.03
	}
	controllers := []struct {
		name string
		make func() Controller
	}{
		{"window tracking", func() Controller { return mustWindow(t, WindowConfig{}) }},
		{"TFRC", func() Controller { return mustTFRC(t, TFRCConfig{}) }},
	}
	converged := map[string]int{}
	for _, c := range controllers {
		steady := runLink(c.make(), linkConfig{delay: delay, loss: 0.03, seed: 99}, 3000*time.Second, 300*time.Second).meanRate
		mean := make([]float64, horizon+1)
		for seed := range uint64(seeds) {
			r := runLink(c.make(), linkConfig{delay: delay, lossAt: step, seed: seed + 1}, stepAt+time.Duration(horizon+1)*interval, stepAt)
			base := int(stepAt / interval)
			for k := 0; k <= horizon; k++ {
				mean[k] += float64(r.requested[base+k]) / seeds
			}
		}
		within := func(k int) bool {
			for j := k; j <= min(k+2, horizon); j++ {
				if e := mean[j]/float64(steady) - 1; e < -tolerance || e > tolerance {
					return false
				}
			}
			return true
		}
		converged[c.name] = -1
		for k := 0; k <= horizon; k++ {
			if within(k) {
				converged[c.name] = k
				break
			}
		}
		t.Logf("%s: steady rate at 3 %% %v; mean request k intervals after the step, as a share of it:", c.name, steady)
		for k := 0; k <= 8; k++ {
			t.Logf("  k=%d (%2ds): %.2f", k, k*5, mean[k]/float64(steady))
		}
		t.Logf("%s converges (±20%%) after %d intervals (%ds)", c.name, converged[c.name], converged[c.name]*5)
	}
	if k := converged["window tracking"]; k < 0 || k > 3 {
		t.Errorf("window tracking took %d intervals to converge, want ≤ 3", k)
	}
	if k := converged["TFRC"]; k < 0 {
		t.Error("TFRC did not converge within the horizon")
	}
}

// TestViewerBaseline: the stock viewer's rule, with today's default
// bandwidth preference (3000, so 4.5 Mbit/s requested) over a 5-minute
// session, stays 2–8× above the TCP-fair rate at 3 % and 10 % loss (fair
// rate: the TFRC equation at the link's loss probability and the measured
// RTT, as congestion.md §5.4 computes it). It only walks down 10 % of the
// setting per 5 s and ignores RTT. Longer sessions drift lower at 3 %:
// about half of the 5 s windows measure more than 3 %.
func TestViewerBaseline(t *testing.T) {
	for _, loss := range []float64{0.03, 0.1} {
		for _, rttMs := range []int{100} {
			v, err := NewViewer(ViewerConfig{Setting: Rate(3000 * 1024 / 8)})
			if err != nil {
				t.Fatal(err)
			}
			r := runLink(v, linkConfig{delay: time.Duration(rttMs) * time.Millisecond / 2, loss: loss, seed: 7}, 300*time.Second, 0)
			fair := TFRCRate(defaultSegmentSize, r.meanRTT, loss)
			ratio := float64(r.meanRecv / fair)
			t.Logf("p=%v R=%dms: viewer receives %v on average, fair %v: %.2f×", loss, rttMs, r.meanRecv, fair, ratio)
			if ratio < 2 || ratio > 8 {
				t.Errorf("p=%v: the viewer baseline is %.2f× the fair rate, want 2–8×", loss, ratio)
			}
		}
	}
}

// TestViewerRule checks the rule step by step.
func TestViewerRule(t *testing.T) {
	v, _ := NewViewer(ViewerConfig{Setting: 1000})
	t0 := time.Unix(0, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	feed := func(sec, recv, lost int) Rate {
		for range recv {
			v.OnPacket(Packet{At: at(sec), Size: 1000})
		}
		for range lost {
			v.OnPacket(Packet{At: at(sec), Lost: true})
		}
		return v.Rate(at(sec + 5))
	}
	for i, tc := range []struct {
		recv, lost int
		want       Rate
	}{
		{100, 0, 1500}, // at the 1.5 cap
		{96, 4, 1400},  // 4 % > 3 %: tighten
		{97, 3, 1400},  // 3 % is not above 3 %: hold
		{199, 1, 1500}, // 0.5 %: ease
		{0, 0, 1500},   // nothing received: hold
		{50, 50, 1400}, // tighten one step only
		{1, 99, 1300},
	} {
		if got := feed(5*i, tc.recv, tc.lost); math.Abs(float64(got-tc.want)) > 1e-9 {
			t.Errorf("step %d (%d received, %d lost): %v B/s, want %v", i, tc.recv, tc.lost, float64(got), float64(tc.want))
		}
	}
	for range 20 {
		feed(200, 10, 10)
	}
	if got := v.Rate(at(400)); math.Abs(float64(got)-200) > 1e-9 { // floor 0.2
		t.Errorf("floor: %v", float64(got))
	}
}

// TestApplicationLimited: an application sending at 20 % of the rate its
// path allows (the Mathis rate at 0.1 % loss) does not drive either
// controller up without bound: requests stay within about twice what the
// flow uses (RFC 7661's limit for window tracking, 2·X_recv for TFRC) and
// do not creep up over half an hour.
func TestApplicationLimited(t *testing.T) {
	const loss, delay = 0.001, 50 * time.Millisecond
	app := MathisRate(defaultSegmentSize, 2*delay, loss) / 5
	for _, c := range []struct {
		name string
		ctrl Controller
	}{
		{"window tracking", mustWindow(t, WindowConfig{})},
		{"TFRC", mustTFRC(t, TFRCConfig{})},
	} {
		r := runLink(c.ctrl, linkConfig{delay: delay, loss: loss, appRate: app, seed: 3}, 1800*time.Second, 600*time.Second)
		peak := func(from, to int) Rate {
			p := Rate(0)
			for _, x := range r.requested[from:to] {
				p = max(p, x)
			}
			return p
		}
		n := len(r.requested)
		early, late := peak(n/10, n/2), peak(n/2, n)
		t.Logf("%s: application at %v, requests peak at %v (first half %v)", c.name, app, late, early)
		if late > 2.2*app {
			t.Errorf("%s: requests reach %v, more than twice the %v the application uses", c.name, late, app)
		}
		if late > early*1.05 {
			t.Errorf("%s: requests creep up from %v to %v while application-limited", c.name, early, late)
		}
	}
}

// TestCongestedBottleneck: with no random loss, a FIFO bottleneck's drops
// are the only loss. Both controllers settle below the capacity instead of
// overrunning the buffer, and keep most of it.
func TestCongestedBottleneck(t *testing.T) {
	const capacity = Rate(250_000) // 2 Mbit/s
	for _, c := range []struct {
		name string
		ctrl Controller
	}{
		{"window tracking", mustWindow(t, WindowConfig{})},
		{"TFRC", mustTFRC(t, TFRCConfig{})},
	} {
		r := runLink(c.ctrl, linkConfig{delay: 25 * time.Millisecond, capacity: capacity, buffer: 20, seed: 5}, 1200*time.Second, 300*time.Second)
		t.Logf("%s: receives %v of %v capacity, packet loss %.3f%%, loss event rate %.4f", c.name, r.meanRecv, capacity, 100*r.packetLoss, r.lossEvent)
		if r.meanRecv > capacity || r.meanRecv < capacity/4 {
			t.Errorf("%s: receives %v on a %v bottleneck", c.name, r.meanRecv, capacity)
		}
		if r.events == 0 {
			t.Errorf("%s never filled the buffer", c.name)
		}
	}
}

// TestBurstyLoss: with losses in bursts (mean 4 packets, same mean rate),
// a burst within one RTT is one loss event, so both controllers measure a
// lower loss event rate and still track their equations.
func TestBurstyLoss(t *testing.T) {
	const loss, delay = 0.03, 50 * time.Millisecond
	random := runLink(mustTFRC(t, TFRCConfig{}), linkConfig{delay: delay, loss: loss, seed: 11}, 1200*time.Second, 200*time.Second)
	bursty := runLink(mustTFRC(t, TFRCConfig{}), linkConfig{delay: delay, loss: loss, burstLen: 4, seed: 11}, 1200*time.Second, 200*time.Second)
	t.Logf("TFRC at 3 %% loss: random p=%.4f rate %v; bursts of 4: p=%.4f rate %v", random.lossEvent, random.meanRate, bursty.lossEvent, bursty.meanRate)
	if bursty.lossEvent >= random.lossEvent*0.6 {
		t.Errorf("bursty loss event rate %.4f, random %.4f: bursts should merge into events", bursty.lossEvent, random.lossEvent)
	}
	if e := relErr(bursty.meanRate, TFRCRate(defaultSegmentSize, bursty.meanRTT, bursty.lossEvent)); e < -0.15 || e > 0.15 {
		t.Errorf("TFRC under bursty loss is %+.1f%% from its equation", 100*e)
	}
	if bursty.packetLoss < 0.025 || bursty.packetLoss > 0.035 {
		t.Errorf("bursty packet loss %.4f, want about 0.03", bursty.packetLoss)
	}
}

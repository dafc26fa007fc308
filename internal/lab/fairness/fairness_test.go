package fairness

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/scenario"
	"github.com/fairgrid/fairgrid/throttle"
)

// The subset make test runs: real gVisor TCP on the real clock, so every
// run of every test here goes at once, each a few tens of seconds; the
// decision interval is 1 s instead of the product's 5 s so that the
// controllers settle within the budget (the whole grid, `fairgrid lab
// fairness`, runs at 5 s).
const (
	subsetSeeds    = 5
	subsetInterval = time.Second
	subsetWarmup   = 15 * time.Second
	subsetDuration = 40 * time.Second
)

// subsetCells cover the two regimes: a drop-tail queue of a few
// bandwidth-delay products with no random loss (the viewer's losses are
// the queue's overflows, where per-packet rates starve it), and 3 %
// random loss (where its packets are lost as TCP's).
// gVisor's CUBIC: gVisor's Reno is not Reno (tcpflow's doc) and Linux's
// TCP needs root and more time. gVisor's CUBIC takes less than Linux's
// reno and CUBIC beside it in most cells where the queue overflows (not
// on a bloated link, where it takes more than Linux's reno;
// docs/fairness.md, "The control: TCP beside TCP"): one share beside it
// is this subset's claim; the grid measures the others.
func subsetCells(ctl throttle.ControllerName) []Cell {
	base := Cell{Controller: ctl, TCP: GVisorCUBIC, Flows: 1, Buffer: 30, RTTms: 40, LinkBPS: 2_000_000}
	// 3 % loss at 80 ms: at 40 ms the viewer measured 1.41× (1.29–1.63
	// over five seeds), where gVisor's TCP, without RACK, waits for a
	// 200 ms retransmission timeout after a lost retransmission — five
	// round trips — and gets half what the TFRC equation gives a TCP flow
	// at its loss (docs/fairness.md: where it cannot be trusted).
	lossy := base
	lossy.Loss, lossy.RTTms = 0.03, 80
	return []Cell{base, lossy}
}

// baselineCell is where today's low shares were measured: the grid's
// centre (6 Mbit/s, 80 ms, 100 packets).
func baselineCell(ctl throttle.ControllerName) Cell {
	c := Base
	c.Controller, c.TCP = ctl, GVisorCUBIC
	return c
}

// The hard bounds on a cell's pooled ratio, whatever its spread: the
// band [0.8, 1.25] widened by a fifth each way, what one cell's pooled
// ratio moved between identical batches of five seeds (0.98 and 1.41 at
// 3 % loss, where TCP's own rate varies by a third from seed to seed).
const (
	hardLow  = 0.8 / 1.2
	hardHigh = 1.25 * 1.2
)

// maxShortfall is how much less than its throttle a region may send and
// the run still count as saturating.
const maxShortfall = 0.1

type subsetRun struct {
	cell Cell
	opt  Options
	res  Result
	err  error
}

// runAll runs every (cell, options) at once and returns them in order.
func runAll(t *testing.T, runs []subsetRun) []subsetRun {
	t.Helper()
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			r := &runs[i]
			r.res, r.err = Run(context.Background(), r.cell, r.opt)
		})
	}
	wg.Wait()
	for _, r := range runs {
		if r.err != nil {
			t.Fatalf("%v seed %d: %v", r.cell, r.opt.Seed, r.err)
		}
	}
	return runs
}

func subsetOptions(seed uint64) Options {
	return Options{Warmup: subsetWarmup, Duration: subsetDuration, Interval: subsetInterval, Seed: seed}
}

// TestShares is the verification in one batch of concurrent runs,
// so that make test pays for it once (about 60 s of wall time):
//
//   - the default controller's viewer gets 0.8–1.25× the TCP flow's
//     bytes/s in the centre cell (no random loss: the viewer's losses
//     are the queue's overflows), pooled over five seeds (Σ viewer ÷
//     Σ TCP), with the seeds' own spread as the tolerance: the cell
//     passes if the pooled ratio ± 2 standard errors of the per-seed
//     ratios overlaps [0.8, 1.25], and the pooled ratio lies within
//     [0.67, 1.5] whatever the spread (hardLow, hardHigh);
//   - at 3 % random loss one share is not yet shown to hold (the viewer
//     takes about what the TFRC equation gives a TCP flow there, gVisor's
//     CUBIC less): logged, and the hard bounds asserted;
//   - window tracking and RFC 5348 TFRC, in the grid's centre where the
//     issue measured them, stay below 0.8× by the same tolerance
//     (today's low shares, reproduced, not assumed);
//   - at 10 % random loss the default controller takes no more than 1.25×
//     the TCP flow's bytes (pooled over five seeds, less 2 SE: gVisor's
//     TCP at 10 % loss spends seconds in timeouts, and one seed's 40 s
//     varies by ±40 %);
//   - three viewers alone on a bottleneck share it within Jain ≥ 0.95
//     in every seed (checkAlone);
//   - three viewers beside one TCP flow share within Jain ≥ 0.95 (bytes
//     pooled over three seeds); each gets at least severalFloor of the
//     TCP flow, and whether it reaches 0.8–1.25× is logged: not under
//     load (checkSeveral);
//   - responsiveness, three seeds each way: when the TCP flow stops, the
//     viewer reaches 90 % of the link within 8 intervals (the median; each
//     seed within 16); when a TCP flow starts beside a viewer that had the
//     link, the viewer has given way: over the 15 intervals after and
//     over the rest of the run, it takes at most twice the newcomer's
//     bytes and at least hardLow of them, pooled over the seeds (a
//     viewer that kept 1.8 of the 2 Mbit/s would take 9×; one share,
//     1.25 at most, is the centre cell's claim); and neither beside TCP
//     (the centre cell's measured part, every seed) nor after TCP stops
//     has the per-second rate an oscillation of period ≤ 2 intervals (no
//     up-down alternation over 4 s with swings beyond half its mean).
func TestShares(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time gVisor TCP runs (about 60 s): not in -short")
	}
	if raceEnabled {
		t.Skip("under the race detector gVisor's TCP runs slower than real time and the shares measure the detector (make test runs this package without it, in scale)")
	}
	// TestReferenceSeat runs beside it (both wait on real time, not the
	// cores); TestProductSeats runs alone after them: beside both, at the
	// lab step's load, its gateway-and-sidecar row fell to 0.64 of CUBIC.
	t.Parallel()
	def := throttle.DefaultController
	var runs []subsetRun
	for _, c := range subsetCells(def) {
		for s := range subsetSeeds {
			runs = append(runs, subsetRun{cell: c, opt: subsetOptions(uint64(s + 1))})
		}
	}
	for _, ctl := range []throttle.ControllerName{throttle.Window, throttle.TFRC} {
		c := baselineCell(ctl)
		for s := range subsetSeeds {
			runs = append(runs, subsetRun{cell: c, opt: subsetOptions(uint64(s + 1))})
		}
	}
	heavy := subsetCells(def)[0]
	heavy.Loss = 0.1
	for s := range subsetSeeds {
		runs = append(runs, subsetRun{cell: heavy, opt: subsetOptions(uint64(s + 1))})
	}
	several := subsetCells(def)[0]
	several.Viewers = 3
	several.LinkBPS = 4_000_000
	for s := range 3 {
		runs = append(runs, subsetRun{cell: several, opt: subsetOptions(uint64(s + 1))})
	}
	alone := several
	alone.Flows = 0
	for s := range 3 {
		runs = append(runs, subsetRun{cell: alone, opt: subsetOptions(uint64(s + 1))})
	}
	// Responsiveness, over responsiveSeeds each way: TCP stops at the
	// warm-up's end; TCP starts after the warm-up's time of the viewer
	// alone.
	for s := range responsiveSeeds {
		o := subsetOptions(uint64(s + 1))
		o.Warmup, o.Duration, o.TCPStop = 0, subsetWarmup+subsetDuration, subsetWarmup
		runs = append(runs, subsetRun{cell: subsetCells(def)[0], opt: o})
		o = subsetOptions(uint64(s + 2))
		o.Warmup, o.Duration, o.TCPStart = 0, subsetWarmup+subsetDuration, subsetWarmup
		runs = append(runs, subsetRun{cell: subsetCells(def)[0], opt: o})
	}

	runs = runAll(t, runs)
	byCell := map[Cell][]Result{}
	var order []Cell
	for _, r := range runs {
		if r.opt.TCPStop > 0 || r.opt.TCPStart > 0 {
			continue
		}
		if _, ok := byCell[r.cell]; !ok {
			order = append(order, r.cell)
		}
		byCell[r.cell] = append(byCell[r.cell], r.res)
	}
	for _, c := range order {
		rs := byCell[c]
		row := Summarize(rs)
		sd, lo, hi := Spread(rs)
		// Saturating demand is the premise: a region that sent less than
		// its throttle allowed (the sender ran late on a loaded machine)
		// measured the machine, not the controller. Said, and failed.
		for _, r := range rs {
			if r.SenderShortfall > maxShortfall {
				t.Errorf("%v seed %d: the region sent %.0f %% less than its throttle allowed: not saturating, the machine is too loaded to judge (load the report of this run with care)", c, r.Seed, 100*r.SenderShortfall)
			}
		}
		se := sd / math.Sqrt(float64(len(rs)))
		t.Logf("%v: viewer %.0f kbit/s, TCP %.0f kbit/s per flow, viewer ÷ TCP %.2f (sd %.2f, %.2f–%.2f, %d seeds), viewer p %.5f, TCP p %.5f, audit's estimate ÷ TCP %.2f",
			c, row.ViewerBPS/1000, row.TCPBPSPerFlow/1000, row.ViewerOverTCP, sd, lo, hi, len(rs), row.ViewerP, row.TCPPEquiv, AuditOverTCP(rs))
		m := row.ViewerBPS / row.TCPBPSPerFlow
		switch {
		case c.Flows == 0:
			checkAlone(t, c, rs)
		case c.Viewers == 3:
			checkSeveral(t, c, rs)
		case c.Loss >= 0.1:
			// At most one share: the pooled ratio less its tolerance.
			t.Logf("  viewer ÷ TCP %.2f ± %.2f (2 SE) at 10 %% loss (bytes pooled over the seeds; one share: ≤ 1.25)", m, 2*se)
			if m-2*se > 1.25 || m > hardHigh {
				t.Errorf("%v: viewer ÷ TCP %.2f ± %.2f (2 SE) at 10 %% loss (bytes pooled over the seeds), want ≤ 1.25 within the tolerance and ≤ %g", c, m, 2*se, hardHigh)
			}
		case c.Controller == def && c.Loss > 0:
			// 3 % loss: logged, the hard bounds asserted. The viewer takes
			// what the TFRC equation gives a TCP flow at its loss event
			// rate; gVisor's CUBIC gets less there, and the ratio measured
			// 1.23–1.43 pooled over five seeds in nine batches, over the
			// band beyond 2 SE in seven of them (docs/fairness.md; counting
			// the queue in the cap's RTT brought it to 1.24 in one batch
			// but starved the long and fast paths, and was taken back).
			reached := "reaches"
			if m+2*se < 0.8 || m-2*se > 1.25 {
				reached = "does NOT reach"
			}
			t.Logf("  pooled viewer ÷ TCP %.2f ± %.2f (2 SE): %s one share, 0.8–1.25", m, 2*se, reached)
			if m < hardLow || m > hardHigh {
				t.Errorf("%v: pooled viewer ÷ TCP %.2f ± %.2f (2 SE), want within [%g, %g]", c, m, 2*se, hardLow, hardHigh)
			}
		case c.Controller == def:
			// One share: the pooled ratio ± 2 SE reaches [0.8, 1.25], and
			// lies within the hard bounds.
			t.Logf("  pooled viewer ÷ TCP %.2f ± %.2f (2 SE); one share: 0.8–1.25", m, 2*se)
			if m+2*se < 0.8 || m-2*se > 1.25 || m < hardLow || m > hardHigh {
				t.Errorf("%v: pooled viewer ÷ TCP %.2f ± %.2f (2 SE), want it to reach 0.8–1.25 and within [%g, %g]", c, m, 2*se, hardLow, hardHigh)
				logTrace(t, rs[0])
			}
			// No oscillation of period ≤ 2 intervals beside TCP either.
			for _, r := range rs {
				from := min(int(subsetWarmup/time.Second), len(r.ViewerPerSecond))
				checkNoFastOscillation(t, r.ViewerPerSecond[from:], subsetInterval)
			}
		default:
			if m+2*se >= 0.8 {
				t.Errorf("%v: baseline pooled viewer ÷ TCP %.2f ± %.2f (2 SE), want below 0.8 (today's low share)", c, m, 2*se)
			}
		}
	}
	var took []time.Duration
	var starts []Result
	var startOpt Options
	for _, r := range runs {
		switch {
		case r.opt.TCPStop > 0:
			took = append(took, takesLink(t, r.res, r.opt))
		case r.opt.TCPStart > 0:
			starts, startOpt = append(starts, r.res), r.opt
		}
	}
	checkResponsive(t, "reached 90 % of the link after TCP stopped", took, takeBound*subsetInterval)
	checkGivesWay(t, starts, startOpt)
}

// severalFloor is the lowest share of the TCP flow's bytes each of three
// viewers may take before the test fails. It is NOT one share: three
// viewers beside one gVisor CUBIC flow took 0.82–0.99× each in four
// batches but 0.66–0.69× in one at load averages of 5–9 (pooled over
// three seeds; docs/fairness.md), so the band is logged and this floor
// catches a viewer starving.
const severalFloor = 0.5

// checkSeveral: three viewers share within Jain ≥ 0.95 (pooled over the
// seeds), each gets at least severalFloor of the TCP flow, and whether
// each reaches one share (0.8–1.25, ± 2 SE of the per-seed ratios) is
// logged.
func checkSeveral(t *testing.T, c Cell, rs []Result) {
	t.Helper()
	viewers := make([]float64, c.Viewers)
	var tcp float64
	for _, r := range rs {
		t.Logf("  seed %d: viewers %.0f kbit/s, TCP %.0f kbit/s, Jain %.3f", r.Seed, kbits(r.ViewerBPS), r.MeanTCP()/1000, scenario.Jain(r.ViewerBPS...))
		for i := range viewers {
			viewers[i] += r.ViewerBPS[i]
		}
		tcp += r.MeanTCP()
	}
	if j := scenario.Jain(viewers...); j < 0.95 {
		t.Errorf("%v: viewers' Jain index %.3f over the seeds, want ≥ 0.95", c, j)
	}
	for i, v := range viewers {
		var sum, sq float64
		for _, r := range rs {
			x := r.ViewerBPS[i] / r.MeanTCP()
			sum += x
			sq += x * x
		}
		n := float64(len(rs))
		se := math.Sqrt(max(sq-sum*sum/n, 0)/(n-1)) / math.Sqrt(n)
		x := v / tcp
		reached := "reaches"
		if x+2*se < 0.8 || x-2*se > 1.25 {
			reached = "does NOT reach"
		}
		t.Logf("  viewer %d: %.2f× the TCP flow pooled, ± %.2f (2 SE): %s one share", i, x, 2*se, reached)
		if x < severalFloor || x > hardHigh {
			t.Errorf("%v: viewer %d gets %.2f× the TCP flow over the seeds, want within [%g, %g]", c, i, x, severalFloor, hardHigh)
		}
	}
}

// checkAlone: viewers alone on a bottleneck share it within Jain ≥ 0.95
// (bytes pooled over the seeds, and in every seed), and together use at
// least half of it (a drop-tail queue of two bandwidth-delay products;
// alone, each request holds for an interval through its overshoot, so
// less than TCP's utilisation).
func checkAlone(t *testing.T, c Cell, rs []Result) {
	t.Helper()
	viewers := make([]float64, c.Viewers)
	for _, r := range rs {
		var sum float64
		for i, v := range r.ViewerBPS {
			viewers[i] += v
			sum += v
		}
		j := scenario.Jain(r.ViewerBPS...)
		t.Logf("  seed %d: viewers alone %.0f kbit/s, Jain %.3f, %.2f of the link", r.Seed, kbits(r.ViewerBPS), j, sum/c.LinkBPS)
		if j < 0.95 {
			t.Errorf("%v seed %d: viewers alone share within Jain %.3f, want ≥ 0.95", c, r.Seed, j)
		}
		if sum < 0.5*c.LinkBPS {
			t.Errorf("%v seed %d: viewers alone use %.2f of the link, want at least half", c, r.Seed, sum/c.LinkBPS)
		}
	}
	if j := scenario.Jain(viewers...); j < 0.95 {
		t.Errorf("%v: viewers alone share within Jain %.3f over the seeds, want ≥ 0.95", c, j)
	}
}

// Responsiveness, over responsiveSeeds runs each way.
//
// Taking the link: the median of the runs' times to 90 % of it is
// within takeBound intervals, each run's within twice that.
//
// Giving way: over the giveWindow intervals after a TCP flow starts, the
// viewer's bits pooled over the runs are at most giveRatio times the
// newcomer's, and so over the rest of the run (it does not take the link
// back; one share there is the centre cell's to assert); and at least
// hardLow times both (it gives way, not up). A viewer that
// kept 1.8 of the 2 Mbit/s would take 9× (TestGiveWayRatios). Measured over
// those 15 s, the viewer took 0.82–1.87× per run (41 runs: three
// experiment batches, four TestShares batches, CI's run), 1.29× pooled,
// and a gVisor CUBIC flow in its seat 0.85–2.35×, 1.35× pooled (20 runs):
// docs/fairness.md, "Responsiveness has a tail".
//
// Until 2026-12-05 the test was one run's first 3-second window with the
// viewer at 1.25× the newcomer, within 15 intervals. CI, under make
// test's load, saw 18 intervals, and a batch here 19: a first passage
// through 1.25, where the viewer's own mean sits, is decided by one noisy
// window (the CUBIC flow took 3–15 by that count). It is still logged.
const (
	responsiveSeeds = 3
	takeBound       = 8
	giveWindow      = 15
	giveRatio       = 2.0
)

// takesLink returns how long after TCP stopped the viewer first had
// 90 % of the link in a second, and checks the series after it for fast
// oscillation; -1 if never.
func takesLink(t *testing.T, r Result, o Options) time.Duration {
	t.Helper()
	stop := int(o.TCPStop / time.Second)
	link := r.Cell.LinkBPS
	t.Logf("seed %d, TCP stops at %d s: viewer per second %.0f kbit/s", r.Seed, stop, kbits(r.ViewerPerSecond))
	for i := stop; i < len(r.ViewerPerSecond); i++ {
		if r.ViewerPerSecond[i] >= 0.9*link {
			checkNoFastOscillation(t, r.ViewerPerSecond[i:], o.Interval)
			return time.Duration(i+1-stop) * time.Second
		}
	}
	return -1
}

// checkGivesWay: pooled over the runs, the viewer takes at most
// giveRatio times the newcomer's bits in the giveWindow intervals after
// it starts, and over the rest of the run; and at least hardLow times
// (it gives way, not up).
func checkGivesWay(t *testing.T, runs []Result, o Options) {
	t.Helper()
	start := int(o.TCPStart / time.Second)
	for _, r := range runs {
		v, tc := r.ViewerPerSecond, r.TCPPerSecond
		first, later, err := giveWayRatios([]Result{r}, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d, TCP starts at %d s: viewer per second %.0f, TCP %.0f kbit/s", r.Seed, start, kbits(v), kbits(tc))
		t.Logf("  viewer ÷ newcomer %.2f over the %d intervals after it started, %.2f after them; first 3-s window at 1.25×: %s", first, giveWindow, later, firstWindowAt(v[start:], tc[start:]))
	}
	first, later, err := giveWayRatios(runs, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("gave way: viewer ÷ newcomer %.2f over the %d intervals after it started, %.2f after them, pooled over %d runs (bounds %.2f–%g)", first, giveWindow, later, len(runs), hardLow, giveRatio)
	if !gaveWay(first, later) {
		t.Errorf("viewer ÷ newcomer %.2f over the %d intervals after it started, %.2f after them, pooled over %d runs: want each within %.2f–%g", first, giveWindow, later, len(runs), hardLow, giveRatio)
	}
}

// gaveWay is the give-way check on the two pooled ratios; NaN (no bytes
// from the newcomer) fails.
func gaveWay(first, later float64) bool {
	return first >= hardLow && first <= giveRatio && later >= hardLow && later <= giveRatio
}

// giveWayRatios returns the viewer's bits over the newcomer's, pooled
// over the runs, in the giveWindow intervals after the newcomer started
// and after them to the end.
func giveWayRatios(runs []Result, o Options) (first, later float64, err error) {
	if o.Interval < time.Second {
		return 0, 0, fmt.Errorf("interval %v: want the run's, at least the 1 s of the per-second series", o.Interval)
	}
	start := int(o.TCPStart / time.Second)
	end := start + int(giveWindow*o.Interval/time.Second)
	var firstV, firstT, laterV, laterT float64
	for _, r := range runs {
		v, tc := r.ViewerPerSecond, r.TCPPerSecond
		n := min(len(v), len(tc))
		if n <= end {
			return 0, 0, fmt.Errorf("seed %d: %d seconds of series, want more than %d", r.Seed, n, end)
		}
		firstV, firstT = firstV+sum(v[start:end]), firstT+sum(tc[start:end])
		laterV, laterT = laterV+sum(v[end:n]), laterT+sum(tc[end:n])
	}
	return firstV / firstT, laterV / laterT, nil
}

// firstWindowAt says after how many seconds a 3-second window first has
// the viewer at 1.25× the newcomer or less.
func firstWindowAt(v, tc []float64) string {
	n := min(len(v), len(tc))
	v, tc = v[:n], tc[:n]
	for i := 0; i+3 <= len(v); i++ {
		if st := sum(tc[i : i+3]); st > 0 && sum(v[i:i+3]) <= 1.25*st {
			return fmt.Sprint(i+3, " s")
		}
	}
	return "never"
}

// checkResponsive fails if the median of the runs' times (negative:
// never) is beyond bound, or any run's beyond twice it.
func checkResponsive(t *testing.T, what string, times []time.Duration, bound time.Duration) {
	t.Helper()
	if len(times) == 0 {
		t.Fatalf("%s: no runs", what)
	}
	sorted := make([]time.Duration, len(times))
	words := make([]string, len(times))
	for i, d := range times {
		sorted[i], words[i] = d, d.String()
		if d < 0 {
			sorted[i], words[i] = math.MaxInt64, "never"
		}
	}
	slices.Sort(sorted)
	median, worst := sorted[len(sorted)/2], sorted[len(sorted)-1]
	list := strings.Join(words, ", ")
	t.Logf("%s: %s (median of %d: bound %v; each: %v)", what, list, len(times), bound, 2*bound)
	if median > bound {
		t.Errorf("%s: %s, want the median within %v", what, list, bound)
	}
	if worst > 2*bound {
		t.Errorf("%s: %s, want each within %v", what, list, 2*bound)
	}
}

// checkNoFastOscillation fails if the per-second series alternates up and
// down with swings beyond half its mean for 4 seconds or more in a row:
// an oscillation of period ≤ 2 intervals at a 1 s interval.
func checkNoFastOscillation(t *testing.T, xs []float64, interval time.Duration) {
	t.Helper()
	if interval > time.Second || len(xs) < 4 {
		return
	}
	var mean float64
	for _, x := range xs {
		mean += x / float64(len(xs))
	}
	run := 0
	for i := 2; i < len(xs); i++ {
		d1, d2 := xs[i-1]-xs[i-2], xs[i]-xs[i-1]
		if d1*d2 < 0 && math.Abs(d1) > mean/2 && math.Abs(d2) > mean/2 {
			run++
			if run >= 3 {
				t.Errorf("per-second rate oscillates with period 2 s around %.0f kbit/s: %.0f", mean/1000, kbits(xs))
				return
			}
		} else {
			run = 0
		}
	}
}

// logTrace logs a run's per-interval series: what the controller
// decided on, beside what each flow got and lost at the bottleneck and
// the TCP sender's window and RTT.
func logTrace(t *testing.T, r Result) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d, per interval: s, request kbit/s, path RTT ms, window, p per segment | viewer kbit/s, TCP kbit/s, viewer drops, TCP drops | TCP cwnd, TCP RTT ms\n", r.Seed)
	for i, tp := range r.Trace {
		st := tp.Stats
		fmt.Fprintf(&b, "%3.0f %5.0f %4.0f %5.1f %.4f", tp.Seconds, tp.Rate/1000, float64(st.PathRTT)/1e6, st.Window, st.SegmentLossEventRate)
		if i < len(r.ViewerPerSecond) {
			fmt.Fprintf(&b, " | %5.0f %5.0f %3.0f %3.0f", r.ViewerPerSecond[i]/1000, r.TCPPerSecond[i]/1000, r.ViewerDropsPerSecond[i], r.TCPDropsPerSecond[i])
		}
		if i < len(r.TCPInfoPerSecond) {
			in := r.TCPInfoPerSecond[i]
			fmt.Fprintf(&b, " | %3d %4.0f", in.Cwnd, float64(in.RTT)/1e6)
		}
		b.WriteByte('\n')
	}
	t.Log(b.String())
}

func kbits(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Round(x / 1000)
	}
	return out
}

// TestGiveWayRatios: the give-way check's arithmetic, on series made up
// to the point (the newcomer starts at 15 s, the window ends at 30): a
// viewer that keeps the link fails, one that gives way passes, one that
// gives up fails, one that takes the link back after the window fails,
// the windows are where they should be, and a newcomer that never moved
// or a series too short fails.
func TestGiveWayRatios(t *testing.T) {
	o := Options{Interval: time.Second, TCPStart: 15 * time.Second}
	// series: before 15 s, from 15 to 30 s, and after.
	series := func(before, first, later float64) []float64 {
		xs := make([]float64, 55)
		for i := range xs {
			switch {
			case i < 15:
				xs[i] = before
			case i < 30:
				xs[i] = first
			default:
				xs[i] = later
			}
		}
		return xs
	}
	run := func(v, tc []float64) Result { return Result{ViewerPerSecond: v, TCPPerSecond: tc} }
	holds := run(series(2e6, 1.8e6, 1.8e6), series(0, 0.2e6, 0.2e6))
	shares := run(series(2e6, 1.2e6, 1.0e6), series(0, 0.8e6, 1.0e6))
	givesUp := run(series(2e6, 0.2e6, 0.2e6), series(0, 1.8e6, 1.8e6))
	takesBack := run(series(2e6, 1.0e6, 1.8e6), series(0, 1.0e6, 0.2e6))
	silent := run(series(2e6, 2e6, 2e6), series(0, 0, 0))
	for _, tc := range []struct {
		name               string
		runs               []Result
		first, later       float64
		passes, noNewcomer bool
	}{
		{"keeps the link", []Result{holds}, 9, 9, false, false},
		{"gives way", []Result{shares}, 1.5, 1, true, false},
		{"gives up", []Result{givesUp}, 1.0 / 9, 1.0 / 9, false, false},
		{"takes the link back", []Result{takesBack}, 1, 9, false, false},
		{"pooled", []Result{holds, shares}, 3.0 / 1.0, 2.8 / 1.2, false, false},
		{"the newcomer never moved", []Result{silent}, 0, 0, false, true},
	} {
		first, later, err := giveWayRatios(tc.runs, o)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if tc.noNewcomer {
			if !math.IsInf(first, 1) || !math.IsInf(later, 1) {
				t.Errorf("%s: %v, %v; want +Inf both", tc.name, first, later)
			}
		} else if math.Abs(first-tc.first) > 1e-9 || math.Abs(later-tc.later) > 1e-9 {
			t.Errorf("%s: %v, %v; want %v, %v", tc.name, first, later, tc.first, tc.later)
		}
		if passes := gaveWay(first, later); passes != tc.passes {
			t.Errorf("%s: viewer ÷ newcomer %.2f, %.2f: passes %v, want %v", tc.name, first, later, passes, tc.passes)
		}
	}
	if gaveWay(math.NaN(), 1) || gaveWay(1, math.NaN()) {
		t.Error("NaN passes")
	}
	short := run(make([]float64, 30), make([]float64, 30))
	if _, _, err := giveWayRatios([]Result{short}, o); err == nil {
		t.Error("30 seconds of series: no error, want one (the window ends at 30)")
	}
	if _, _, err := giveWayRatios([]Result{shares}, Options{TCPStart: o.TCPStart}); err == nil {
		t.Error("no interval: no error, want one")
	}
}

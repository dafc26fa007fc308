package demo

import (
	"bytes"
	"context"
	"errors"
	"math"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/internal/lab/fairness"
	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/sidecar"
)

// TestDemo runs the demo for 60 s on the thesis's link: a stock viewer
// asking for 1,536 kbit/s over a 2 Mbit/s, 3 %-loss, 50 ms link beside a
// CUBIC download, the default controller (virtual TCP). The region must
// apply each of fairgrid's requests within 2 intervals, every
// AgentThrottle of the viewer's own must be overridden within 100 ms, and
// both sides must have run. None of these is an average that a shorter
// run makes noisier: each holds for every request and every override, and
// 60 s (twelve intervals, the viewer's rule stepping at each) gave 5–10
// overrides where 90 s gave 10–12 (docs/development.md). This run leaves
// the gateway's cell out (NoGateway), which must leave its row out; the
// default demo beside it has the row (checkGateway), and so does a demo
// interrupted after its warm-up, run meanwhile for its first seconds
// (checkInterruptedComparison), for the same reason as the default demo.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("a one-minute run: skipped with -short")
	}
	// Real sockets keep it out of synctest; it shares its 60 s with TestLive.
	t.Parallel()
	// The default demo runs meanwhile, for the comparison it ends with
	// (checkHarm): inside this test rather than beside it, because go test
	// runs only GOMAXPROCS tests at once, two on this project's machines.
	type harmResult struct {
		sum Summary
		err error
	}
	harm := make(chan harmResult, 1)
	go func() {
		sum, err := Run(context.Background(), Config{}, nil, nil)
		harm <- harmResult{sum, err}
	}()
	// And, for its first seconds, a demo interrupted with its comparison.
	interrupted := make(chan harmResult, 1)
	go func() {
		sum, err := interruptedComparison()
		interrupted <- harmResult{sum, err}
	}()
	var rows []Row
	sum, err := Run(context.Background(), Config{Duration: demoTestRun, Link: ThesisLink, NoGateway: true}, nil, func(r Row) { rows = append(rows, r) })
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		t.Logf("t=%2.0f received %6.0f fair %s applied %7.0f fairgrid %s viewer %7.0f p=%.4f", r.T, r.RateBPS, fmtOpt(r.FairBPS), r.AppliedBPS, fmtOpt(r.FairgridRequestBPS), r.ViewerRequestBPS, r.LossEventRate)
	}
	t.Logf("summary %+v", sum)
	if want := int(demoTestRun / (5 * time.Second)); len(rows) != want || !sum.Settled {
		t.Fatalf("%d intervals in %v (settled %v), want %d", len(rows), demoTestRun, sum.Settled, want)
	}
	if sum.Requests == 0 || sum.MaxFollowIntervals == 0 || sum.MaxFollowIntervals > 2 {
		t.Errorf("the region applied requests within %d intervals (want 1–2); %d requests", sum.MaxFollowIntervals, sum.Requests)
	}
	if sum.Reasserts == 0 {
		t.Error("the viewer never overrode the throttle: its ±10 % rule should have")
	}
	if sum.MaxOverrideMs > 100 {
		t.Errorf("a viewer's AgentThrottle held %.0f ms before fairgrid's replaced it", sum.MaxOverrideMs)
	}
	// The promise, measured against the download on the same link: one
	// run at 3 % random loss with an empty queue is not where vtcp
	// holds one share. Three quiet runs here measured the viewer at 1.60,
	// 1.70 and 1.72× the download (the download loss-limited at ~460–490
	// kbit/s, queueing 4.4 ms): reported, and stated in docs/fairness.md;
	// the share is asserted by lab fairness's seeded subset (TestShares).
	if fg := sum.Fairgrid; fg == nil || fg.DownloadBPS <= 0 || fg.ViewerBPS <= 0 {
		t.Errorf("the fairgrid side did not run: %+v", fg)
	} else {
		t.Logf("with fairgrid the viewer got %.2f× the download's bytes/s at 3 %% loss", fg.ViewerOverDownload)
	}
	// The harm is judged on the default link (checkHarm): at this run's
	// 3 % random loss the loss, not the queue, holds both flows (a CI run
	// measured the stock side's queueing at 3.6 ms mean and the stock
	// viewer at 1.09× its download), so here the stock side is only
	// required to have run.
	if st := sum.Stock; st == nil || st.DownloadBPS <= 0 || st.ViewerBPS <= 0 {
		t.Errorf("the stock side did not run: %+v", st)
	}
	if sum.Gateway != nil {
		t.Errorf("NoGateway, yet a gateway row: %+v", *sum.Gateway)
	}
	t.Run("interrupted, with its comparison", func(t *testing.T) {
		r := <-interrupted
		checkInterruptedComparison(t, r.sum, r.err)
	})
	r := <-harm
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Run("shows the harm", func(t *testing.T) {
		checkHarm(t, r.sum)
	})
	t.Run("through the gateway", func(t *testing.T) {
		checkGateway(t, r.sum)
	})
}

// demoTestRun is TestDemo's and TestLive's run, beside the default 60 s
// demo that shows the harm: all three at once, so the package takes about
// a minute (docs/development.md says why 60 s keeps their assertions).
const demoTestRun = 60 * time.Second

func fmtOpt(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', 0, 64)
}

// TestLive is the same run on the daemon's production path, with the TFRC
// controller: fairgrid captures the viewer's datagrams on lo through
// AF_PACKET and sends its AgentThrottle with raw sockets as the viewer. It
// needs root (CI has it). The viewer's received rate over the last half
// (six intervals) must be within ±25 % of the TCP-fair rate (0.96× over
// nine intervals of a 90 s run).
func TestLive(t *testing.T) {
	if testing.Short() {
		t.Skip("a one-minute run: skipped with -short")
	}
	t.Parallel()
	// Alone: this test is about the capture and the raw sockets; the
	// download and the stock run beside it (TestDemo, TestDemoShowsHarm)
	// would only add load, under which -race once held a viewer's
	// AgentThrottle 129 ms.
	sum, err := Run(context.Background(), Config{Duration: demoTestRun, Link: ThesisLink, Live: true, Alone: true, Loop: throttle.Config{Controller: "tfrc"}}, nil, nil)
	if err != nil {
		t.Skipf("live capture and raw sockets need CAP_NET_RAW (run as root; CI does): %v", err)
	}
	t.Logf("summary %+v", sum)
	if sum.Requests == 0 || sum.MaxFollowIntervals == 0 || sum.MaxFollowIntervals > 2 {
		t.Errorf("the region applied requests within %d intervals (want 1–2); %d requests", sum.MaxFollowIntervals, sum.Requests)
	}
	if sum.Reasserts == 0 || sum.MaxOverrideMs > 100 {
		t.Errorf("%d re-assertions; a viewer's AgentThrottle held %.0f ms", sum.Reasserts, sum.MaxOverrideMs)
	}
	if sum.RatioToFair < 0.75 || sum.RatioToFair > 1.25 {
		t.Errorf("the viewer received %.2f× the TCP-fair rate, want within ±25 %%", sum.RatioToFair)
	}
}

// TestDemoInterrupted: a run whose context ends early returns the summary
// of the intervals that ran, marked interrupted, and no error: a user who
// stops a demo still gets its verdict. The test cancels from the row
// callback, so it waits for rows, not for time.
func TestDemoInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rows := 0
	sum, err := Run(ctx, Config{Duration: time.Hour, Loop: throttle.Config{Interval: 100 * time.Millisecond}}, nil, func(Row) {
		if rows++; rows == 3 {
			cancel()
		}
	})
	if err != nil || !sum.Summary || !sum.Interrupted || sum.Intervals != 3 || rows != 3 {
		t.Errorf("summary %+v after %d rows, error %v; want 3 intervals, interrupted, no error", sum, rows, err)
	}
}

// interruptedComparison is a run interrupted after its measured half
// began: a 10 s demo of 100 ms intervals (5 s of warm-up) stopped at its
// 60th row. It cancels from the row callback, so it waits for rows, not
// for time.
func interruptedComparison() (Summary, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rows := 0
	return Run(ctx, Config{Duration: MinCompareDuration, Loop: throttle.Config{Interval: 100 * time.Millisecond}}, nil, func(Row) {
		if rows++; rows == 60 {
			cancel()
		}
	})
}

// checkInterruptedComparison: the interrupted run still ends with its
// comparison, the gateway's row included, over what ran.
func checkInterruptedComparison(t *testing.T, sum Summary, err error) {
	if err != nil || !sum.Interrupted || sum.Intervals != 60 {
		t.Fatalf("summary %+v, error %v; want 60 intervals, interrupted, no error", sum, err)
	}
	for name, s := range map[string]*Side{"stock": sum.Stock, "fairgrid": sum.Fairgrid, "gateway": sum.Gateway} {
		if s == nil || s.ViewerBPS <= 0 || s.DownloadBPS <= 0 {
			t.Errorf("%s: %+v; want its viewer and download measured over what ran", name, s)
		}
	}
}

// TestDemoRowsPerDuration: a run gives one row per whole interval of its
// duration, however the last tick and the deadline fall, and says whether
// the controller had the MinSettledIntervals its verdict needs (issue
// #23: a demo stopped at 10 s reported a ratio as if settled).
func TestDemoRowsPerDuration(t *testing.T) {
	for _, tc := range []struct {
		duration time.Duration
		rows     int
		settled  bool
	}{
		{300 * time.Millisecond, 3, false},
		{600 * time.Millisecond, MinSettledIntervals, true},
	} {
		rows := 0
		sum, err := Run(context.Background(), Config{Duration: tc.duration, Loop: throttle.Config{Interval: 100 * time.Millisecond}}, nil, func(Row) { rows++ })
		if err != nil || rows != tc.rows || sum.Intervals != tc.rows || sum.Interrupted {
			t.Errorf("%v: %d rows, summary %+v, error %v; want %d rows, not interrupted", tc.duration, rows, sum, err, tc.rows)
		}
		tooShort := sum.TooShort()
		if sum.Settled != tc.settled || (tooShort == "") != tc.settled {
			t.Errorf("%v: settled %v, %q; want settled %v, and words only when not", tc.duration, sum.Settled, tooShort, tc.settled)
		}
		if want := "too little time to judge: 3 intervals of 100ms"; !tc.settled && !strings.Contains(tooShort, want) {
			t.Errorf("%v: %q, want %q", tc.duration, tooShort, want)
		}
	}
}

// failingSource is a capture that breaks when fail is closed; Close
// interrupts a blocked Next, as a capture's does.
type failingSource struct {
	fail, closed chan struct{}
	once         sync.Once
	err          error
}

func (s *failingSource) Next() (capture.Datagram, error) {
	select {
	case <-s.fail:
		return capture.Datagram{}, s.err
	case <-s.closed:
		return capture.Datagram{}, sidecar.ErrSourceClosed
	}
}

func (s *failingSource) Close() error {
	s.once.Do(func() { close(s.closed) })
	return nil
}

// TestDemoMemberFailure: a part of the demo that fails (here the
// sidecar's source, a capture that breaks after the second row) stops
// every other part, the other cells and their downloads included, and its
// error is what Run returns: a run of an hour ends then, with the
// failure, not a summary.
func TestDemoMemberFailure(t *testing.T) {
	src := &failingSource{fail: make(chan struct{}), closed: make(chan struct{}), err: errors.New("capture broke")}
	cfg := Config{Duration: time.Hour, Loop: throttle.Config{Interval: 100 * time.Millisecond},
		source: func(netip.AddrPort) (sidecar.Source, error) { return src, nil }}
	rows := 0
	sum, err := Run(context.Background(), cfg, nil, func(Row) {
		if rows++; rows == 2 {
			close(src.fail)
		}
	})
	if !errors.Is(err, src.err) || sum.Summary || rows < 2 {
		t.Errorf("Run: summary %+v after %d rows, error %v; want the source's failure after the second row", sum, rows, err)
	}
}

// TestDemoConfigRefused: Validate, and Run with it, refuse what would make
// the verdict meaningless or the link other than asked.
func TestDemoConfigRefused(t *testing.T) {
	short := throttle.Config{Interval: 100 * time.Millisecond}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"one interval", Config{Duration: 150 * time.Millisecond, Loop: short}, "duration 150ms is shorter than two intervals (2 × 100ms)"},
		{"default interval", Config{Duration: 9 * time.Second}, "shorter than two intervals (2 × 5s)"},
		{"negative duration", Config{Duration: -time.Second}, "shorter than two intervals"},
		{"NaN burst", Config{Duration: time.Second, Loop: short, Link: link.PipeConfig{Rate: 1000, BurstLen: math.NaN()}}, "burst length NaN"},
		{"loss above 1", Config{Duration: time.Second, Loop: short, Link: link.PipeConfig{Loss: 1.5}}, "loss 1.5 outside"},
		{"interval", Config{Duration: time.Second, Loop: throttle.Config{Interval: time.Millisecond}}, "1ms outside"},
		{"unlimited", Config{Duration: time.Second, Loop: short, Link: link.PipeConfig{Delay: time.Millisecond, Buffer: 5}}, "an unlimited rate"},
		{"no delay", Config{Duration: time.Second, Loop: short, Link: link.PipeConfig{Rate: 125_000, Buffer: 5}}, "delay 0s"},
		{"delay under half a millisecond", Config{Duration: time.Second, Loop: short, Link: link.PipeConfig{Rate: 125_000, Delay: 200 * time.Microsecond, Buffer: 5}}, "delay 200µs: the fairness rig the demo runs on wants 0.5 ms one way or more"},
		{"bursts", Config{Duration: time.Second, Loop: short, Link: link.PipeConfig{Rate: 125_000, Delay: time.Millisecond, Loss: 0.01, BurstLen: 3}}, "burst length 3"},
		{"slow", Config{Duration: time.Second, Loop: short, Link: link.PipeConfig{Rate: 1000, Delay: time.Millisecond}}, "link 8000 bit/s outside"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
			if _, err := Run(context.Background(), tc.cfg, nil, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run: %v, want %q", err, tc.want)
			}
		})
	}
	// A link given is the link used: no loss is no loss, not the default
	// 3 %; only a zero Link is the default.
	lossless := link.PipeConfig{Rate: 1000, Buffer: 5}
	if got := (Config{Link: lossless}).withDefaults().Link; got != lossless {
		t.Errorf("link %+v became %+v", lossless, got)
	}
	if got := (Config{}).withDefaults().Link; got != DefaultLink {
		t.Errorf("zero link became %+v, want DefaultLink", got)
	}
}

// checkHarm judges the default demo (1 Mbit/s, 1 % loss, 60 s): beside
// the CUBIC download, the stock viewer takes more than the download, and
// queues its datagrams longer than the viewer with fairgrid does; the
// shares beside the download are reported.
func checkHarm(t *testing.T, sum Summary) {
	if sum.Stock == nil || sum.Fairgrid == nil {
		t.Fatalf("no comparison: %+v", sum)
	}
	st, fg := *sum.Stock, *sum.Fairgrid
	t.Logf("stock %+v", st)
	t.Logf("fairgrid %+v", fg)
	if fg.FairBPS <= 0 {
		t.Fatal("no loss measured, so no fair share, at 1 % random loss")
	}
	// The stock viewer takes more than one share: more than the download
	// beside it on the same link (1.22–2.95× in the demos docs/demo.md
	// lists). The bound sits below that range: one 60 s run a side is
	// noisy, and the harm is the direction, not its size.
	if st.ViewerOverDownload <= 1 {
		t.Errorf("the stock viewer got %.2f× the download's bytes/s, want more than the download", st.ViewerOverDownload)
	}
	// The shares, reported: one 60 s run a side, on two links whose random
	// losses differ, is too little to judge them. Measured on this machine
	// with vtcp, viewer ÷ download with fairgrid 0.77–1.40 (three runs),
	// then 1.43, 0.92 and 1.72 (stock 1.64, 1.43, 1.61); the download
	// with fairgrid over beside the stock viewer 1.46–1.55, then 1.10, 1.26
	// and 0.95. lab fairness's seeded subset asserts the share.
	t.Logf("viewer ÷ download: with fairgrid %.2f×, stock %.2f×; the download got %.2f× with fairgrid what it got beside the stock viewer",
		fg.ViewerOverDownload, st.ViewerOverDownload, fg.DownloadBPS/st.DownloadBPS)
	if !(fg.QueueDelayMeanMs < st.QueueDelayMeanMs) {
		t.Errorf("the viewer's queueing delay was %.0f ms with fairgrid, %.0f ms without: want less", fg.QueueDelayMeanMs, st.QueueDelayMeanMs)
	}
}

// checkGateway judges the default demo's third row, the stock viewer
// through fairgrid's gateway beside the same download on its own copy of
// the link: the row is there and its figures were measured (the download
// and the viewer both served). Its share beside the download and its queueing delay in the
// link are reported, as the others' shares are, not judged: the delay is
// the drop-tail buffer that the CUBIC download fills whoever shares it,
// and one 60 s run a side does not order it. Nine runs on this machine
// put it below the stock viewer's alone (137–261 against 287–414 ms);
// the CI run of 67100ea, with the lab's other real-time packages
// beside it on two cores, measured 421 ms through the gateway against
// 311 ms alone, the viewer at 0.77× the download (docs/demo.md).
func checkGateway(t *testing.T, sum Summary) {
	t.Helper()
	gw, st := sum.Gateway, sum.Stock
	if gw == nil || st == nil {
		t.Fatalf("no gateway row beside the stock one: %+v", sum)
	}
	t.Logf("through the gateway %+v", *gw)
	if gw.DownloadBPS <= 0 || gw.ViewerBPS <= 0 {
		t.Errorf("the gateway row was not measured: %+v", *gw)
	}
	t.Logf("through the gateway the viewer got %.2f× the download's bytes/s, the download %.2f× what it got beside the stock viewer",
		gw.ViewerOverDownload, gw.DownloadBPS/st.DownloadBPS)
	t.Logf("the viewer's queueing delay in the link: %.0f ms through the gateway, %.0f ms alone", gw.QueueDelayMeanMs, st.QueueDelayMeanMs)
}

// TestFairRateSegment: the TCP-fair column stands on the s the controller
// uses. The same circuit of 300-byte datagrams through the loop's
// controller with s = the mean and with the nominal 1460 B: the fair rate
// moves by exactly the factor the controller's rate moves by, so a viewer
// that receives what the controller asks for reads the same ratio to fair
// under either setting.
func TestFairRateSegment(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	for _, controller := range []throttle.ControllerName{throttle.Window, throttle.TFRC} {
		t.Run(string(controller), func(t *testing.T) {
			var rates, fairs [2]float64
			for i, segment := range []throttle.Segment{throttle.SegmentMean, throttle.SegmentNominal} {
				// A Max high enough that no decision is clamped.
				c, err := throttle.Config{Segment: segment, Max: 1e9}.NewController(controller)
				if err != nil {
					t.Fatal(err)
				}
				c.OnRTT(100*time.Millisecond, t0)
				var last time.Time
				for k := range 60_000 {
					last = t0.Add(time.Duration(k) * time.Millisecond)
					c.OnPacket(ratecalc.Packet{At: last, Size: 300, Lost: k%250 == 0})
				}
				rates[i] = float64(c.Rate(last))
				st := c.Stats()
				if st.LossEventRate <= 0 {
					t.Fatal("no loss measured")
				}
				fair, ok := fairRate(controller, st)
				if !ok {
					t.Fatal("no fair rate after a minute of 0.4 % loss")
				}
				fairs[i] = float64(fair)
			}
			if r, f := rates[1]/rates[0], fairs[1]/fairs[0]; math.Abs(f/r-1) > 1e-9 || r < 2 {
				t.Errorf("nominal over mean: the controller's rate ×%.4f, the fair column's ×%.4f; want the same factor, 1460/mean", r, f)
			}
		})
	}
}

// TestFairRateNeedsItsModelsLoss: the fair column stands on the loss event
// rate its model counts. The virtual TCP counts loss events per 1,460-byte
// segment, and closes its first later than the per-packet count does: in
// between there is no fair rate (a demo's first row once showed 661,154
// kbit/s, the equation at its clamp), while the other models have one.
func TestFairRateNeedsItsModelsLoss(t *testing.T) {
	st := ratecalc.Stats{SRTT: 200 * time.Millisecond, LossEventRate: 0.006, FairSegmentSize: 300}
	for _, tc := range []struct {
		controller throttle.ControllerName
		ok         bool
	}{
		{throttle.VirtualTCP, false},
		{throttle.Window, true},
		{throttle.TFRC, true},
	} {
		if fair, ok := fairRate(tc.controller, st); ok != tc.ok || ok && !(fair > 0) {
			t.Errorf("%s: fair %v, %v; want a rate %v", tc.controller, fair, ok, tc.ok)
		}
	}
	st.SegmentLossEventRate = 0.002
	if fair, ok := fairRate(throttle.VirtualTCP, st); !ok || fair.BitsPerSecond() > 10e6 {
		t.Errorf("vtcp with a segment loss rate: fair %v, %v; want a rate below 10 Mbit/s", fair, ok)
	}
}

// TestSideOnTheWire: the comparison's viewer ÷ download is the lab's
// measure of one share (the fairness rig's): both flows' bytes through
// the link, on the wire, with the viewer's queueing delay there.
func TestSideOnTheWire(t *testing.T) {
	r := fairness.Result{ViewerBPS: []float64{500_000}, TCPBPS: []float64{400_000}, SeatQueueDelayMeanMs: 30, SeatQueueDelayP95Ms: 90}
	s := side(r, 450_000)
	if s.ViewerOverDownload != 1.25 || s.DownloadBPS != 400_000 || s.ViewerBPS != 500_000 || s.FairBPS != 450_000 ||
		s.QueueDelayMeanMs != 30 || s.QueueDelayP95Ms != 90 {
		t.Errorf("%+v: want the rig's rates on the wire, viewer ÷ download 1.25, its queueing delay", *s)
	}
	if s := side(fairness.Result{ViewerBPS: []float64{500_000}}, 0); s.ViewerOverDownload != 0 {
		t.Errorf("no download: viewer ÷ download %v, want 0", s.ViewerOverDownload)
	}
}

// TestDemoLeavesNothing: once Run returns — interrupted with its cells and
// their downloads running, ended by a member's failure, or at its end —
// every goroutine it started has returned and every socket it opened is
// closed: each cell's members are awaited and each cell closed.
func TestDemoLeavesNothing(t *testing.T) {
	before, fds := goroutines(), openFiles(t)
	short := throttle.Config{Interval: 100 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rows := 0
	if _, err := Run(ctx, Config{Duration: time.Hour, Loop: short}, nil, func(Row) {
		if rows++; rows == 2 {
			cancel()
		}
	}); err != nil {
		t.Fatal(err)
	}
	src := &failingSource{fail: make(chan struct{}), closed: make(chan struct{}), err: errors.New("capture broke")}
	close(src.fail)
	if _, err := Run(context.Background(), Config{Duration: time.Hour, Loop: short, source: func(netip.AddrPort) (sidecar.Source, error) { return src, nil }}, nil, nil); !errors.Is(err, src.err) {
		t.Fatalf("Run: %v, want the source's failure", err)
	}
	if _, err := Run(context.Background(), Config{Duration: 300 * time.Millisecond, Loop: short}, nil, nil); err != nil {
		t.Fatal(err)
	}
	// Group.Run has awaited every member; a member's goroutine may still be
	// between handing over its result and returning.
	var left []string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); runtime.Gosched() {
		if left = newGoroutines(before); len(left) == 0 {
			break
		}
	}
	for _, g := range left {
		t.Errorf("a goroutine outlived Run:\n%s", g)
	}
	if after := openFiles(t); after != fds {
		t.Errorf("%d open files before, %d after", fds, after)
	}
}

// goroutines are the stacks of the goroutines running now, by id.
func goroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for n := runtime.Stack(buf, true); n == len(buf); n = runtime.Stack(buf, true) {
		buf = make([]byte, 2*len(buf))
	}
	all := map[string]string{}
	for _, g := range strings.Split(string(bytes.TrimRight(buf, "\x00")), "\n\n") {
		if f := strings.Fields(g); len(f) > 1 {
			all[f[1]] = g
		}
	}
	return all
}

// newGoroutines are those running now that were not in before, but the
// test's own.
func newGoroutines(before map[string]string) []string {
	var out []string
	for id, g := range goroutines() {
		if _, ok := before[id]; !ok && !strings.Contains(g, "TestDemoLeavesNothing") {
			out = append(out, g)
		}
	}
	return out
}

// openFiles counts the process's open files (Linux's /proc).
func openFiles(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd to count open files: %v", err)
	}
	return len(fds)
}

package scenario

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/internal/lab/tcpflow"
)

// The thesis's loss levels (the thesis, chapter 7: figure 7.13's colours
// are 0.01, 0.5, 3 and 10 % loss, docThesis line 5).
var mongooseLosses = []float64{0.0001, 0.005, 0.03, 0.10}

// mongooseLink is the thesis-like path: fast enough that only the random
// loss limits anyone, 50 ms one way.
func mongooseLink(loss float64) (up, down link.PipeConfig) {
	pc := link.PipeConfig{Rate: 10_000_000 / 8, Delay: 50 * time.Millisecond, Loss: loss, Buffer: 100}
	return pc, pc
}

// mongooseEveryRTT is the "no interval" variant's decision interval: one
// round trip of the link (throttle.MinInterval is 100 ms).
const mongooseEveryRTT = 100 * time.Millisecond

type mongooseVariant struct {
	mode     ViewerMode
	interval time.Duration
}

func (v mongooseVariant) String() string {
	if v.mode == Stock {
		return "stock 1500 kbps"
	}
	if v.interval == mongooseEveryRTT {
		return string(v.mode) + " every RTT"
	}
	return fmt.Sprintf("%s %v", v.mode, v.interval)
}

var mongooseVariants = []mongooseVariant{{Stock, 0}, {Window, 5 * time.Second}, {Window, mongooseEveryRTT}, {TFRC, 5 * time.Second}, {TFRC, mongooseEveryRTT}}

func mongoose() Scenario {
	return Scenario{Name: "mongoose", DefaultDuration: 30 * time.Second,
		Summary: "the thesis's ch. 7: loss 0.01/0.5/3/10 %, stock viewer vs window tracking vs TFRC (5 s and every RTT) beside a Reno download; received vs TCP-fair",
		Run:     runMongoose}
}

const mongooseWarmup = 10 * time.Second

func mongooseJobs(o Options, dur time.Duration, losses []float64, variants []mongooseVariant) []job {
	var jobs []job
	for _, loss := range losses {
		for _, v := range variants {
			up, down := mongooseLink(loss)
			jobs = append(jobs, job{name: fmt.Sprintf("mongoose loss=%g%% viewer=%s", loss*100, v),
				cfg: RigConfig{Up: up, Down: down, Seed: o.Seed, Warmup: mongooseWarmup, Duration: dur,
					TCP:    []tcpflow.FlowConfig{{Name: "reno download", CC: tcpflow.Reno, Dir: tcpflow.Download}},
					Viewer: &RigViewer{Mode: v.mode, Interval: v.interval}}})
		}
	}
	return jobs
}

func runMongoose(ctx context.Context, o Options) (Result, error) {
	dur := o.duration(30*time.Second, 30*time.Second)
	return runSeeded(ctx, o, func(o Options) []job { return mongooseJobs(o, dur, mongooseLosses, mongooseVariants) }, mongooseResult)
}

// What the thesis says of the clients it measured (chapter 7), each
// sentence as a Figure, judged against our runs in mongooseResult.
var (
	thesisStockLowLoss  = cite(docThesis, 107, "At very low loss levels the Second Life client is TCP fair", 0, "")
	thesisStockHighLoss = cite(docThesis, 107, "The rate is not TCP fair for loss rates over 0.5%", 0, "")
	thesisNoInterval    = cite(docThesis, 129, "The version of Mongoose with no interval is able to calculate a rate correctly but is unable to control the bandwidth used by the server", 0, "")
	thesisFiveSecond    = cite(docThesis, 111, "The values for over 3% loss are still over the line, but they are much closer to the line than the interval-less client", 0, "")
	thesisFair          = cite(docThesis, 103, "The TCP fair throttle values calculated by the client is able to produce a sending rate that is TCP fair", 0, "")
)

// mongooseDiffers is how every mongoose run differs from the thesis's.
const mongooseDiffers = "our region (opensim/region) and synthetic viewer on an emulated 10 Mbit/s, 50 ms link with random loss, beside one gVisor Reno download, 30 s measured after 10 s (the thesis: real Second Life servers across the Internet with loss added); received/fair is the viewer's bytes/s over the Mathis rate at the loss event rate, RTT and mean payload fairgrid measured (TFRC: its equation)"

// fairBand is what TCP-fair means here: 0.8–1.25× (fairgrid's claim).
const fairLow, fairHigh = 0.8, 1.25

// fairFor is the TCP-fair rate by the model a run's controller follows
// (congestion.md §6.7): window tracking emulates Reno, whose rate is
// Mathis's; TFRC aims at its equation. The stock viewer is held to
// Mathis's, the rate of the Reno flow beside it.
func fairFor(v *ViewerResult) float64 {
	if v.Mode == TFRC {
		return v.FairTFRCBPS
	}
	return v.FairMeanBPS
}

// secondsAbove is the share of seconds in which the viewer received more
// than fair.
func secondsAbove(perSecond []float64, fair float64) float64 {
	if len(perSecond) == 0 || fair <= 0 {
		return math.NaN()
	}
	n := 0
	for _, x := range perSecond {
		if x > fair {
			n++
		}
	}
	return float64(n) / float64(len(perSecond))
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func mongooseResult(jobs []job, runs []RunResult) Result {
	res := Result{Scenario: "mongoose", Runs: runs}
	t := Table{Title: "mongoose: received vs TCP-fair at the thesis's loss levels (10 Mbit/s, 50 ms one way, a Reno download beside)",
		Columns: []string{"loss", "viewer", "p measured", "RTT ms", "s B", "received kbit/s", "fair kbit/s", "received/fair", "median second/fair", "seconds above fair", "Reno kbit/s"},
		Notes: []string{
			"fair: the Mathis rate (Reno: Mathis, Semke, Mahdavi, Ott, CCR 1997) for the stock viewer and window tracking, the TFRC equation for TFRC, at the loss event rate, RTT and mean payload s fairgrid measured.",
			"per connection: received/fair over the measured part; per second: each second's received rate against the run's fair rate.",
			"every RTT: a decision every 100 ms (the link's round trip; the thesis's \"no interval\" client).",
			"the thesis, chapter 7 (figures 7.13 and 7.14): the stock client TCP-fair at very low loss, not above 0.5 % (" + thesisStockLowLoss.Source() + "); the no-interval client calculates a fair rate but cannot control the server (" + thesisNoInterval.Source() + "); the 5 s client still over the line above 3 %, much closer (" + thesisFiveSecond.Source() + "). The summary judges each.",
		}}
	eq := Table{Title: "mongoose: bandwidth against loss, beside the equations (window tracking, 5 s)",
		Columns: []string{"loss", "p measured", "received kbit/s", "Mathis kbit/s", "TFRC kbit/s", "Reno download kbit/s"}}
	for i, r := range runs {
		v := r.Measurement.Viewer
		loss := jobs[i].cfg.Down.Loss
		fair := fairFor(v)
		ratio, med := "-", "-"
		above := "-"
		if fair > 0 {
			ratio = fmt.Sprintf("%.2f", v.Down.ThroughputBPS/fair)
			med = fmt.Sprintf("%.2f", median(v.PerSecondBPS)/fair)
			above = fmt.Sprintf("%.0f %%", 100*secondsAbove(v.PerSecondBPS, fair))
		}
		variant := mongooseVariants[i%len(mongooseVariants)]
		t.Rows = append(t.Rows, []string{fmt.Sprintf("%g %%", loss*100), variant.String(), fmt.Sprintf("%.4f", v.LossEventRate), fmt.Sprintf("%.0f", v.RTTms),
			fmt.Sprintf("%.0f", v.SegmentBytes), kbit(v.Down.ThroughputBPS), kbitOpt(fair), ratio, med, above, kbit(r.Measurement.TCP[0].GoodputBPS)})
		if variant == (mongooseVariant{Window, 5 * time.Second}) {
			eq.Rows = append(eq.Rows, []string{fmt.Sprintf("%g %%", loss*100), fmt.Sprintf("%.4f", v.LossEventRate), kbit(v.Down.ThroughputBPS),
				kbitOpt(v.FairMeanBPS), kbitOpt(v.FairTFRCBPS), kbit(r.Measurement.TCP[0].GoodputBPS)})
		}
		got := 0.0
		if fair > 0 {
			got = v.Down.ThroughputBPS / fair
		}
		if c, ok := mongooseComparison(variant, loss, got); ok {
			res.Comparisons = append(res.Comparisons, c)
		}
	}
	res.Tables = append(res.Tables, t, eq)
	return res
}

// mongooseComparison judges one run against what the thesis says of its
// client at its loss; ok is false for the variants no sentence covers and
// the lab does not report (TFRC every RTT).
func mongooseComparison(variant mongooseVariant, loss, got float64) (Comparison, bool) {
	kase := fmt.Sprintf("%s, %g %% loss", variant, loss*100)
	const metric, unit = "received / TCP-fair", "×"
	fairJudge := func(yes, no string) judge { return allWithin(fairLow, fairHigh, yes, no) }
	switch {
	case variant.mode == Stock && loss < 0.005:
		return thesisStockLowLoss.compare("mongoose", kase, metric, unit, got, mongooseDiffers,
			fairJudge("TCP-fair, as the thesis says", "not TCP-fair: the thesis finds the stock client fair at very low loss; we do not")), true
	case variant.mode == Stock && loss > 0.005:
		return thesisStockHighLoss.compare("mongoose", kase, metric, unit, got, mongooseDiffers,
			allAtLeast(fairHigh, "above TCP-fair, as the thesis says", "not above TCP-fair, unlike the thesis")), true
	case variant.mode == Stock:
		return ours("mongoose", kase, metric, unit, "the thesis's boundary (\"over 0.5%\", "+thesisStockHighLoss.Source()+") judged by neither sentence", 1, got, mongooseDiffers,
			logged("reported, not judged")), true
	case variant.mode == Window && variant.interval == mongooseEveryRTT:
		return thesisNoInterval.compare("mongoose", kase, metric, unit, got, mongooseDiffers+"; every RTT stands for the thesis's no-interval client",
			fairJudge("within TCP-fair: our every-RTT client does control the region's bandwidth, unlike the thesis's no-interval client", "outside TCP-fair: the region's bandwidth not held to the rate, as the thesis found")), true
	case variant.mode == Window && loss >= 0.03:
		return thesisFiveSecond.compare("mongoose", kase, metric, unit, got, mongooseDiffers,
			func(s []float64) (string, bool) {
				switch m := medianOf(s); {
				case m > fairHigh:
					return fmt.Sprintf("far over the line (median %.2f): the thesis's 5 s client stayed close to it", m), false
				case m > 1:
					return fmt.Sprintf("over the line (median %.2f), as the thesis says", m), true
				}
				return fmt.Sprintf("on or under the line (median %.2f): closer than the thesis's 5 s client, which stayed over it", medianOf(s)), medianOf(s) >= fairLow
			}), true
	case variant.mode == Window:
		return thesisFair.compare("mongoose", kase, metric, unit, got, mongooseDiffers,
			fairJudge("TCP-fair, as the thesis says", "not TCP-fair, unlike the thesis")), true
	case variant.mode == TFRC && variant.interval != mongooseEveryRTT:
		return ours("mongoose", kase, metric, unit, "fairgrid's TFRC controller (RFC 5348), not in the thesis; 1 is TCP-fair by definition", 1, got, mongooseDiffers,
			fairJudge("TCP-fair", "not TCP-fair")), true
	}
	return Comparison{}, false
}

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
		Summary: "the thesis's ch. 7: loss 0.01/0.5/3/10 %, stock viewer vs window tracking vs TFRC (5 s and every RTT) alone on a lossy path, as the thesis measured; and (ours) the stock viewer and window tracking beside a Reno download; received vs TCP-fair",
		Run:     func(ctx context.Context, o Options) (Result, error) { return runSeeding(ctx, o, mongooseSeeding(o)) }, seeding: mongooseSeeding}
}

const mongooseWarmup = 10 * time.Second

// mongooseBeside are the variants also run beside a Reno download
// (ours: the thesis ran none).
var mongooseBeside = []mongooseVariant{{Stock, 0}, {Window, 5 * time.Second}}

// mongooseJobs are a run per loss and variant: alone on the lossy path,
// as the thesis measured across the Internet with loss added, or beside
// a Reno download (ours).
func mongooseJobs(o Options, dur time.Duration, losses []float64, variants []mongooseVariant, beside bool) []job {
	var jobs []job
	for _, loss := range losses {
		for _, v := range variants {
			up, down := mongooseLink(loss)
			cfg := RigConfig{Up: up, Down: down, Seed: o.Seed, Warmup: mongooseWarmup, Duration: dur,
				Viewer: &RigViewer{Mode: v.mode, Interval: v.interval}}
			name := fmt.Sprintf("mongoose loss=%g%% viewer=%s", loss*100, v)
			if beside {
				cfg.TCP = []tcpflow.FlowConfig{{Name: "reno download", CC: tcpflow.Reno, Dir: tcpflow.Download}}
				name += " beside=reno"
			}
			jobs = append(jobs, job{name: name, cfg: cfg})
		}
	}
	return jobs
}

func mongooseSeeding(o Options) seeding {
	dur := o.duration(30*time.Second, 30*time.Second)
	return seeding{func(o Options) []job {
		return append(mongooseJobs(o, dur, mongooseLosses, mongooseVariants, false), mongooseJobs(o, dur, mongooseLosses, mongooseBeside, true)...)
	}, func(jobs []job, runs []RunResult) Result { return mongooseResult(jobs, runs, dur) }}
}

// What the thesis says of the clients it measured (chapter 7), each
// sentence as a Figure, judged against our runs in mongooseResult.
var (
	thesisStockLowLoss  = cite(docThesis, 107, "At very low loss levels the Second Life client is TCP fair", 0, "")
	thesisStockHighLoss = cite(docThesis, 107, "The rate is not TCP fair for loss rates over 0.5%", 0, "")
	thesisNoInterval    = cite(docThesis, 129, "The version of Mongoose with no interval is able to calculate a rate correctly but is unable to control the bandwidth used by the server", 0, "")
	thesisFiveSecond    = cite(docThesis, 111, "The values for over 3% loss are still over the line, but they are much closer to the line than the interval-less client", 0, "")
	thesisFair          = cite(docThesis, 103, "The TCP fair throttle values calculated by the client is able to produce a sending rate that is TCP fair", 0, "")
	// Figure 7.13's per-second points: a and b.
	thesisPointsNoInterval = cite(docThesis, 7, "A large number of the points are above the line", 0, "")
	thesisPointsFiveSecond = cite(docThesis, 9, "Less of the points are above the line than in the first graph", 0, "")
	// thesisUnder: the thesis counts a rate on or under the throttle (the
	// fair line) as controlled, and fair.
	thesisUnder = ref(docThesis, 125, "The bandwidth utilization are close to the throttle values or they are lower")
	// thesisInternet: its set-up, real servers across the Internet.
	thesisInternet = ref(docThesis, 119, "The methodology was to perform experiments with real connections connected to the Second Life servers across the Internet")
)

// mongooseDiffers is how a mongoose run differs from the thesis's.
func mongooseDiffers(dur time.Duration, beside bool) string {
	with := "alone on the path (the thesis: real Second Life servers across the Internet with loss added, " + thesisInternet + ")"
	if beside {
		with = "beside one gVisor Reno download, which fills the 100-packet buffer, so the loss the viewer meets is the queue's as well as the random loss (ours: the thesis ran no competing flow)"
	}
	return fmt.Sprintf("our region (opensim/region) and synthetic viewer on an emulated 10 Mbit/s, 50 ms link with random loss, %s; %.0f s measured after %.0f s; received/fair is the viewer's bytes/s over the Mathis rate at the loss event rate, RTT and mean payload fairgrid measured (TFRC: its equation)",
		with, dur.Seconds(), mongooseWarmup.Seconds())
}

// fairBand is what TCP-fair means to fairgrid: 0.8–1.25×. The thesis
// counts a rate on or under the line as fair (thesisUnder), so its
// claims are judged against fairHigh alone, "on the line" being within
// fairgrid's tolerance.
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

// mongooseResult builds one seed's tables and comparisons from its runs
// (runMongoose's order: alone, then beside Reno).
func mongooseResult(jobs []job, runs []RunResult, dur time.Duration) Result {
	res := Result{Scenario: "mongoose", Runs: runs}
	t := Table{Title: "mongoose: received vs TCP-fair at the thesis's loss levels (10 Mbit/s, 50 ms one way; alone, as the thesis measured, or beside a Reno download)",
		Columns: []string{"loss", "viewer", "beside", "p measured", "RTT ms", "s B", "received kbit/s", "fair kbit/s", "received/fair", "median second/fair", "seconds above fair", "Reno kbit/s"},
		Notes: []string{
			"fair: the Mathis rate (Reno: Mathis, Semke, Mahdavi, Ott, CCR 1997) for the stock viewer and window tracking, the TFRC equation for TFRC, at the loss event rate, RTT and mean payload s fairgrid measured.",
			"per connection: received/fair over the measured part; per second: each second's received rate against the run's fair rate.",
			"every RTT: a decision every 100 ms (the link's round trip; the thesis's \"no interval\" client).",
			"the summary below gives each of the thesis's sentences its verdict.",
		}}
	eq := Table{Title: "mongoose: bandwidth against loss, beside the equations (window tracking, 5 s, alone)",
		Columns: []string{"loss", "p measured", "received kbit/s", "Mathis kbit/s", "TFRC kbit/s"}}
	// Figure 7.13's per-second points, pooled over the loss levels as its
	// top graphs pool the traces: seconds above fair, of all seconds.
	type pooled struct{ above, seconds float64 }
	points := map[mongooseVariant]*pooled{}
	var beside []Comparison
	for i, r := range runs {
		v := r.Measurement.Viewer
		cfg := jobs[i].cfg
		loss := cfg.Down.Loss
		variant := mongooseVariant{cfg.Viewer.Mode, cfg.Viewer.Interval}
		besideReno := len(cfg.TCP) > 0
		fair := fairFor(v)
		ratio, med, above, reno, with := "-", "-", "-", "-", "alone"
		if besideReno {
			reno, with = kbit(r.Measurement.TCP[0].GoodputBPS), "reno"
		}
		got := 0.0
		if fair > 0 {
			got = v.Down.ThroughputBPS / fair
			ratio = fmt.Sprintf("%.2f", got)
			med = fmt.Sprintf("%.2f", median(v.PerSecondBPS)/fair)
			share := secondsAbove(v.PerSecondBPS, fair)
			above = fmt.Sprintf("%.0f %%", 100*share)
			if !besideReno {
				p := points[variant]
				if p == nil {
					p = &pooled{}
					points[variant] = p
				}
				p.above += share * float64(len(v.PerSecondBPS))
				p.seconds += float64(len(v.PerSecondBPS))
			}
		}
		t.Rows = append(t.Rows, []string{fmt.Sprintf("%g %%", loss*100), variant.String(), with, fmt.Sprintf("%.4f", v.LossEventRate), fmt.Sprintf("%.0f", v.RTTms),
			fmt.Sprintf("%.0f", v.SegmentBytes), kbit(v.Down.ThroughputBPS), kbitOpt(fair), ratio, med, above, reno})
		if besideReno {
			c := ours("mongoose", fmt.Sprintf("%s beside Reno, %g %% loss", variant, loss*100), "received / TCP-fair", "×",
				"the thesis ran no competing flow", 1, got, mongooseDiffers(dur, true),
				everySeed(fmt.Sprintf("within fairgrid's %.2g–%.3g", fairLow, fairHigh), func(x float64) bool { return x >= fairLow && x <= fairHigh }))
			if fair <= 0 {
				c = c.unmeasured()
			}
			beside = append(beside, c)
			continue
		}
		if variant == (mongooseVariant{Window, 5 * time.Second}) {
			eq.Rows = append(eq.Rows, []string{fmt.Sprintf("%g %%", loss*100), fmt.Sprintf("%.4f", v.LossEventRate), kbit(v.Down.ThroughputBPS),
				kbitOpt(v.FairMeanBPS), kbitOpt(v.FairTFRCBPS)})
		}
		if c, ok := mongooseComparison(variant, loss, got, dur); ok {
			if fair <= 0 {
				c = c.unmeasured()
			}
			res.Comparisons = append(res.Comparisons, c)
		}
	}
	for _, c := range mongoosePoints(dur, func(v mongooseVariant) float64 {
		if p := points[v]; p != nil && p.seconds > 0 {
			return p.above / p.seconds
		}
		return math.NaN()
	}) {
		if math.IsNaN(c.Samples[0]) {
			c = c.unmeasured()
		}
		res.Comparisons = append(res.Comparisons, c)
	}
	res.Comparisons = append(res.Comparisons, beside...)
	res.Tables = append(res.Tables, t, eq)
	return res
}

// mongoosePoints are figure 7.13's per-second rows: the share of seconds
// above the fair line, pooled over the loss levels, for the every-RTT
// and the 5 s client (share gives each).
func mongoosePoints(dur time.Duration, share func(mongooseVariant) float64) []Comparison {
	const metric = "share of seconds above TCP-fair, the loss levels pooled"
	differs := mongooseDiffers(dur, false) + "; each second's rate against the run's fair rate (the thesis: against each second's TCP-fair value)"
	rtt := mongooseVariant{Window, mongooseEveryRTT}
	five := mongooseVariant{Window, 5 * time.Second}
	noInterval := thesisPointsNoInterval.compare("mongoose", rtt.String()+", all losses", metric, "share", share(rtt), differs,
		reportedAs("the thesis gives no number for \"a large number\""))
	less := thesisPointsFiveSecond.compare("mongoose", five.String()+", all losses", metric, "share", share(five), differs,
		reportedAs("judged beside the every-RTT client's row"))
	less.pairCase = noInterval.Case
	less.pair = func(self, other []float64) (string, string) {
		return pairedLess("fewer seconds above the line than the every-RTT client", self, other)
	}
	return []Comparison{noInterval, less}
}

// mongooseComparison judges one run alone on the lossy path against
// what the thesis says of its client at its loss; ok is false for the
// variants no sentence covers and the lab does not report (TFRC every
// RTT).
func mongooseComparison(variant mongooseVariant, loss, got float64, dur time.Duration) (Comparison, bool) {
	kase := fmt.Sprintf("%s, %g %% loss", variant, loss*100)
	const metric, unit = "received / TCP-fair", "×"
	differs := mongooseDiffers(dur, false)
	fair := onOrUnder(fmt.Sprintf("on or under the line (the thesis counts a rate at or under the throttle as fair, %s)", thesisUnder), 1)
	switch {
	case variant.mode == Stock && loss < 0.005:
		return thesisStockLowLoss.compare("mongoose", kase, metric, unit, got, differs, fair), true
	case variant.mode == Stock && loss > 0.005:
		return thesisStockHighLoss.compare("mongoose", kase, metric, unit, got, differs,
			over("over the line", 1)), true
	case variant.mode == Stock:
		return ours("mongoose", kase, metric, unit, "the thesis's boundary (\"over 0.5%\", "+thesisStockHighLoss.Source()+") judged by neither sentence", 1, got, differs, nil), true
	case variant.mode == Window && variant.interval == mongooseEveryRTT:
		return thesisNoInterval.compare("mongoose", kase, metric, unit, got, differs+"; every RTT stands for the thesis's no-interval client",
			reportedAs("not judged: the claim is the server's bandwidth against the throttle requested, which the lab does not record, and our region (opensim/region) applies every AgentThrottle at once, so this row would test our region, not the thesis's claim")), true
	case variant.mode == Window && loss > 0.03:
		c := thesisFiveSecond.compare("mongoose", kase, metric, unit, got, differs, reportedAs("judged beside the every-RTT client's row"))
		c.pairCase = fmt.Sprintf("%s, %g %% loss", mongooseVariant{Window, mongooseEveryRTT}, loss*100)
		c.pair = func(self, other []float64) (string, string) {
			j, reason := over("still over the line", 1)(self)
			dist := func(s []float64) []float64 {
				d := make([]float64, len(s))
				for i, x := range s {
					d[i] = math.Abs(x - 1)
				}
				return d
			}
			cj, closer := pairedLess("closer to the line than the every-RTT client (the distance from 1)", dist(self), dist(other))
			if j == Agrees && cj != Agrees {
				j = cj
			}
			return j, reason + "; " + closer
		}
		return c, true
	case variant.mode == Window:
		return thesisFair.compare("mongoose", kase, metric, unit, got, differs, fair), true
	case variant.mode == TFRC && variant.interval != mongooseEveryRTT:
		return ours("mongoose", kase, metric, unit, "fairgrid's TFRC controller (RFC 5348), not in the thesis; 1 is TCP-fair by definition", 1, got, differs,
			everySeed(fmt.Sprintf("within fairgrid's %.2g–%.3g", fairLow, fairHigh), func(x float64) bool { return x >= fairLow && x <= fairHigh })), true
	}
	return Comparison{}, false
}

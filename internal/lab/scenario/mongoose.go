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

// The thesis's loss levels (Oliver 2011, ch. 7; congestion.md §2.1): the
// two the stock viewer's rule reacts to (0.5 % and 3 %, LLViewerThrottle)
// and one below and one above them.
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
	o = o.withDefaults()
	start := time.Now()
	dur := o.Duration
	if dur == 0 {
		dur = 30 * time.Second
	}
	jobs := mongooseJobs(o, dur, mongooseLosses, mongooseVariants)
	runs, err := runAll(ctx, o, jobs)
	if err != nil {
		return Result{}, err
	}
	res := mongooseResult(jobs, runs)
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

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
			"fair: the Mathis rate (Reno, congestion.md §6.7) for the stock viewer and window tracking, the TFRC equation for TFRC, at the loss event rate, RTT and mean payload s fairgrid measured.",
			"per connection: received/fair over the measured part; per second: each second's received rate against the run's fair rate.",
			"every RTT: a decision every 100 ms (the link's round trip; the thesis's \"no interval\" client).",
			"published (Oliver 2011, ch. 7, figures 7.13 and 7.14, as congestion.md §2.1 reads them): the stock client above the fair line at 3 %, Mongoose on it.",
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
		if fair > 0 && (variant.mode == Window && variant.interval == 5*time.Second || variant.mode == Stock) {
			res.Comparisons = append(res.Comparisons, Comparison{Scenario: "mongoose",
				Metric: fmt.Sprintf("%s received / TCP-fair at %g %% loss", variant, loss*100), Unit: "×",
				Published: 1, Measured: v.Down.ThroughputBPS / fair,
				Source: "TCP-fair is 1 by definition; Oliver 2011 fig. 7.13/7.14: the stock client above it at 3 %, Mongoose on it"})
		}
	}
	res.Tables = append(res.Tables, t, eq)
	return res
}

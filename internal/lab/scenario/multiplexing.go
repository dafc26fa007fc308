package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/internal/lab/tcpflow"
)

// The application-limited TCP study's game flows (as issue #14 quotes
// it): each client sends 1.47 kbit/s and its server 18.13 kbit/s, over a
// bottleneck with 20 ms of delay.
const (
	gameUpRate    = 1470 / 8  // bytes/s
	gameDownRate  = 18130 / 8 // bytes/s
	gameDelay     = 20 * time.Millisecond
	gameMessage   = 100 // bytes per update, tcpflow's default
	gameBuffer    = 50  // packets; the study's is not quoted
	multiplexSrc  = "application-limited TCP study (issue #14 quoting it; the paper not read)"
	multiplexNote = "configurations as read from the issue's summary: (rate, flows per branch, T) = (10M, 4, 25 ms), (10M, 8, 25 ms), (300k, 8, 25 ms), (250k, 8, 50 ms)"
)

// multiplexCase is one configuration: a bottleneck rate, N flows in each
// branch, and the sawtooth multiplexing period T of the second branch;
// Published is each branch's aggregate throughput (kbit/s), plain then
// multiplexed.
type multiplexCase struct {
	rate      int64 // bits/s
	flows     int
	period    time.Duration
	published [2]float64
}

var multiplexCases = []multiplexCase{
	{10_000_000, 4, 25 * time.Millisecond, [2]float64{74, 75}},
	{10_000_000, 8, 25 * time.Millisecond, [2]float64{144, 147}},
	{300_000, 8, 25 * time.Millisecond, [2]float64{117, 131}},
	{250_000, 8, 50 * time.Millisecond, [2]float64{115, 133}},
}

func multiplexing() Scenario {
	return Scenario{Name: "multiplexing", DefaultDuration: 60 * time.Second,
		Summary: "N plain and N multiplexed application-limited game TCP flows (1.47/18.13 kbit/s) through 10M/300k/250k bottlenecks; each branch's aggregate throughput",
		Run:     runMultiplexing}
}

const multiplexWarmup = 5 * time.Second

func multiplexJobs(o Options, dur time.Duration, cases []multiplexCase) []job {
	var jobs []job
	for _, c := range cases {
		pc := link.PipeConfig{Rate: c.rate / 8, Delay: gameDelay, Buffer: gameBuffer}
		var flows []tcpflow.FlowConfig
		for branch, period := range []time.Duration{0, c.period} {
			for i := range c.flows {
				flows = append(flows, tcpflow.FlowConfig{Name: fmt.Sprintf("branch%d game%d", branch, i), CC: tcpflow.Reno,
					// Spread the openings, as players join.
					Start: time.Duration(i*2+branch) * 50 * time.Millisecond,
					App:   &tcpflow.AppConfig{UpRate: gameUpRate, DownRate: gameDownRate, Message: gameMessage, Period: period}})
			}
		}
		jobs = append(jobs, job{name: fmt.Sprintf("multiplexing rate=%dk flows=%d+%d T=%v", c.rate/1000, c.flows, c.flows, c.period),
			cfg: RigConfig{Up: pc, Down: pc, Seed: o.Seed, Warmup: multiplexWarmup, Duration: dur, TCP: flows}})
	}
	return jobs
}

func runMultiplexing(ctx context.Context, o Options) (Result, error) {
	o = o.withDefaults()
	start := time.Now()
	dur := o.Duration
	if dur == 0 {
		dur = 60 * time.Second
	}
	jobs := multiplexJobs(o, dur, multiplexCases)
	runs, err := runAll(ctx, o, jobs)
	if err != nil {
		return Result{}, err
	}
	res := multiplexResult(multiplexCases, runs)
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// branchThroughputs sums each branch's downstream goodput (what the
// clients read), in kbit/s: the first half of a run's flows are the
// plain branch, the second the multiplexed one.
func branchThroughputs(m Measurement) [2]float64 {
	var out [2]float64
	for i, f := range m.TCP {
		out[i*2/len(m.TCP)] += f.GoodputBPS / 1000
	}
	return out
}

func multiplexResult(cases []multiplexCase, runs []RunResult) Result {
	res := Result{Scenario: "multiplexing", Runs: runs}
	t := Table{Title: "multiplexing: aggregate throughput of each branch of application-limited game flows (Reno, 20 ms)",
		Columns: []string{"bottleneck", "flows", "T ms", "plain kbit/s", "published", "multiplexed kbit/s", "published", "multiplexed/plain", "published"},
		Notes:   []string{"throughput: what the clients read (server→client goodput), summed over a branch.", multiplexNote, "published: " + multiplexSrc}}
	for i, r := range runs {
		c := cases[i]
		got := branchThroughputs(r.Measurement)
		t.Rows = append(t.Rows, []string{fmt.Sprintf("%dk", c.rate/1000), fmt.Sprintf("%d+%d", c.flows, c.flows), fmt.Sprint(c.period.Milliseconds()),
			fmt.Sprintf("%.0f", got[0]), fmt.Sprintf("%.0f", c.published[0]), fmt.Sprintf("%.0f", got[1]), fmt.Sprintf("%.0f", c.published[1]),
			fmt.Sprintf("%.2f", got[1]/got[0]), fmt.Sprintf("%.2f", c.published[1]/c.published[0])})
		for b, name := range []string{"plain", "multiplexed"} {
			res.Comparisons = append(res.Comparisons, Comparison{Scenario: "multiplexing",
				Metric: fmt.Sprintf("%s branch, %dk, %d flows, T %v", name, c.rate/1000, c.flows, c.period), Unit: "kbit/s",
				Published: c.published[b], Measured: got[b], Source: multiplexSrc})
		}
	}
	res.Tables = append(res.Tables, t)
	return res
}

package scenario

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
)

// TestInterrupted: a scenario whose context ends mid-way returns the runs
// that finished, says how many of how many, reports a run that failed
// before the interruption, and calls Progress once per run ended, not
// for the run the interruption stopped.
func TestInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	finished := make(chan struct{})
	mk := func(Options) []job {
		return []job{
			{name: "quick", custom: func(context.Context, func(link.Event), *slog.Logger) (Measurement, error) {
				return Measurement{Seconds: 3}, nil
			}},
			{name: "broken", custom: func(context.Context, func(link.Event), *slog.Logger) (Measurement, error) {
				return Measurement{}, errors.New("no route")
			}},
			{name: "long", custom: func(ctx context.Context, _ func(link.Event), _ *slog.Logger) (Measurement, error) {
				<-finished // the other two have ended
				cancel()   // Ctrl-C
				<-ctx.Done()
				return Measurement{Seconds: 1}, ctx.Err()
			}},
		}
	}
	var calls []int
	o := Options{Parallel: 3, Progress: func(done, total int, run string) {
		calls = append(calls, done)
		if done == 2 {
			close(finished)
		}
	}}
	res, err := runSeeded(ctx, o, mk, func([]job, []RunResult) Result {
		t.Error("the result of every run was built from an interrupted one")
		return Result{}
	})
	var ir *Interrupted
	if !errors.As(err, &ir) || ir.Finished != 1 || ir.Total != 3 {
		t.Fatalf("error %v, want interrupted with 1 of 3 finished", err)
	}
	if !strings.Contains(err.Error(), "run broken: no route") {
		t.Errorf("the run that failed before the interruption is not reported: %v", err)
	}
	if len(res.Runs) != 1 || res.Runs[0].Name != "quick" || res.Runs[0].Measurement.Seconds != 3 {
		t.Errorf("runs %+v, want the quick one's measurement", res.Runs)
	}
	if len(calls) != 3 || calls[0] != 0 || calls[2] != 2 {
		t.Errorf("progress calls %v, want 0, 1, 2: the run the interruption stopped did not end", calls)
	}
}

// TestPlan: a scenario's plan counts its runs (every seed's) and lays
// them on the parallel slots as runEach does; multiplexing's cap holds.
func TestPlan(t *testing.T) {
	w, _ := Find("wireless-buffers")
	p := w.Plan(Options{Duration: 5 * time.Second, Parallel: 4})
	// 9 of the document's set-ups (7 numbers of terminals with 37
	// packets, 2 with 256) and 10 of ours, each 10 s of warm-up and 5 s
	// measured: 5 rounds of 4 slots
	if p.Runs != 19 || p.Wall != 75*time.Second {
		t.Errorf("wireless-buffers: %+v, want 19 runs in 75 s", p)
	}
	if p2 := w.Plan(Options{Duration: 5 * time.Second, Parallel: 4, Seeds: 2}); p2.Runs != 38 || p2.Wall != 150*time.Second {
		t.Errorf("wireless-buffers, 2 seeds: %+v, want 38 runs in 150 s", p2)
	}
	m, _ := Find("multiplexing")
	one := m.Plan(Options{Duration: 5 * time.Second, Parallel: 1})
	capped := m.Plan(Options{Duration: 5 * time.Second, Parallel: 100})
	if one.Runs == 0 || capped.Runs != one.Runs || capped.Wall != time.Duration((one.Runs+multiplexParallel-1)/multiplexParallel)*(multiplexWarmup+5*time.Second) {
		t.Errorf("multiplexing: %+v alone, %+v at --parallel 100 (at most %d at once)", one, capped, multiplexParallel)
	}
	a, _ := Find("all")
	var sum Plan
	for _, s := range Scenarios() {
		q := s.Plan(Options{})
		sum.Runs, sum.Wall = sum.Runs+q.Runs, sum.Wall+q.Wall
	}
	if got := a.Plan(Options{}); got != sum {
		t.Errorf("all: %+v, want the scenarios' sum %+v", got, sum)
	}
}

// TestWriteRuns: the finished runs' lines, with the columns some run has
// and the rates with their unit; many flows summarised.
func TestWriteRuns(t *testing.T) {
	var flows []TCPResult
	for i := range 5 {
		flows = append(flows, TCPResult{Name: "t", GoodputBPS: float64(100_000 * (i + 1))})
	}
	var b strings.Builder
	err := WriteRuns(&b, []RunResult{
		{Name: "viewer run", Measurement: Measurement{Viewer: &ViewerResult{Down: FlowResult{ThroughputBPS: 812_000}, LossEventRate: 0.0123, RTTms: 104.4},
			TCP: []TCPResult{{Name: "reno download", GoodputBPS: 1_500_000}}}},
		{Name: "five uploads", Measurement: Measurement{TCP: flows}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"run           viewer received  viewer p  viewer RTT  TCP flows' goodput",
		"viewer run    812 kbit/s       0.0123    104 ms      reno download 1500 kbit/s",
		"five uploads  -                -         -           5 flows: mean 300 kbit/s, 100 kbit/s to 500 kbit/s",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "branches") {
		t.Errorf("a column no run has:\n%s", b.String())
	}
}

// TestAllInterrupted: `all` interrupted counts the runs of every
// scenario, not only of the one it was in.
func TestAllInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Ctrl-C before anything ran
	a, _ := Find("all")
	o := Options{Duration: 5 * time.Second}
	_, err := a.Run(ctx, o)
	var ir *Interrupted
	if !errors.As(err, &ir) || ir.Finished != 0 || ir.Total != a.Plan(o).Runs {
		t.Errorf("error %v, want interrupted with 0 of %d runs finished", err, a.Plan(o).Runs)
	}
}

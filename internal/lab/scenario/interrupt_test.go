package scenario

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

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

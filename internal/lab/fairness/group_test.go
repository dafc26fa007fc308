package fairness

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/group"
)

// TestMemberFailureReachesCaller: a cell runs as one group, so a member
// that fails mid-run — here one the test adds, after the warm-up — ends
// the run at once, every other member stopped, and its error is what Run
// returns instead of a measurement. Beside the viewers alone it runs in
// virtual time (synctest's bubble also checks that no goroutine outlives
// Run); beside gVisor's TCP it runs on the real clock, which gVisor's
// stacks keep, failing at once so that nothing waits.
func TestMemberFailureReachesCaller(t *testing.T) {
	broken := errors.New("member broken")
	failAfter := func(d time.Duration) func(*group.Group) {
		return func(g *group.Group) {
			g.Add(func(ctx context.Context) error {
				timer := time.NewTimer(d)
				defer timer.Stop()
				select {
				case <-ctx.Done():
					return nil
				case <-timer.C:
					return broken
				}
			}, nil)
		}
	}
	check := func(t *testing.T, cell Cell, failAt time.Duration) {
		t.Helper()
		opt := Options{Warmup: 2 * time.Second, Duration: time.Hour, Interval: time.Second, Seed: 1}
		start := time.Now()
		res, err := run(context.Background(), cell, opt, failAfter(failAt))
		if !errors.Is(err, broken) {
			t.Errorf("Run = %v, want the member's failure", err)
		}
		if res.ViewerBPS != nil || res.Seconds != 0 {
			t.Errorf("Run measured %v s after a member failed", res.Seconds)
		}
		if d := time.Since(start); d >= opt.Warmup+opt.Duration {
			t.Errorf("Run returned after %v: the failure did not end the run", d)
		}
	}
	viewers := Cell{Controller: throttle.VirtualTCP, Viewers: 2, Buffer: 30, RTTms: 40, LinkBPS: 1_000_000}
	t.Run("viewers alone, virtual time", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			check(t, viewers, 5*time.Second)
			if d := time.Since(start); d != 5*time.Second {
				t.Errorf("Run returned %v after the start, want the failure's 5s", d)
			}
		})
	})
	t.Run("beside gVisor's TCP, real time", func(t *testing.T) {
		cell := viewers
		cell.TCP, cell.Flows = GVisorCUBIC, 2
		check(t, cell, 0)
	})
}

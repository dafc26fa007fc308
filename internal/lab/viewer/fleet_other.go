//go:build !linux

package viewer

import (
	"context"
	"errors"
	"sync"
)

// runFleet runs each viewer on its own goroutines (the shared event loops
// of fleet_linux.go use epoll) and returns their errors, joined, as
// runShards does its loops'. Not group.Group: it would bring throttle's
// capture stack into the rig, which measures without it.
func runFleet(ctx context.Context, vs []*Viewer) error {
	var wg sync.WaitGroup
	errs := make([]error, len(vs))
	for i, v := range vs {
		wg.Go(func() { errs[i] = v.Run(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

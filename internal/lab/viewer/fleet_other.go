//go:build !linux

package viewer

import (
	"context"
	"sync"
)

// runFleet runs each viewer on its own goroutines: the shared event loops
// of fleet_linux.go use epoll.
func runFleet(ctx context.Context, vs []*Viewer) error {
	var wg sync.WaitGroup
	for _, v := range vs {
		wg.Add(1)
		go func() { defer wg.Done(); v.Run(ctx) }()
	}
	wg.Wait()
	return nil
}

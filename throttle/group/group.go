package group

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Group runs functions together, as one front-end: the first to return
// stops the others (its context is cancelled and each interrupt is called,
// for blocking calls that ignore contexts), and Run returns the first
// error once every member has returned. It is errgroup with oklog/run's
// interrupts, in the few lines it takes. Every front-end (run, proxy, sim,
// viewer, link, the demo, the lab's rigs) is one Group whose first error
// main returns; a sidecar (package throttle/sidecar) adds its members
// with AddTo.
//
// A nil error from a member still stops the group: a source that ends
// ends the run. The zero Group is ready to use; Add must not be called
// once Run has started.
type Group struct {
	execute   []func(context.Context) error
	interrupt []func()
}

// Add adds a member: execute runs until its context ends or it fails;
// interrupt, if not nil, unblocks it when the group stops.
func (g *Group) Add(execute func(context.Context) error, interrupt func()) {
	g.execute = append(g.execute, execute)
	g.interrupt = append(g.interrupt, interrupt)
}

// Run starts every member and waits until the first returns or ctx ends,
// then stops the rest and waits for them. It returns the first non-nil
// error, in the order the members returned; nil when ctx ended and every
// member returned nil. A Group with no members returns at once.
func (g *Group) Run(ctx context.Context) error {
	if len(g.execute) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(g.execute))
	for _, execute := range g.execute {
		go func() { errs <- execute(ctx) }()
	}
	var first error
	received := 0
	select {
	case first = <-errs:
		received++
	case <-ctx.Done():
	}
	cancel()
	for _, interrupt := range g.interrupt {
		if interrupt != nil {
			interrupt()
		}
	}
	for ; received < len(g.execute); received++ {
		if err := <-errs; first == nil {
			first = err
		}
	}
	return first
}

// AddHTTP adds an HTTP server (a front-end's metrics) serving handler on
// ln until the group stops; a scrape in progress then gets a second to
// finish. The caller opens ln, so an address in use is reported before
// anything starts. A server that fails stops the group with its error,
// named by what (for example "metrics").
func (g *Group) AddHTTP(what string, ln net.Listener, handler http.Handler) {
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	g.Add(func(context.Context) error {
		if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}, func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		hs.Shutdown(ctx)
	})
}

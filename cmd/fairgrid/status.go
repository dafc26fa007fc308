package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/fairgrid/fairgrid/internal/cli"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/group"
	"github.com/fairgrid/fairgrid/throttle/status"
)

// newStatusPage is a front-end's live page (throttle/status): served on
// its metrics address, with Prometheus at /metrics, when it has one, and
// sampled in any case for the summary at exit.
func newStatusPage(front string, every time.Duration, src func(time.Time) status.Snapshot, health func(time.Time) (bool, []string), metrics http.Handler, log *slog.Logger) *status.Page {
	v := currentVersion()
	p, err := status.New(status.Config{Front: front, Version: v.Version, Every: every, Source: src, Health: health, Metrics: metrics, Log: log}, time.Now())
	if err != nil {
		panic("BUG: " + err.Error()) // every field is set here
	}
	return p
}

// loopPage is run's and the proxy's page, over the daemon's loop,
// sampled at its decisions (a second at least: a shorter interval is a
// test's or the lab's).
func loopPage(front string, loop *throttle.Loop, metrics http.Handler, health func(time.Time) (bool, []string), log *slog.Logger) *status.Page {
	return newStatusPage(front, max(time.Second, loop.Interval()), status.FromLoop(loop), health, metrics, log)
}

// addStatus adds the page's sampling to the front-end's group.
func addStatus(g *group.Group, p *status.Page) { g.Add(p.Run, nil) }

func runStatus(args []string, s stdio) int {
	fs := newFlagSet("status", cli.StatusSynopsis, s)
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for an answer")
	wait := fs.Duration("wait", 0, "ask again until a circuit receives or this `duration` has passed")
	if c, ok := parseFlagsArgs(fs, cli.StatusSynopsis, args, s); !ok {
		return c
	}
	if fs.NArg() > 1 {
		fmt.Fprintf(s.err, "fairgrid status: unexpected argument %q (one address at most)\n", fs.Arg(1))
		return exitUsage
	}
	addrs := status.DefaultAddrs
	if fs.NArg() == 1 {
		addr, err := status.ParseAddr(fs.Arg(0))
		if err != nil {
			fmt.Fprintf(s.err, "fairgrid status: %v; see fairgrid status --help\n", err)
			return exitUsage
		}
		addrs = []string{addr}
	}
	snap, addr, errs := status.Wait(addrs, *timeout, *wait)
	switch {
	case len(errs) == len(addrs):
		fmt.Fprintf(s.err, "fairgrid status: %s; is fairgrid proxy, run or gateway running, and is ADDR its --metrics address?\n", strings.Join(errs, "; "))
		return exitFail
	case snap.Flowing():
		status.WriteText(s.out, snap)
		return exitOK
	}
	status.WriteText(s.out, snap)
	fmt.Fprintf(s.err, "fairgrid status: nothing is flowing at %s\n", addr)
	return exitFail
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fairgrid/fairgrid/opensim/gateway"
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

// captureQuiet is how long run's capture may see no simulator datagram
// before /healthz says so: a logged-in viewer's simulator pings it every
// 5 s.
const captureQuiet = 30 * time.Second

// captureHealth is run's health: the capture on iface open, and a
// simulator datagram seen within captureQuiet.
func captureHealth(iface, ports string, captured func() uint64) func(time.Time) (bool, []string) {
	var mu sync.Mutex
	var last uint64
	var at time.Time
	return func(now time.Time) (bool, []string) {
		mu.Lock()
		defer mu.Unlock()
		n := captured()
		if at.IsZero() || n != last {
			last, at = n, now
		}
		quiet := now.Sub(at).Round(time.Second)
		if n == 0 || quiet > captureQuiet {
			return false, []string{fmt.Sprintf("capture on %s: no simulator datagram (capture.ports %s) for %v; is a viewer logged in, on this interface?", iface, ports, quiet)}
		}
		return true, []string{fmt.Sprintf("capture on %s: %d datagrams, the last %v ago", iface, n, quiet)}
	}
}

// listenHealth is the proxy's: listening. The page is served by the
// proxy's group, which ends when the listener fails, so it is healthy
// whenever it answers.
func listenHealth(what string) func(time.Time) (bool, []string) {
	return func(time.Time) (bool, []string) { return true, []string{what + " is listening"} }
}

// gatewayHealth is the gateway's: each route's region answering.
func gatewayHealth(gw *gateway.Gateway) func(time.Time) (bool, []string) {
	return func(time.Time) (bool, []string) {
		ok := true
		var lines []string
		for _, h := range gw.Health() {
			ok = ok && h.Answers
			lines = append(lines, h.String())
		}
		return ok, lines
	}
}

const statusSynopsis = `[--wait D] [ADDR]

What a running fairgrid run, proxy or gateway does, one line per
circuit: the region, what is received, what fairgrid asks, one TCP
share, what the viewer asked, loss, RTT and queueing delay, and why. It
reads http://ADDR/status.json, the state the live page at http://ADDR/
shows. Without ADDR it asks the default metrics addresses in turn: the
proxy's 127.0.0.1:9102, run's 127.0.0.1:9101, the gateway's
127.0.0.1:9103. Exit 0 when some circuit receives, 1 when nothing flows
(or nothing answers). --wait D asks again until something flows or D
has passed: for a script that has just started the front-end and the
viewer.`

// statusAddrs are the front-ends' default metrics addresses
// (configs/fairgrid.toml), the proxy's first: the one a viewer's user
// runs.
var statusAddrs = []string{"127.0.0.1:9102", "127.0.0.1:9101", "127.0.0.1:9103"}

func runStatus(args []string, s stdio) int {
	fs := newFlagSet("status", statusSynopsis, s)
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for an answer")
	wait := fs.Duration("wait", 0, "ask again until a circuit receives or this `duration` has passed")
	if c, ok := parseFlagsArgs(fs, statusSynopsis, args, s); !ok {
		return c
	}
	if fs.NArg() > 1 {
		fmt.Fprintf(s.err, "fairgrid status: unexpected argument %q (one address at most)\n", fs.Arg(1))
		return exitUsage
	}
	addrs := statusAddrs
	if fs.NArg() == 1 {
		addr, err := statusAddr(fs.Arg(0))
		if err != nil {
			fmt.Fprintf(s.err, "fairgrid status: %v; see fairgrid status --help\n", err)
			return exitUsage
		}
		addrs = []string{addr}
	}
	deadline := time.Now().Add(*wait)
	tick := time.NewTicker(statusRetry)
	defer tick.Stop()
	for {
		snap, addr, errs := firstStatus(addrs, *timeout)
		last := !time.Now().Before(deadline)
		switch {
		case len(errs) == len(addrs) && last:
			fmt.Fprintf(s.err, "fairgrid status: %s; is fairgrid proxy, run or gateway running, and is ADDR its --metrics address?\n", strings.Join(errs, "; "))
			return exitFail
		case len(errs) == len(addrs):
		case snap.Flowing():
			status.WriteText(s.out, snap)
			return exitOK
		case last:
			status.WriteText(s.out, snap)
			fmt.Fprintf(s.err, "fairgrid status: nothing is flowing at %s\n", addr)
			return exitFail
		}
		<-tick.C
	}
}

// statusAddr is the host:port of ADDR, which may be given as a URL of the
// page (http://127.0.0.1:9102/ or its /metrics, as a browser shows it).
func statusAddr(arg string) (string, error) {
	hostPort := strings.TrimPrefix(arg, "http://")
	if i := strings.IndexByte(hostPort, '/'); i >= 0 {
		hostPort = hostPort[:i]
	}
	_, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return "", fmt.Errorf("ADDR %q: want HOST:PORT, such as 127.0.0.1:9102", arg)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("ADDR %q: port %q: want 1 to 65535", arg, port)
	}
	return hostPort, nil
}

// statusRetry is how often --wait asks again.
const statusRetry = 250 * time.Millisecond

// firstStatus is the state at the first of addrs that answers, or why
// none did.
func firstStatus(addrs []string, timeout time.Duration) (status.Snapshot, string, []string) {
	var errs []string
	for _, addr := range addrs {
		snap, err := fetchStatus(addr, timeout)
		if err == nil {
			return snap, addr, nil
		}
		errs = append(errs, err.Error())
	}
	return status.Snapshot{}, "", errs
}

// fetchStatus reads addr's /status.json.
func fetchStatus(addr string, timeout time.Duration) (status.Snapshot, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/status.json", nil)
	if err != nil {
		return status.Snapshot{}, fmt.Errorf("%s: %w", addr, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		var op interface{ Timeout() bool }
		if errors.As(err, &op) && op.Timeout() {
			return status.Snapshot{}, fmt.Errorf("nothing answered at %s within %v", addr, timeout)
		}
		return status.Snapshot{}, fmt.Errorf("nothing answers at %s (%v)", addr, errors.Unwrap(errors.Unwrap(err)))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return status.Snapshot{}, fmt.Errorf("%s answers %s to /status.json: not a fairgrid of this version", addr, resp.Status)
	}
	var snap status.Snapshot
	if err := json.NewDecoder(resp.Body).Decode(&snap); err != nil || snap.Front == "" {
		return status.Snapshot{}, fmt.Errorf("%s: /status.json is not fairgrid's (%v)", addr, err)
	}
	return snap, nil
}

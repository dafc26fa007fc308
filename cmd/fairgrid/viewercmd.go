package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/viewer"
	"github.com/fairgrid/fairgrid/internal/socks5"
	"github.com/fairgrid/fairgrid/ratecalc"
)

const viewerSynopsis = `--sim ADDR [--clients N] [--duration D] [--throttle R] [--viewer-rule] [--ack-delay D] [--socks5 ADDR [--socks5-user U --socks5-pass P]] [--format text|json]
       fairgrid viewer --stress --sim ADDR [--sweep N,N,...] [--duration D]

Synthetic viewers: each logs in to the simulator with UseCircuitCode (no
XML-RPC against fairgrid sim), completes the handshake, streams AgentUpdate
at 10 Hz, acks, pings every 5 s and asks for its throttle with the viewer's
split (default 1,500 kbps of 1024 bit/s, the classic viewer), optionally
following the stock ±10 % rule. At the end each prints what it measured;
--format json gives one object per viewer. With --stress (against fairgrid
sim --stress) each viewer moves once a second and times the echo of its
movement; --sweep tries each viewer count in turn and reports the largest
whose mean delay stays under 100 ms.

With --socks5 each viewer sends and receives through a UDP association
with that SOCKS 5 proxy (fairgrid proxy, say), every datagram wrapped in
the 10-byte RFC 1928 header, as the Second Life viewer does with "Use
SOCKS 5 proxy for UDP traffic"; --socks5-user and --socks5-pass log in
to a proxy that asks (RFC 1929).`

func runViewer(args []string, s stdio) int {
	fs := newFlagSet("viewer", viewerSynopsis, s)
	sim := fs.String("sim", "127.0.0.1:9000", "the simulator's address")
	clients := fs.Int("clients", 1, "number of viewers")
	duration := fs.Duration("duration", 30*time.Second, "how long to run (0: until interrupted)")
	throttleFlag := fs.String("throttle", "1536k", "requested total, bits/s (the classic 1,500 kbps is 1536k)")
	rule := fs.Bool("viewer-rule", false, "follow the stock viewer's ±10 % rule every 5 s")
	ackDelay := fs.Duration("ack-delay", 100*time.Millisecond, "how long acks wait to be batched")
	code := fs.Uint("circuit-code", 1, "circuit code of the first viewer; the others count up")
	format := formatFlag(fs, "output format: `text` or json")
	stress := fs.Bool("stress", false, "stress mode: move once a second and time the region's echoes (run fairgrid sim --stress)")
	sweep := fs.String("sweep", "", "with --stress: viewer counts to try in turn, comma-separated (for example 250,500,1000)")
	proxy := fs.String("socks5", "", "send and receive through this SOCKS 5 proxy (host:port)")
	proxyUser := fs.String("socks5-user", "", "the proxy's username (RFC 1929), with --socks5-pass")
	proxyPass := fs.String("socks5-pass", "", "the proxy's password")
	if c, ok := parseFlags(fs, viewerSynopsis, args, s); !ok {
		return c
	}
	auth, err := socksAuth(*proxy, *proxyUser, *proxyPass)
	if err == nil && *stress && *proxy != "" {
		err = errors.New("--socks5 does not apply to --stress")
	}
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid viewer: %v\n", err)
		return exitUsage
	}
	if *stress {
		return runStress(s, *sim, *sweep, *clients, *duration, *format, uint32(*code))
	}
	addr, err := netip.ParseAddrPort(*sim)
	if err != nil {
		err = fmt.Errorf("--sim %q: want ip:port", *sim)
	}
	var throttle ratecalc.Rate
	if err == nil {
		throttle, err = parsePositiveRate("--throttle", *throttleFlag)
	}
	if err == nil && (*clients < 1 || *clients > 100_000) {
		err = fmt.Errorf("--clients %d: want 1 to 100000", *clients)
	}
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid viewer: %v\n", err)
		return exitUsage
	}
	ctx, stop := runContext(*duration)
	defer stop()
	vs := make([]*viewer.Viewer, *clients)
	var wg sync.WaitGroup
	for i := range vs {
		v, err := viewer.New(viewer.Config{Sim: addr, CircuitCode: uint32(*code) + uint32(i), Throttle: throttle,
			FollowViewerRule: *rule, AckDelay: *ackDelay, SOCKS5: *proxy, SOCKS5Auth: auth}, nil)
		if err != nil {
			fmt.Fprintf(s.err, "fairgrid viewer: %v\n", err)
			return exitFail
		}
		vs[i] = v
		wg.Add(1)
		go func() { defer wg.Done(); v.Run(ctx) }()
	}
	wg.Wait()
	out := &resultWriter{w: s.out}
	enc := json.NewEncoder(out)
	failed := 0
	for _, v := range vs {
		r := v.Report()
		if !r.LoggedIn {
			failed++
		}
		if *format == "json" {
			enc.Encode(r)
			continue
		}
		rtt := "-"
		if r.RTTms != nil {
			rtt = fmt.Sprintf("%.2f ms", *r.RTTms)
		}
		fmt.Fprintf(out, "%s: received %.1f kbit/s (asked %.1f), %d lost in %d loss events, RTT %s, %d reliable (%d duplicates)\n",
			r.Viewer, r.RateBPS/1000, r.ThrottleBPS/1000, r.Lost, r.LossEvents, rtt, r.ReliableReceived, r.ReliableDuplicates)
	}
	if failed > 0 {
		fmt.Fprintf(s.err, "fairgrid viewer: %d of %d viewers did not log in\n", failed, len(vs))
		return out.finish(s, "viewer", exitFail)
	}
	return out.finish(s, "viewer", exitOK)
}

// socksAuth checks the proxy flags: a username and a password go
// together, and both need a proxy.
func socksAuth(proxy, user, pass string) (*socks5.Auth, error) {
	switch {
	case user == "" && pass == "":
		return nil, nil
	case proxy == "":
		return nil, errors.New("--socks5-user and --socks5-pass need --socks5")
	case user == "" || pass == "":
		return nil, errors.New("--socks5-user and --socks5-pass go together")
	}
	return &socks5.Auth{Username: user, Password: pass}, nil
}

// runStress runs stress viewers, for one count or a sweep of counts.
func runStress(s stdio, sim, sweep string, clients int, d time.Duration, format string, firstCode uint32) int {
	addr, err := netip.ParseAddrPort(sim)
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid viewer: --sim %q: want ip:port\n", sim)
		return exitUsage
	}
	counts := []int{clients}
	if sweep != "" {
		counts = nil
		for _, part := range strings.Split(sweep, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(part))
			if err != nil || n < 1 {
				fmt.Fprintf(s.err, "fairgrid viewer: --sweep %q: want counts such as 250,500,1000\n", sweep)
				return exitUsage
			}
			counts = append(counts, n)
		}
	}
	if d <= 0 {
		d = 10 * time.Second
	}
	ctx, stop := runContext(0)
	defer stop()
	out := &resultWriter{w: s.out}
	enc := json.NewEncoder(out)
	if format != "json" {
		fmt.Fprintf(out, "%8s %9s %8s %10s %10s\n", "viewers", "logged in", "echoes", "mean ms", "p99 ms")
	}
	best := 0
	for _, n := range counts {
		res, err := viewer.Stress(ctx, addr, n, d, firstCode)
		firstCode += uint32(n)
		if err != nil {
			fmt.Fprintf(s.err, "fairgrid viewer: %d viewers: %v\n", n, err)
			return exitFail
		}
		if format == "json" {
			enc.Encode(res)
		} else {
			fmt.Fprintf(out, "%8d %9d %8d %10.2f %10.2f\n", res.Viewers, res.LoggedIn, res.Echoes, res.MeanMs, res.P99Ms)
		}
		if res.LoggedIn == n && res.Echoes > 0 && res.MeanMs < 100 {
			best = max(best, n)
		}
		if ctx.Err() != nil || out.err != nil {
			break
		}
	}
	if format == "json" {
		enc.Encode(map[string]int{"largest_n_under_100ms": best})
	} else {
		fmt.Fprintf(out, "largest number of viewers with a mean delay under 100 ms: %d\n", best)
	}
	return out.finish(s, "viewer", exitOK)
}

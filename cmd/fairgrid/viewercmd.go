package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/fairgrid/fairgrid/internal/audit"
	"github.com/fairgrid/fairgrid/internal/lab/viewer"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle/group"
	"github.com/fairgrid/fairgrid/throttle/proxy/socks5"
)

const viewerSynopsis = `--sim ADDR [--clients N] [--duration D] [--throttle R] [--viewer-rule] [--ack-delay D] [--child-regions K] [--socks5 ADDR [--socks5-user U --socks5-pass P]] [--format text|json]
       fairgrid viewer --stress --sim ADDR [--clients N | --sweep N,N,...] [--duration D] [--neighbours K [--view-distance M]] [--sim-metrics URL] [--fleet auto|shared|per-viewer] [--format text|json]

Synthetic viewers: each logs in to the simulator with UseCircuitCode (no
XML-RPC against fairgrid sim), completes the handshake, streams AgentUpdate
at 10 Hz, acks, pings every 5 s and asks for its throttle with the viewer's
split (default 1,500 kbps of 1024 bit/s, the classic viewer), optionally
following the stock ±10 % rule. At the end each prints what it measured;
--format json gives one object per viewer.

With --child-regions K each viewer also opens a child circuit, from the
same socket, to each of K neighbour regions at --sim's port + 1 ... + K
(as fairgrid sim --child-regions K opens them) once its root circuit is
complete: UseCircuitCode, RegionHandshakeReply, acks and pings, but no
CompleteAgentMovement, AgentUpdate or AgentThrottle, as a real viewer's
child circuits (a neighbour takes its throttle from the root region).
It reports what each circuit received and the total. (Not --neighbours:
that is stress mode's neighbours per movement.) With --stress (against fairgrid
sim --stress) each viewer moves once a second and times the echo of its
movement; --sweep tries each viewer count in turn and reports the largest
whose mean delay stays under 100 ms. Each step reports, over its window
(after a 3 s warm-up): the mean neighbours each movement went to, the
datagrams per second in and out at the region and its CPU seconds (read
from fairgrid sim --metrics at --sim-metrics, for example
http://127.0.0.1:9104/metrics), the viewers' CPU seconds (this process),
and the mean and 99th-percentile echo delay. Without --neighbours the
viewers walk in one 256 m region, so the neighbours per move grow with
their number; --neighbours K spreads each step's viewers over a square
sized to give each movement K neighbours on average within
--view-distance (which must be the sim's).

Stress viewers run on one event loop per CPU. --fleet shared (the default
where it works: Linux, with the sim on IPv4 loopback) gives each viewer
its own address 127.x.y.z and serves all of a loop's viewers from one UDP
socket with IP_PKTINFO, read and written 64 and up to 1,024 datagrams a
system call; --fleet per-viewer gives each viewer its own socket, as
other platforms always do. auto uses shared and falls back to per-viewer,
saying why on stderr; the fleet column says which each step used.

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
	childRegions := fs.Int("child-regions", 0, "also open child circuits to this many neighbour regions (0 to 8), at --sim's port + 1 ... + K")
	code := fs.Uint("circuit-code", 1, "circuit code of the first viewer; the others count up")
	format := formatFlag(fs, "output format: `text` or json")
	stress := fs.Bool("stress", false, "stress mode: move once a second and time the region's echoes (run fairgrid sim --stress)")
	sweep := fs.String("sweep", "", "with --stress: viewer counts to try in turn, comma-separated (for example 250,500,1000)")
	neighbours := fs.Float64("neighbours", 0, "with --stress: size the world for this many neighbours per move on average (0: one 256 m region)")
	view := fs.Float64("view-distance", 32, "with --neighbours: the sim's view distance in metres")
	simMetrics := fs.String("sim-metrics", "", "with --stress: URL of the sim's metrics, for its datagram rates and CPU per step")
	fleet := fs.String("fleet", string(viewer.FleetAuto), "with --stress: `auto`, shared (one socket per event loop, a 127.x.y.z address per viewer) or per-viewer (a socket each)")
	profiles := addProfileFlags(fs)
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
	if err == nil && *stress && *childRegions != 0 {
		err = errors.New("--child-regions does not apply to --stress")
	}
	if err == nil && !*stress {
		// A stress flag without --stress would be ignored: a user who
		// forgot --stress would get a plain run and think it measured.
		fs.Visit(func(f *flag.Flag) {
			if err == nil && stressOnlyFlags[f.Name] {
				err = fmt.Errorf("--%s applies only with --stress", f.Name)
			}
		})
	}
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid viewer: %v\n", err)
		return exitUsage
	}
	if *stress {
		stopProfiles, err := profiles.start()
		if err != nil {
			fmt.Fprintf(s.err, "fairgrid viewer: %v\n", err)
			return exitFail
		}
		code := runStress(s, stressFlags{sim: *sim, sweep: *sweep, clients: *clients, duration: *duration, format: *format,
			firstCode: uint32(*code), neighbours: *neighbours, view: *view, metrics: *simMetrics, fleet: *fleet})
		if err := stopProfiles(); err != nil {
			fmt.Fprintf(s.err, "fairgrid viewer: %v\n", err)
		}
		return code
	}
	addr, err := netip.ParseAddrPort(*sim)
	if err != nil {
		err = fmt.Errorf("--sim %q: want ip:port", *sim)
	}
	var asked ratecalc.Rate
	if err == nil {
		asked, err = parsePositiveRate("--throttle", *throttleFlag)
	}
	if err == nil && (*clients < 1 || *clients > 100_000) {
		err = fmt.Errorf("--clients %d: want 1 to 100000", *clients)
	}
	var children []netip.AddrPort
	if err == nil {
		children, err = childRegionAddrs(addr, *childRegions)
	}
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid viewer: %v\n", err)
		return exitUsage
	}
	ctx, stop := runContext(*duration, plainNotice(s.err, "fairgrid viewer"))
	defer stop()
	vs := make([]*viewer.Viewer, *clients)
	for i := range vs {
		v, err := viewer.New(viewer.Config{Sim: addr, CircuitCode: uint32(*code) + uint32(i), Throttle: asked,
			FollowViewerRule: *rule, AckDelay: *ackDelay, SOCKS5: *proxy, SOCKS5Auth: auth, Children: children}, nil)
		if err != nil {
			fmt.Fprintf(s.err, "fairgrid viewer: %v\n", err)
			return exitFail
		}
		vs[i] = v
	}
	if err := viewerGroup(vs).Run(ctx); err != nil {
		fmt.Fprintf(s.err, "fairgrid viewer: %v\n", err)
		return exitFail
	}
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
		rtt := "unknown (no ping answered)"
		if r.RTTms != nil {
			rtt = fmt.Sprintf("%.2f ms", *r.RTTms)
		}
		fmt.Fprintf(out, "%s: received %s (asked %s), %d lost in %d loss events, RTT %s, %d reliable (%d duplicates)\n",
			r.Viewer, ratecalc.Rate(r.RateBPS/8), ratecalc.Rate(r.ThrottleBPS/8), r.Lost, r.LossEvents, rtt, r.ReliableReceived, r.ReliableDuplicates)
		for _, c := range r.Children {
			state := "complete"
			if !c.Complete {
				state = "not complete"
			}
			fmt.Fprintf(out, "%s: child circuit to %s (%s): received %s, %d lost\n", r.Viewer, c.Sim, state, ratecalc.Rate(c.RateBPS/8), c.Lost)
		}
		if len(r.Children) > 0 {
			fmt.Fprintf(out, "%s: all %d circuits: received %s\n", r.Viewer, len(r.Children)+1, ratecalc.Rate(r.TotalRateBPS/8))
		}
		fmt.Fprintf(out, "%s: verdict: %s\n", r.Viewer, viewerVerdict(r))
	}
	if failed > 0 {
		fmt.Fprintf(s.err, "fairgrid viewer: %d of %d viewers did not log in\n", failed, len(vs))
		return out.finish(s, "viewer", exitFail)
	}
	return out.finish(s, "viewer", exitOK)
}

// viewerGroup is viewer's group: each viewer a member, so the first to
// fail stops the others.
func viewerGroup[V runner](vs []V) *group.Group {
	var g group.Group
	for _, v := range vs {
		g.Add(v.Run, nil)
	}
	return &g
}

// childRegionAddrs are the k neighbour regions of sim: the ports after
// its own, as fairgrid sim --child-regions opens them.
func childRegionAddrs(sim netip.AddrPort, k int) ([]netip.AddrPort, error) {
	if k < 0 || k > 8 {
		return nil, fmt.Errorf("--child-regions %d: want 0 to 8 (the neighbours of a region)", k)
	}
	if int(sim.Port())+k > 65535 {
		return nil, fmt.Errorf("--child-regions %d: ports after %d run past 65535", k, sim.Port())
	}
	var out []netip.AddrPort
	for i := range k {
		out = append(out, netip.AddrPortFrom(sim.Addr(), sim.Port()+uint16(i+1)))
	}
	return out, nil
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

// stressOnlyFlags are the flags a run without --stress refuses.
var stressOnlyFlags = map[string]bool{"sweep": true, "neighbours": true, "view-distance": true, "sim-metrics": true, "fleet": true}

// stressFlags are the flags of a stress run.
type stressFlags struct {
	sim, sweep, format, metrics, fleet string
	clients                            int
	duration                           time.Duration
	firstCode                          uint32
	neighbours, view                   float64
}

// runStress runs stress viewers, for one count or a sweep of counts.
func runStress(s stdio, f stressFlags) int {
	addr, err := netip.ParseAddrPort(f.sim)
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid viewer: --sim %q: want ip:port\n", f.sim)
		return exitUsage
	}
	counts := []int{f.clients}
	if f.sweep != "" {
		counts = nil
		for _, part := range strings.Split(f.sweep, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(part))
			if err != nil || n < 1 {
				fmt.Fprintf(s.err, "fairgrid viewer: --sweep %q: want counts such as 250,500,1000\n", f.sweep)
				return exitUsage
			}
			counts = append(counts, n)
		}
	}
	if f.neighbours < 0 || math.IsNaN(f.neighbours) || math.IsInf(f.neighbours, 0) || !(f.view > 0) || math.IsInf(f.view, 0) {
		fmt.Fprintf(s.err, "fairgrid viewer: --neighbours %v, --view-distance %v: want a finite neighbours of 0 or more and a view above 0\n", f.neighbours, f.view)
		return exitUsage
	}
	fleet, err := viewer.ParseFleet(f.fleet)
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid viewer: --fleet: %v\n", err)
		return exitUsage
	}
	d := f.duration
	if d <= 0 {
		d = 10 * time.Second
	}
	ctx, stop := runContext(0, plainNotice(s.err, "fairgrid viewer"))
	defer stop()
	out := &resultWriter{w: s.out}
	enc := json.NewEncoder(out)
	if f.format != "json" {
		fmt.Fprintf(out, "%7s %6s %7s %6s %9s %9s %8s %8s %8s %8s %8s %s\n", "viewers", "logged", "world m", "neigh", "in/s", "out/s",
			"mean ms", "p99 ms", "sim cpu", "view cpu", "window", "fleet")
	}
	best := 0
	firstCode := f.firstCode
	fellBack := false
	for step, n := range counts {
		world := float64(viewer.DefaultStressWorld)
		if f.neighbours > 0 {
			if n < 2 {
				fmt.Fprintf(s.err, "fairgrid viewer: --neighbours needs at least 2 viewers a step, not %d\n", n)
				return exitUsage
			}
			if world, err = viewer.WorldForNeighbours(n, f.neighbours, f.view); err != nil {
				fmt.Fprintf(s.err, "fairgrid viewer: %v\n", err)
				return exitUsage
			}
		}
		if len(counts) > 1 {
			fmt.Fprintf(s.err, "fairgrid viewer: %d viewers, step %d of %d (%v)\n", n, step+1, len(counts), d)
		}
		res, err := viewer.RunStress(ctx, viewer.StressOptions{Sim: addr, Viewers: n, Duration: d, FirstCode: firstCode,
			World: world, RegionMetrics: f.metrics, Fleet: fleet})
		firstCode += uint32(n)
		// A step Ctrl-C cut short measured a part of its window: shown,
		// marked, and never the answer.
		interrupted := ctx.Err() != nil
		if interrupted && res.Viewers == 0 {
			if f.format != "json" {
				fmt.Fprintf(out, "interrupted before the %d-viewer step measured anything\n", n)
			}
			break
		}
		if err != nil && res.Viewers == 0 {
			fmt.Fprintf(s.err, "fairgrid viewer: %d viewers: %v\n", n, err)
			return exitFail
		}
		if err != nil {
			fmt.Fprintf(s.err, "fairgrid viewer: %d viewers: %v\n", n, err)
		}
		if res.FleetFallback != "" && !fellBack {
			fmt.Fprintf(s.err, "fairgrid viewer: a socket per viewer: %s\n", res.FleetFallback)
			fellBack = true
		}
		if f.format == "json" {
			if interrupted {
				enc.Encode(struct {
					viewer.StressResult
					Interrupted bool `json:"interrupted"`
				}{res, true})
			} else {
				enc.Encode(res)
			}
		} else {
			in, outRate, simCPU := "-", "-", "-"
			if res.Region != nil {
				in, outRate = fmt.Sprintf("%.0f", res.Region.InPerSecond), fmt.Sprintf("%.0f", res.Region.OutPerSecond)
				simCPU = fmt.Sprintf("%.2f s", res.Region.CPUSeconds)
			}
			viewCPU := "-"
			if res.ViewerCPUSeconds >= 0 {
				viewCPU = fmt.Sprintf("%.2f s", res.ViewerCPUSeconds)
			}
			fleet := res.Fleet
			if interrupted {
				fleet += " (interrupted: not judged)"
			}
			fmt.Fprintf(out, "%7d %6d %7.0f %6.1f %9s %9s %8.2f %8.2f %8s %8s %6.1f s %s\n", res.Viewers, res.LoggedIn, res.World,
				res.Neighbours, in, outRate, res.MeanMs, res.P99Ms, simCPU, viewCPU, res.WindowSeconds, fleet)
		}
		if !interrupted && res.LoggedIn == n && res.Echoes > 0 && res.MeanMs < 100 {
			best = max(best, n)
		}
		if ctx.Err() != nil || out.err != nil {
			break
		}
	}
	if f.format == "json" {
		enc.Encode(map[string]int{"largest_n_under_100ms": best})
	} else {
		fmt.Fprintf(out, "largest number of viewers with a mean delay under 100 ms: %d\n", best)
		fmt.Fprintf(out, "neigh: other avatars each movement went to (counted at the %s); in/s, out/s: datagrams at the region; cpu: seconds (user+system) over the window, sim and viewers each their own process; fleet: shared sockets or one per viewer\n",
			neighboursAt(f.metrics))
	}
	return out.finish(s, "viewer", exitOK)
}

func neighboursAt(metrics string) string {
	if metrics == "" {
		return "viewers, so losses are missed; --sim-metrics counts them at the region"
	}
	return "region"
}

// viewerVerdict judges what a synthetic viewer received as the audit
// judges a circuit: against the rate a TCP flow would get at its loss
// (counted by bytes, per 1,460-byte segment) and ping RTT.
func viewerVerdict(r viewer.Report) string {
	switch {
	case !r.LoggedIn:
		return "did not log in: nothing to judge"
	case r.Received == 0:
		return "nothing received: nothing to judge"
	case r.RTTms == nil:
		return audit.Verdict(audit.FairNoRTT, nil)
	case r.LossEvents == 0:
		return "no loss: the path had room to spare, so no TCP-fair rate bounds it"
	}
	rtt := time.Duration(*r.RTTms * float64(time.Millisecond))
	p := ratecalc.SegmentLossEventRateOver(float64(r.Bytes), float64(r.Lost), float64(r.LossEvents), float64(r.Bytes)/float64(r.Received))
	if !(p > 0) || rtt <= 0 {
		return audit.Verdict(audit.FairNoData, nil)
	}
	fair := ratecalc.TCPShareRate(audit.NominalSegmentBytes, rtt, p)
	ratio := r.RateBPS / fair.BitsPerSecond()
	return fmt.Sprintf("%s (one share, what a TCP flow would get here: about %s)", audit.Verdict(audit.FairKnown, &ratio), fair)
}

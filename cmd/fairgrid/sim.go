package main

import (
	"fmt"
	"net"

	"github.com/fairgrid/fairgrid/configs"
	"github.com/fairgrid/fairgrid/internal/cli"
	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/fairgrid/fairgrid/throttle/group"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const simSynopsis = `[--listen ADDR] [--activity A [--avatars N]] [--buckets opensim|fair] [--child-regions K [--position X,Y]] [--allow CODE:AGENT:SESSION,...] [--client-max BPS] [--scene-max BPS] [--avatar-priority] [--stress] [--metrics ADDR] [--log-format F] [--duration D] [--max-pending N] [--pending-timeout D] [--circuit-rate R] [--circuit-burst N] [--cpuprofile F] [--blockprofile F] [--mutexprofile F] [--trace F]

A test region simulator speaking LLUDP: viewers log in with UseCircuitCode
(any circuit code unless --allow restricts them), and it sends them the
traffic of an activity (standing, walking, flying, login, idle, terrain, objects, avatars, textures), scheduled
by package opensim at each client's AgentThrottle. It runs until
interrupted or for --duration, then prints its clients.

The first five activities fill a client's queues up to their load
whenever they run short, so the throttle sets the pace; terrain,
objects, avatars and textures are application-limited: each offers a
fixed mean, below, whatever the throttle (docs/opensim.md gives their
sources in OpenSim 0.9.2.2). Demand per client, bytes/s on the wire:

%s

--buckets opensim gives each client OpenSim's per-category token
buckets, which do not lend an idle category's rate to the busy ones, as
OpenSim 0.9.2.2 does; the default, fair, lets the busy categories share
it (package opensim's own scheduler). The default stays fair so that
existing set-ups keep their rates; runs that stand in for OpenSim should
say --buckets opensim.

--child-regions K (1 to 8) also opens K neighbour regions on the next K
ports (--listen's port + 1 ... + K: east, north, west, south, then the
corners), as fairgrid viewer --child-regions K expects. A viewer's
circuit to a neighbour is a child agent: it completes with
RegionHandshakeReply, and the neighbour applies the root's AgentThrottle
times OpenSim's factor max(0.2, 1 - 0.3 d^2/256^2) for the agent at
--position (default 128,128: 0.85 in every neighbour).

Against floods of UseCircuitCode from spoofed addresses, circuits that have
not completed the handshake are capped (--max-pending, --pending-timeout)
and each source /24 or /64 may open --circuit-burst circuits at once and
--circuit-rate a second; connected viewers are never refused.

With --stress each movement a viewer sends (fairgrid viewer --stress) is
echoed to the avatars within --view-distance; the world is not bounded to
one region, so the viewers' density sweep can spread them wider. Its
--metrics include the process's CPU time and the datagrams in and out,
which fairgrid viewer --sim-metrics reads for each sweep step.`

func runSim(args []string, s stdio) int {
	synopsis := fmt.Sprintf(simSynopsis, region.ActivityHelp())
	fs := newFlagSet("sim", synopsis, s)
	flags := region.BindFlags(fs)
	metrics := fs.String("metrics", "", "serve Prometheus metrics on this address (for example 127.0.0.1:9104; run, proxy and gateway take 9101-9103)")
	duration := fs.Duration("duration", 0, "stop after this long (0: until interrupted)")
	logFormat := configs.Default().Log.Format
	fs.TextVar(&logFormat, "log-format", logFormat, logFormatUsage)
	profiles := cli.BindProfileFlags(fs)
	if code, ok := parseFlags(fs, synopsis, args, s); !ok {
		return code
	}
	cfg, childRegions, err := flags.Config()
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid sim: %v\n", err)
		return exitUsage
	}
	log := newLogger(s.err, logFormat, nil)
	srv, err := region.New(cfg, log)
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid sim: %v\n", err)
		return exitFail
	}
	children, err := region.OpenNeighbours(srv, cfg, childRegions, log)
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid sim: %v\n", err)
		return exitFail
	}
	ctx, stop := runContext(*duration, logNotice(log))
	defer stop()
	var metricsLn net.Listener
	if *metrics != "" {
		if metricsLn, err = metricsListener(*metrics, "sim --metrics"); err != nil {
			fmt.Fprintf(s.err, "fairgrid sim: %v\n", err)
			return exitFail
		}
	}
	g := simGroup(srv, metricsLn)
	for _, c := range children {
		g.Add(c.Run, nil)
	}
	stopProfiles, err := profiles.Start()
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid sim: %v\n", err)
		return exitFail
	}
	log.Info("region listening", "addr", srv.Addr(), "activity", cfg.Activity.String(), "buckets", fs.Lookup("buckets").Value.String(), "child_regions", len(children))
	runErr := g.Run(ctx)
	if err := stopProfiles(); err != nil {
		fmt.Fprintf(s.err, "fairgrid sim: %v\n", err)
	}
	if runErr != nil {
		fmt.Fprintf(s.err, "fairgrid sim: %v\n", runErr)
		return exitFail
	}
	region.WriteSummary(s.out, srv, children...)
	return exitOK
}

// simGroup is sim's group: the region, and its metrics' server on
// metrics unless that is nil.
func simGroup(srv *region.Server, metrics net.Listener) *group.Group {
	var g group.Group
	g.Add(srv.Run, nil)
	if metrics != nil {
		reg := prometheus.NewRegistry()
		reg.MustRegister(region.NewCollector(srv), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		g.AddHTTP("metrics", metrics, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	}
	return &g
}

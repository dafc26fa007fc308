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

func runSim(args []string, s stdio) int {
	synopsis := fmt.Sprintf(cli.SimSynopsis, region.ActivityHelp())
	fs := newFlagSet("sim", synopsis, s)
	flags := region.BindFlags(fs)
	metrics := fs.String("metrics", "", "serve Prometheus metrics on this address (for example 127.0.0.1:9104; run, proxy and gateway take 9101-9103)")
	duration := fs.Duration("duration", 0, "stop after this long (0: until interrupted)")
	logFormat := configs.Default().Log.Format
	fs.TextVar(&logFormat, "log-format", logFormat, cli.LogFormatUsage)
	profiles := cli.BindProfileFlags(fs)
	if code, ok := parseFlags(fs, synopsis, args, s); !ok {
		return code
	}
	cfg, childRegions, err := flags.Config()
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid sim: %v\n", err)
		return exitUsage
	}
	log := cli.NewLogger(s.err, logFormat, nil)
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
	ctx, stop := cli.RunContext(*duration, cli.LogNotice(log))
	defer stop()
	var metricsLn net.Listener
	if *metrics != "" {
		if metricsLn, err = cli.MetricsListener(*metrics, "sim --metrics"); err != nil {
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

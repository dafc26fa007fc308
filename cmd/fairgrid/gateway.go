package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/fairgrid/fairgrid/internal/cli"
	"github.com/fairgrid/fairgrid/opensim/gateway"
	"github.com/fairgrid/fairgrid/throttle/group"
	"github.com/fairgrid/fairgrid/throttle/sidecar"
	"github.com/fairgrid/fairgrid/throttle/status"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// gatewayCommand is the gateway's command line.
type gatewayCommand struct {
	fs *flag.FlagSet
	*cli.GatewayFlags
}

func gatewayFlags(s stdio) *gatewayCommand {
	fs := newFlagSet("gateway", cli.GatewaySynopsis, s)
	return &gatewayCommand{fs, cli.BindGatewayFlags(fs)}
}

func runGateway(args []string, s stdio) int {
	c := gatewayFlags(s)
	fs, configPath, check := c.fs, c.ConfigPath, c.Check
	if code, ok := parseFlagsArgs(fs, cli.GatewaySynopsis, args, s); !ok {
		return code
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(s.err, "fairgrid gateway: "+format+"\n", a...)
		return code
	}
	if err := cli.ConfigArg(fs, configPath, *check); err != nil {
		return fail(exitUsage, "%v", err)
	}
	f, cfg, err := c.Load()
	if err != nil {
		return fail(exitUsage, "configuration: %v", err)
	}
	if *check {
		for _, w := range gateway.RouteWarnings(cfg.Routes) {
			fmt.Fprintf(s.err, "fairgrid gateway: warning: %s\n", w)
		}
		fmt.Fprintln(s.out, "configuration ok")
		return exitOK
	}
	level := new(slog.LevelVar)
	level.Set(f.Log.Level.Level())
	log := cli.NewLogger(s.err, f.Log.Format, level)
	gw, err := gateway.New(cfg, log.With("component", "gateway"))
	if err != nil {
		return fail(exitFail, "%v", err)
	}
	// SIGHUP reloads what can change live, as for run and proxy.
	hup, stopHUP := sidecar.NotifyReloads()
	defer stopHUP()
	reloads := sidecar.NewReloads(hup, cli.GatewayReloader(gw, c.Load, f, level, log), log)
	var metrics net.Listener
	var prom http.Handler
	if !f.Metrics.GatewayAddress.IsZero() {
		if metrics, err = cli.MetricsListener(f.Metrics.GatewayAddress.String(), "metrics.gateway_address"); err != nil {
			return fail(exitFail, "%v", err)
		}
		if !f.Metrics.GatewayAddress.Loopback() {
			log.Warn("metrics are served beyond loopback (gateway.metrics_public)", "address", f.Metrics.GatewayAddress, "viewers_identified", cfg.IdentifyViewers)
		}
		reg := sidecar.Registry(gateway.NewCollector(gw, f.Metrics.MaxCircuits), sidecar.ReloadCollector(reloads.Stats))
		prom = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	}
	page := gatewayHandler(gw, prom)
	g := gatewayGroup(gw, metrics, page, reloads)
	addStatus(g, page)
	ctx, stop := cli.RunContext(*c.Duration, cli.LogNotice(log))
	defer stop()
	for i, r := range cfg.Routes {
		log.Info("fairgrid gateway listening", "listen", gw.Addr(i), "region", r.Region, "controller", cfg.Control.Controller)
	}
	if err := g.Run(ctx); err != nil {
		log.Error("fairgrid gateway stopped", "err", err)
		return exitFail
	}
	log.Info("fairgrid gateway stopped", append(gw.Counters().Summary(), page.Summary(time.Now()).Attrs()...)...)
	return exitOK
}

// gatewayHandler is the gateway's live page (status.go), with the
// metrics at /metrics, and at /healthz whether each route's region
// answers: 200 when every one does (or has not been sent anything yet),
// 503 naming those that do not, so a load balancer or a monitor sees a
// region that is down behind a gateway that is up.
func gatewayHandler(gw *gateway.Gateway, metrics http.Handler) *status.Page {
	return newStatusPage("gateway", 0, status.FromGateway(gw), status.GatewayHealth(gw), metrics, nil)
}

// gatewayGroup is gateway's group: the gateway, the metrics' server on
// metrics unless that is nil, and the reloads.
func gatewayGroup(gw *gateway.Gateway, metrics net.Listener, handler http.Handler, reloads *sidecar.Reloads) *group.Group {
	var g group.Group
	g.Add(gw.Run, nil)
	if metrics != nil {
		g.AddHTTP("metrics", metrics, handler)
	}
	g.Add(reloads.Run, nil)
	return &g
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/fairgrid/fairgrid/configs"
	"github.com/fairgrid/fairgrid/opensim/gateway"
	"github.com/fairgrid/fairgrid/throttle/group"
	"github.com/fairgrid/fairgrid/throttle/sidecar"
	"github.com/fairgrid/fairgrid/throttle/status"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const gatewaySynopsis = `[--listen PUBLIC:PORT --region INTERNAL:PORT] [--config FILE] [--check-config [FILE]] [--controller C] [--segment S] [--interval D] [--scene-max BPS] [--bind ADDR] [--metrics ADDR] [--log-level L] [--log-format F] [--duration D]

A UDP gateway at an OpenSim region's public address: every viewer
circuit of the region passes through it, nothing is installed on the
viewer and nothing changed in OpenSim (docs/gateway.md). Set the region's
InternalAddress (Regions.ini) to a private address and ExternalHostName to
the gateway's, and run

    fairgrid gateway --listen PUBLIC:PORT --region INTERNAL:PORT

or list several regions as gateway.routes in the configuration file
(configs/fairgrid.toml, [gateway]). What the region sends each viewer is
scheduled by package opensim (two-level token buckets, proportional fair
queuing over Avatar, Task, Texture, Layer and Asset) at that viewer's
rate, the viewers sharing gateway.scene_bps; each viewer's rate is the
lesser of its own AgentThrottle and a TCP-fair rate the gateway measures
from the viewer's acks and pings ([control]: controller, segment,
interval, clamps), and the region's own throttle is kept there by
rewriting the viewer's AgentThrottle in flight and re-asserting it.

Only the configured regions are ever reached. New circuits are capped
(gateway.max_viewers, max_pending, max_per_prefix) and time out
(pending_timeout, idle_timeout). Flags override the file; SIGHUP reloads
the file (the controller, clamps, caps and timeouts change live; a
changed route, bind address or scheduler setting needs a restart, and the
log says so). --check-config validates and exits.`

// gatewayCommand is the gateway's command line.
type gatewayCommand struct {
	fs             *flag.FlagSet
	set            *settings
	configPath     *string
	check          *bool
	listen, region *string
	duration       *time.Duration
}

// gatewayFlags defines the gateway's flags: run's that apply, and one for
// each [gateway] key a command line needs.
func gatewayFlags(s stdio) *gatewayCommand {
	fs := newFlagSet("gateway", gatewaySynopsis, s)
	c := &gatewayCommand{fs: fs}
	c.configPath, c.check = configFlags(fs)
	c.listen = fs.String("listen", "", "public UDP address viewers reach (the region's ExternalHostName and port); with --region, one more route")
	c.region = fs.String("region", "", "the region's internal UDP address (InternalAddress:InternalPort); with --listen")
	c.set = bindSettings(fs, append(frontEndSettings(metricsKey("gateway")),
		setting{"scene-max", "gateway.scene_bps", "the gateway's uplink, a `rate` in bits/s such as 50M, shared by every viewer"},
		setting{"bind", "gateway.bind", "local `address` of the sockets towards the regions"})...)
	c.duration = fs.Duration("duration", 0, "stop after this long (0: until interrupted)")
	return c
}

func runGateway(args []string, s stdio) int {
	c := gatewayFlags(s)
	fs, configPath, check := c.fs, c.configPath, c.check
	if code, ok := parseFlagsArgs(fs, gatewaySynopsis, args, s); !ok {
		return code
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(s.err, "fairgrid gateway: "+format+"\n", a...)
		return code
	}
	if fs.NArg() > 0 {
		if !*check || fs.NArg() > 1 || *configPath != "" {
			return fail(exitUsage, "unexpected argument %q (a configuration file is given with --config FILE, or as the one argument of --check-config)", fs.Arg(fs.NArg()-1))
		}
		*configPath = fs.Arg(0)
	}
	f, cfg, err := c.load()
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
	log := newLogger(s.err, f.Log.Format, level)
	gw, err := gateway.New(cfg, log.With("component", "gateway"))
	if err != nil {
		return fail(exitFail, "%v", err)
	}
	// SIGHUP reloads what can change live, as for run and proxy.
	hup, stopHUP := sidecar.NotifyReloads()
	defer stopHUP()
	reloads := sidecar.NewReloads(hup, gatewayReloader(gw, c.load, f, level, log), log)
	var metrics net.Listener
	var prom http.Handler
	if !f.Metrics.GatewayAddress.IsZero() {
		if metrics, err = metricsListener(f.Metrics.GatewayAddress.String(), "metrics.gateway_address"); err != nil {
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
	ctx, stop := runContext(*c.duration, logNotice(log))
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
	return newStatusPage("gateway", 0, status.FromGateway(gw), gatewayHealth(gw), metrics, nil)
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

// gatewayStartKeys are the keys the gateway reads once, at start, beside
// those gateway.Reconfigure names: its log's format, its metrics listener,
// whether that may be off loopback, and its collector's circuit limit.
var gatewayStartKeys = []string{"log.format", "metrics.gateway_address", "metrics.max_circuits", "gateway.metrics_public"}

// gatewayReloader applies the file anew (SIGHUP), the gateway's Reloader
// for sidecar.Reloads, which counts and logs a refusal as for run and
// proxy: what can change live does, and the log names what needs a
// restart (gateway.Reconfigure's, and gatewayStartKeys that differ from
// start, the configuration the gateway started with).
func gatewayReloader(gw *gateway.Gateway, load func() (*configs.File, gateway.Config, error), start *configs.File, level *slog.LevelVar, log *slog.Logger) sidecar.ReloadFunc {
	return func() (applied, restart []string, err error) {
		f, cfg, err := load()
		if err != nil {
			return nil, nil, err
		}
		if restart, err = gw.Reconfigure(cfg); err != nil {
			return nil, nil, err
		}
		for _, key := range configs.Changed(start, f) {
			if slices.Contains(gatewayStartKeys, key) {
				restart = append(restart, key)
			}
		}
		level.Set(f.Log.Level.Level())
		log.Info("configuration reloaded", "controller", cfg.Control.Controller, "needs_restart", strings.Join(restart, ","))
		return nil, restart, nil
	}
}

// load reads --config (or the defaults), applies the flags the user set
// over it (those the gateway shares with run through run's settings, so
// one rule serves both), adds --listen and --region's route, and checks
// that a route is configured.
func (c *gatewayCommand) load() (*configs.File, gateway.Config, error) {
	f, err := c.set.load(*c.configPath)
	if err != nil {
		return nil, gateway.Config{}, err
	}
	switch {
	case *c.listen != "" && *c.region != "":
		var r configs.Route
		if err := r.UnmarshalText([]byte(*c.listen + "=" + *c.region)); err != nil {
			return nil, gateway.Config{}, fmt.Errorf("--listen and --region (gateway.routes): %w", err)
		}
		f.Gateway.Routes = append(f.Gateway.Routes, r)
		if err := f.Validate(); err != nil {
			return nil, gateway.Config{}, err
		}
	case *c.listen != "" || *c.region != "":
		return nil, gateway.Config{}, errors.New("--listen and --region go together")
	}
	if len(f.Gateway.Routes) == 0 {
		return nil, gateway.Config{}, errors.New("no region: give --listen PUBLIC:PORT --region INTERNAL:PORT, or gateway.routes")
	}
	if a := f.Metrics.GatewayAddress; !a.IsZero() && !a.Loopback() && !f.Gateway.MetricsPublic {
		// The metrics show each circuit's rates and, when asked, who the
		// viewers are: a scraper aimed spoofed datagrams with them (issue
		// 34). Off loopback only when the operator says so.
		return nil, gateway.Config{}, fmt.Errorf("metrics.gateway_address %v is off loopback: set gateway.metrics_public = true to serve the gateway's metrics there", a)
	}
	cfg := f.GatewayConfig()
	if _, err := cfg.WithDefaults(); err != nil {
		return nil, gateway.Config{}, err
	}
	return f, cfg, nil
}

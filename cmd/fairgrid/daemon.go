package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/configs"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/status"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsKey is the key a front-end's --metrics sets: each has its own,
// so that they run side by side.
func metricsKey(command string) string {
	switch command {
	case "proxy":
		return "metrics.proxy_address"
	case "gateway":
		return "metrics.gateway_address"
	}
	return "metrics.address"
}

// dryRunSender logs what it would send.
type dryRunSender struct{ log *slog.Logger }

func (d dryRunSender) Send(_ context.Context, r throttle.Request) error {
	d.log.Info("dry run: not sent", "circuit", r.Circuit, "rate", r.Total, "rate_bps", int64(math.Round(r.Total.BitsPerSecond())), "reason", r.Reason)
	return nil
}

// daemon is the loop with what lives beside it (the log level, the
// collector) and the configuration in force, which a reload changes.
type daemon struct {
	loop    *throttle.Loop
	log     *slog.Logger
	level   *slog.LevelVar
	metrics *throttle.Collector
	// running reloads the configuration: the sidecar's Reloader. Its load
	// is the command's reading of the file and flags (setLoad).
	running *throttle.Running[*configs.File]
	page    *status.Page // the live page (status.go), nil until the front-end makes it
}

// errNoReload: a daemon whose command has not said how to read its
// configuration anew.
var errNoReload = errors.New("no configuration to reload from")

// newDaemon builds the loop, the log level and the collector for f.
func newDaemon(f *configs.File, log *slog.Logger, level *slog.LevelVar) (*daemon, error) {
	level.Set(f.Log.Level.Level())
	loop, err := throttle.New(f.Throttle(), log.With("component", "throttle"))
	if err != nil {
		return nil, err
	}
	v := currentVersion()
	d := &daemon{loop: loop, log: log, level: level, metrics: &throttle.Collector{Loop: loop, Version: v.Version, Commit: v.Commit}}
	d.metrics.MaxCircuits.Store(int64(f.Metrics.MaxCircuits))
	d.running = throttle.NewRunning(loop, f, func() (*configs.File, error) { return nil, errNoReload }, d.commit, log)
	return d, nil
}

// setLoad says how a reload reads the configuration: the file again, with
// the flags over it, as at start (run's or the proxy's reading of both).
func (d *daemon) setLoad(load func() (*configs.File, error)) { d.running.SetLoad(load) }

// commit puts in force what lives beside the loop, once the loop has taken
// f's part.
func (d *daemon) commit(f *configs.File) {
	d.level.Set(f.Log.Level.Level())
	d.metrics.MaxCircuits.Store(int64(f.Metrics.MaxCircuits))
}

// registry is the daemon's metrics: its own, and its process's CPU,
// memory and build, which are part of what it promises.
func registry(own prometheus.Collector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(own, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewBuildInfoCollector())
	return reg
}

// runDaemon is the live sidecar: capture, measure, decide, send.
func runDaemon(set *settings, configPath string, check bool, s stdio) int {
	f, err := set.load(configPath)
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid run: configuration: %v\n", err)
		return exitUsage
	}
	if check {
		fmt.Fprintln(s.out, "configuration ok")
		return exitOK
	}
	level := new(slog.LevelVar)
	log := newLogger(s.err, f.Log.Format, level)
	d, err := newDaemon(f, log, level)
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid run: %v\n", err)
		return exitUsage
	}
	cfg := throttle.SidecarConfig{Loop: d.loop, Sender: dryRunSender{log}, Log: log}
	if !f.Send.DryRun {
		raw, err := throttle.NewRawSender()
		if err != nil {
			fmt.Fprintf(s.err, "fairgrid run: %v\n", err)
			return exitFail
		}
		defer raw.Close()
		cfg.Sender = raw
	}
	// The interface is reopened when it fails, so the daemon survives it
	// going down and up.
	iface, ifaceWhy := capture.ResolveInterface(f.Capture.Interface)
	cfg.Reopen = func() (throttle.Source, error) {
		r, err := capture.OpenLive(iface, f.Capture.Ports.Ports())
		if err != nil {
			return nil, err // OpenLive's errors name the interface and what to do
		}
		return r, nil
	}
	if cfg.Source, err = cfg.Reopen(); err != nil {
		fmt.Fprintf(s.err, "fairgrid run: %v\n", err)
		return exitFail
	}
	var sc *throttle.Sidecar
	page := loopPage("run", d, promhttp.HandlerFor(registry(d.metrics), promhttp.HandlerOpts{}), captureHealth(iface, f.Capture.Ports.String(), func() uint64 { return sc.CaptureStats().Datagrams }))
	if !f.Metrics.Address.IsZero() {
		if cfg.MetricsListener, err = metricsListener(f.Metrics.Address.String(), "metrics.address"); err != nil {
			cfg.Source.Close()
			fmt.Fprintf(s.err, "fairgrid run: %v\n", err)
			return exitFail
		}
		cfg.Metrics = page
		if !f.Metrics.Address.Loopback() {
			log.Warn("metrics are served beyond loopback: circuits and agent IDs become visible to the network", "address", f.Metrics.Address)
		}
	}
	// SIGHUP reloads what can change live.
	hup, stopHUP := notifyReloads()
	defer stopHUP()
	d.setLoad(func() (*configs.File, error) { return set.load(configPath) })
	cfg.Reloads, cfg.Reloader = hup, d.running
	sc, err = throttle.NewSidecar(cfg)
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid run: %v\n", err)
		return exitFail
	}
	d.metrics.Capture = sc.CaptureStats
	d.metrics.Reloads = sc.ReloadStats
	ctx, stop := runContext(0, logNotice(log))
	defer stop()
	log.Info("fairgrid running", "interface", iface, "chosen", ifaceWhy, "controller", f.Control.Controller, "dry_run", f.Send.DryRun)
	ports := f.Capture.Ports.Ports()
	carrying := func(ctx context.Context) []string {
		return capture.OpenCensus(upInterfaces(), ports).Carrying(ctx, censusTime)
	}
	g := daemonGroup(sc, iface, f.Capture.Ports.String(), carrying, log)
	addStatus(g, page)
	if err := g.Run(ctx); err != nil {
		log.Error("fairgrid stopped", "err", err)
		return exitFail
	}
	log.Info("fairgrid stopped", page.Summary(time.Now()).Attrs()...)
	return exitOK
}

// daemonGroup is run's group: the sidecar's members, and the warning that
// the capture on iface sees no simulator traffic, naming the interfaces
// that carrying finds carrying it (nil: none looked for).
func daemonGroup(sc *throttle.Sidecar, iface, ports string, carrying func(context.Context) []string, log *slog.Logger) *throttle.Group {
	var g throttle.Group
	sc.AddTo(&g)
	g.Add(func(ctx context.Context) error {
		return warnIfSilent(ctx, silenceWarning, func() uint64 { return sc.CaptureStats().Datagrams }, carrying, iface, ports, log)
	}, nil)
	return &g
}

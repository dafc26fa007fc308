package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/fairgrid/fairgrid/configs"
	"github.com/fairgrid/fairgrid/internal/cli"
	"github.com/fairgrid/fairgrid/throttle/group"
	"github.com/fairgrid/fairgrid/throttle/sidecar"
	"github.com/fairgrid/fairgrid/throttle/status"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// daemon is run's and proxy's loop with what lives beside it.
type daemon = sidecar.Daemon[*configs.File]

// newDaemon builds the daemon of f, which reloads from load.
func newDaemon(f *configs.File, load func() (*configs.File, error), log *slog.Logger, level *slog.LevelVar) (*daemon, error) {
	v := currentVersion()
	return sidecar.NewDaemon(f, load, level, log, v.Version, v.Commit)
}

// runDaemon is the live sidecar: capture, measure, decide, send.
func runDaemon(set *cli.Settings, configPath string, check bool, s stdio) int {
	fail := func(code int, err error) int {
		fmt.Fprintf(s.err, "fairgrid run: %v\n", err)
		return code
	}
	load := func() (*configs.File, error) { return set.Load(configPath) }
	f, err := load()
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid run: configuration: %v\n", err)
		return exitUsage
	}
	if check {
		fmt.Fprintln(s.out, "configuration ok")
		return exitOK
	}
	level := new(slog.LevelVar)
	log := cli.NewLogger(s.err, f.Log.Format, level)
	d, err := newDaemon(f, load, log, level)
	if err != nil {
		return fail(exitUsage, err)
	}
	// SIGHUP reloads what can change live.
	hup, stopHUP := sidecar.NotifyReloads()
	defer stopHUP()
	var live *sidecar.Live
	page := loopPage("run", d.Loop, promhttp.HandlerFor(sidecar.Registry(d.Metrics), promhttp.HandlerOpts{}),
		status.CaptureHealth(f.Capture.Interface, f.Capture.Ports.String(), func() uint64 { return live.Sidecar().CaptureStats().Datagrams }), log)
	cfg := sidecar.LiveConfig{Interface: f.Capture.Interface, Ports: f.Capture.Ports.Ports(), PortsText: f.Capture.Ports.String(),
		DryRun: f.Send.DryRun, Reloads: hup, Reloader: d.Running, Log: log}
	if !f.Metrics.Address.IsZero() {
		if cfg.MetricsListener, err = cli.MetricsListener(f.Metrics.Address.String(), "metrics.address"); err != nil {
			return fail(exitFail, err)
		}
		cfg.Metrics = page
		if !f.Metrics.Address.Loopback() {
			log.Warn("metrics are served beyond loopback: circuits and agent IDs become visible to the network", "address", f.Metrics.Address)
		}
	}
	live, err = sidecar.NewLive(d.Loop, cfg)
	if err != nil {
		return fail(exitFail, err)
	}
	defer live.Close()
	d.Metrics.Capture = live.Sidecar().CaptureStats
	d.Metrics.Reloads = live.Sidecar().ReloadStats
	ctx, stop := cli.RunContext(0, cli.LogNotice(log))
	defer stop()
	log.Info("fairgrid running", "interface", live.Interface, "chosen", live.Chosen, "controller", f.Control.Controller, "dry_run", f.Send.DryRun)
	var g group.Group
	g.Add(live.Run, nil)
	addStatus(&g, page)
	if err := g.Run(ctx); err != nil {
		log.Error("fairgrid stopped", "err", err)
		return exitFail
	}
	log.Info("fairgrid stopped", page.Summary(time.Now()).Attrs()...)
	return exitOK
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/configs"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// loadDaemonConfig reads --config (or the defaults) and applies the flags
// the user set, which override the file.
func loadDaemonConfig(fs *flag.FlagSet, path string) (*configs.File, error) {
	f := configs.Default()
	if path != "" {
		var err error
		if f, err = configs.Load(path); err != nil {
			return nil, err
		}
	}
	var errs []error
	fs.Visit(func(fl *flag.Flag) {
		v := fl.Value.String()
		switch fl.Name {
		case "interface":
			f.Capture.Interface = v
		case "controller":
			// The configuration file's parser: one rule for both.
			if err := f.Control.Controller.UnmarshalText([]byte(v)); err != nil {
				errs = append(errs, fmt.Errorf("--controller (control.controller): %w", err))
			}
		case "segment":
			if err := f.Control.Segment.UnmarshalText([]byte(v)); err != nil {
				errs = append(errs, fmt.Errorf("--segment (control.segment): %w", err))
			}
		case "interval":
			// A flag.Duration already parsed it.
			f.Control.Interval.Duration = fl.Value.(flag.Getter).Get().(time.Duration)
		case "dry-run":
			f.Send.DryRun = v == "true"
		case "metrics":
			f.Metrics.Address = v
		case "log-level":
			f.Log.Level = v
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return f, f.Validate()
}

// dryRunSender logs what it would send.
type dryRunSender struct{ log *slog.Logger }

func (d dryRunSender) Send(_ context.Context, r throttle.Request) error {
	d.log.Info("dry run: not sent", "circuit", r.Circuit, "rate_bps", r.Total.BitsPerSecond(), "reason", r.Reason)
	return nil
}

// restartKeys are the keys a running daemon cannot change: they decide
// what it captures (interface, ports, sims), what state it keeps per
// circuit (max_circuits, controller), its clock (interval), its sockets
// (dry_run opens or closes the raw ones) and its listener, and the proxy's
// keys. A reload names each that differs; every other key is applied at once.
var restartKeys = slices.Concat([]string{
	"capture.interface", "capture.ports", "capture.sims", "capture.max_circuits",
	"control.controller", "control.interval", "send.dry_run", "metrics.address",
}, proxyKeys)

// daemon is the state a reload changes.
type daemon struct {
	mu      sync.Mutex
	running *configs.File // the values in force
	loop    *throttle.Loop
	log     *slog.Logger
	level   *slog.LevelVar
	metrics *throttle.Collector
}

// newDaemon builds the loop, the log level and the collector for f.
func newDaemon(f *configs.File, log *slog.Logger, level *slog.LevelVar) (*daemon, error) {
	l, err := f.LogLevel()
	if err != nil {
		return nil, err
	}
	level.Set(l)
	loop, err := throttle.New(f.Throttle(), log.With("component", "throttle"))
	if err != nil {
		return nil, err
	}
	v := currentVersion()
	d := &daemon{running: f, loop: loop, log: log, level: level, metrics: &throttle.Collector{Loop: loop, Version: v.Version, Commit: v.Commit}}
	d.metrics.MaxCircuits.Store(int64(f.Metrics.MaxCircuits))
	return d, nil
}

// pendingReload is a reload decided but not yet in force.
type pendingReload struct {
	next                 configs.File
	level                slog.Level
	applied, needRestart []string
}

// prepare decides what of nf a reload applies: what differs and can
// change live; the rest keeps the running values and is named.
func (d *daemon) prepare(nf *configs.File) (*pendingReload, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	level, err := nf.LogLevel()
	if err != nil {
		return nil, err
	}
	p := &pendingReload{next: *d.running, level: level}
	for _, key := range configs.Changed(d.running, nf) {
		if slices.Contains(restartKeys, key) {
			p.needRestart = append(p.needRestart, key)
			continue
		}
		p.next.Field(key).Set(nf.Field(key))
		p.applied = append(p.applied, key)
	}
	return p, nil
}

// commit puts in force what lives beside the loop, once the loop has
// taken p.
func (d *daemon) commit(p *pendingReload) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.level.Set(p.level)
	d.metrics.MaxCircuits.Store(int64(p.next.Metrics.MaxCircuits))
	d.running = &p.next
	d.log.Info("configuration reloaded", "applied", p.applied, "need_restart", p.needRestart)
}

// sidecarReload is the sidecar's Reload: the file again, with the flags
// over it, as at start; load is run's or the proxy's reading of both.
func (d *daemon) sidecarReload(load func() (*configs.File, error)) func() (throttle.Config, func(), error) {
	return func() (throttle.Config, func(), error) {
		nf, err := load()
		if err != nil {
			return throttle.Config{}, nil, err
		}
		p, err := d.prepare(nf)
		if err != nil {
			return throttle.Config{}, nil, err
		}
		return p.next.Throttle(), func() { d.commit(p) }, nil
	}
}

// reload applies what differs in nf and can change live, and names the
// rest. Nothing is applied if nf is refused. The running sidecar does the
// same in its steps (sidecarReload).
func (d *daemon) reload(nf *configs.File) (applied, needRestart []string, err error) {
	p, err := d.prepare(nf)
	if err != nil {
		return nil, nil, err
	}
	if _, err := d.loop.Reconfigure(p.next.Throttle()); err != nil {
		return nil, nil, err
	}
	d.commit(p)
	return p.applied, p.needRestart, nil
}

// registry is the daemon's metrics: its own, and its process's CPU,
// memory and build, which are part of what it promises.
func registry(own prometheus.Collector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(own, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewBuildInfoCollector())
	return reg
}

// beyondLoopback reports whether a listen address ("ip:port" or ":port")
// is reachable from other hosts.
func beyondLoopback(addr string) bool {
	ap, err := netip.ParseAddrPort(addr)
	return err != nil || !ap.Addr().IsLoopback()
}

// runDaemon is the live sidecar: capture, measure, decide, send.
func runDaemon(fs *flag.FlagSet, configPath string, check bool, s stdio) int {
	f, err := loadDaemonConfig(fs, configPath)
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid run: configuration: %v\n", err)
		return exitUsage
	}
	if check {
		fmt.Fprintln(s.out, "configuration ok")
		return exitOK
	}
	level := new(slog.LevelVar)
	log := slog.New(slog.NewTextHandler(s.err, &slog.HandlerOptions{Level: level}))
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
	ports, _ := f.Ports()
	iface, ifaceWhy := capture.ResolveInterface(f.Capture.Interface)
	cfg.Reopen = func() (throttle.Source, error) {
		r, err := capture.OpenLive(iface, ports)
		if err != nil {
			return nil, err // OpenLive's errors name the interface and what to do
		}
		return r, nil
	}
	if cfg.Source, err = cfg.Reopen(); err != nil {
		fmt.Fprintf(s.err, "fairgrid run: %v\n", err)
		return exitFail
	}
	if f.Metrics.Address != "" {
		if cfg.MetricsListener, err = net.Listen("tcp", f.Metrics.Address); err != nil {
			cfg.Source.Close()
			fmt.Fprintf(s.err, "fairgrid run: metrics: %v\n", err)
			return exitFail
		}
		cfg.Metrics = promhttp.HandlerFor(registry(d.metrics), promhttp.HandlerOpts{})
		if beyondLoopback(f.Metrics.Address) {
			log.Warn("metrics are served beyond loopback: circuits and agent IDs become visible to the network", "address", f.Metrics.Address)
		}
	}
	// SIGHUP reloads what can change live.
	hup, stopHUP := notifyReloads()
	defer stopHUP()
	cfg.Reloads, cfg.Reload = hup, d.sidecarReload(func() (*configs.File, error) { return loadDaemonConfig(fs, configPath) })
	sc, err := throttle.NewSidecar(cfg)
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid run: %v\n", err)
		return exitFail
	}
	d.metrics.Capture = sc.CaptureStats
	d.metrics.Reloads = sc.ReloadStats
	ctx, stop := runContext(0)
	defer stop()
	log.Info("fairgrid running", "interface", iface, "chosen", ifaceWhy, "controller", f.Control.Controller, "dry_run", f.Send.DryRun)
	var g throttle.Group
	sc.AddTo(&g)
	portList := strings.Join(f.Capture.Ports, ",")
	g.Add(func(ctx context.Context) error {
		return warnIfSilent(ctx, silenceWarning, func() uint64 { return sc.CaptureStats().Datagrams }, iface, portList, log)
	}, nil)
	if err := g.Run(ctx); err != nil {
		log.Error("fairgrid stopped", "err", err)
		return exitFail
	}
	log.Info("fairgrid stopped")
	return exitOK
}

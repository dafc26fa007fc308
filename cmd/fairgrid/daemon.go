package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/configs"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
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
// (dry_run opens or closes the raw ones) and its listener. A reload names
// each that differs; every other key is applied at once.
var restartKeys = []string{
	"capture.interface", "capture.ports", "capture.sims", "capture.max_circuits",
	"control.controller", "control.interval", "send.dry_run", "metrics.address",
}

// daemon is the state a reload changes.
type daemon struct {
	mu      sync.Mutex
	running *configs.File // the values in force
	loop    *throttle.Loop
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
	d := &daemon{running: f, loop: loop, level: level, metrics: &throttle.Collector{Loop: loop}}
	d.metrics.MaxCircuits.Store(int64(f.Metrics.MaxCircuits))
	return d, nil
}

// reload applies what differs in nf and can change live, and names the
// rest. Nothing is applied if nf is refused.
func (d *daemon) reload(nf *configs.File) (applied, needRestart []string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	level, err := nf.LogLevel()
	if err != nil {
		return nil, nil, err
	}
	// The loop takes the live keys only: what needs a restart keeps the
	// running values.
	next := *d.running
	for _, key := range configs.Changed(d.running, nf) {
		if slices.Contains(restartKeys, key) {
			needRestart = append(needRestart, key)
			continue
		}
		next.Field(key).Set(nf.Field(key))
		applied = append(applied, key)
	}
	if _, err := d.loop.Reconfigure(next.Throttle()); err != nil {
		return nil, nil, err
	}
	d.level.Set(level)
	d.metrics.MaxCircuits.Store(int64(next.Metrics.MaxCircuits))
	d.running = &next
	return applied, needRestart, nil
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
	loop := d.loop
	var sender throttle.Sender = dryRunSender{log}
	if !f.Send.DryRun {
		raw, err := throttle.NewRawSender()
		if err != nil {
			fmt.Fprintf(s.err, "fairgrid run: %v\n", err)
			return exitFail
		}
		defer raw.Close()
		sender = raw
	}
	ports, _ := f.Ports()
	reader, err := capture.OpenLive(f.Capture.Interface, ports)
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid run: %v\n", err)
		return exitFail
	}
	ctx, stop := runContext(0)
	defer stop()
	// The capture goroutine replaces the reader when the interface fails;
	// the metrics and the shutdown always reach the current one.
	var current atomic.Pointer[capture.Reader]
	current.Store(reader)
	context.AfterFunc(ctx, func() { current.Load().Close() })

	if f.Metrics.Address != "" {
		d.metrics.Capture = func() capture.Stats { return current.Load().Stats() }
		shutdown, err := serveMetrics(f.Metrics.Address, registry(d.metrics), log)
		if err != nil {
			fmt.Fprintf(s.err, "fairgrid run: metrics: %v\n", err)
			return exitFail
		}
		defer shutdown()
		if beyondLoopback(f.Metrics.Address) {
			log.Warn("metrics are served beyond loopback: circuits and agent IDs become visible to the network", "address", f.Metrics.Address)
		}
	}

	// SIGHUP reloads what can change live.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer close(hup) // after Stop: the reload goroutine ends
	defer signal.Stop(hup)
	go func() {
		for range hup {
			nf, err := loadDaemonConfig(fs, configPath)
			if err != nil {
				log.Error("reload refused: the running configuration stays", "err", err)
				continue
			}
			applied, restart, err := d.reload(nf)
			if err != nil {
				log.Error("reload refused: the running configuration stays", "err", err)
				continue
			}
			log.Info("configuration reloaded", "applied", applied, "need_restart", restart)
		}
	}()

	// Capture: every datagram to the loop; a failing interface is retried,
	// so the daemon survives it going down and up.
	go func() {
		for {
			d, err := reader.Next()
			if err == nil {
				loop.Observe(d)
				continue
			}
			if ctx.Err() != nil {
				return
			}
			log.Warn("capture failed; reopening", "interface", f.Capture.Interface, "err", err)
			for ctx.Err() == nil {
				r, err := capture.OpenLive(f.Capture.Interface, ports)
				if err == nil {
					reader.Close()
					reader = r
					current.Store(r)
					if ctx.Err() != nil {
						r.Close() // shutdown began while it opened
					}
					break
				}
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
		}
	}()

	log.Info("fairgrid running", "interface", f.Capture.Interface, "controller", f.Control.Controller, "dry_run", f.Send.DryRun)
	loop.Run(ctx, sender, nil)
	log.Info("fairgrid stopped")
	return exitOK
}

package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/configs"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/prometheus/client_golang/prometheus"
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
	var err error
	fs.Visit(func(fl *flag.Flag) {
		v := fl.Value.String()
		switch fl.Name {
		case "interface":
			f.Capture.Interface = v
		case "controller":
			f.Control.Controller = v
		case "interval":
			f.Control.Interval.Duration, err = time.ParseDuration(v)
		case "dry-run":
			f.Send.DryRun = v == "true"
		case "metrics":
			f.Metrics.Address = v
		case "log-level":
			f.Log.Level = v
		}
	})
	if err != nil {
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
	level, _ := f.LogLevel()
	log := slog.New(slog.NewTextHandler(s.err, &slog.HandlerOptions{Level: level}))
	loop, err := throttle.New(f.Throttle(), log.With("component", "throttle"))
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid run: %v\n", err)
		return exitUsage
	}
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
		reg := prometheus.NewRegistry()
		reg.MustRegister(&throttle.Collector{Loop: loop, Capture: func() capture.Stats { return current.Load().Stats() }, MaxCircuits: f.Metrics.MaxCircuits})
		shutdown, err := serveMetrics(f.Metrics.Address, reg, log)
		if err != nil {
			fmt.Fprintf(s.err, "fairgrid run: metrics: %v\n", err)
			return exitFail
		}
		defer shutdown()
	}

	// SIGHUP reloads what can change live.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for range hup {
			nf, err := loadDaemonConfig(fs, configPath)
			if err != nil {
				log.Error("reload refused: the running configuration stays", "err", err)
				continue
			}
			restart, err := loop.Reconfigure(nf.Throttle())
			if err != nil {
				log.Error("reload refused", "err", err)
				continue
			}
			if nf.Capture.Interface != f.Capture.Interface || fmt.Sprint(nf.Capture.Ports) != fmt.Sprint(f.Capture.Ports) {
				restart = append(restart, "capture.interface/ports")
			}
			log.Info("configuration reloaded: clamps and hysteresis apply now", "need_restart", restart)
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
	idle := f.Capture.IdleTimeout.Duration
	loop.Run(ctx, sender, func(now time.Time, _ []throttle.Request) {
		if n := loop.Forget(now.Add(-idle)); n > 0 {
			log.Info("forgot idle circuits", "n", n)
		}
	})
	log.Info("fairgrid stopped")
	return exitOK
}

package sidecar

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"syscall"

	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/group"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// DaemonSettings is a daemon's whole configuration (package configs'
// File): Settings for its reloads, and what the daemon keeps in force
// beside the loop.
type DaemonSettings[S any] interface {
	Settings[S]
	// LogLevel is the least level logged.
	LogLevel() slog.Level
	// MetricsMaxCircuits caps the circuits the collector exports one by
	// one.
	MetricsMaxCircuits() int
}

// ErrNoReload refuses the reload of a daemon that has not been told how
// to read its configuration anew.
var ErrNoReload = errors.New("no configuration to reload from")

// Daemon is the loop of a front-end that reads the configuration file
// (fairgrid run, fairgrid proxy) with what lives beside it: the log level,
// the collector, and the configuration in force, which Running reloads.
type Daemon[S DaemonSettings[S]] struct {
	Loop    *throttle.Loop
	Metrics *Collector
	// Running reloads the configuration: the sidecar's Reloader
	// (Config.Reloader).
	Running *Running[S]
	level   *slog.LevelVar
}

// NewDaemon builds the loop of settings, sets level to its log level,
// and makes the collector (its build info labelled version and commit).
// load reads the settings anew at each reload: the file, with the command
// line over it, as at start; nil refuses every reload with ErrNoReload
// until Running.SetLoad says how.
func NewDaemon[S DaemonSettings[S]](settings S, load func() (S, error), level *slog.LevelVar, log *slog.Logger, version, commit string) (*Daemon[S], error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if load == nil {
		load = func() (S, error) { var none S; return none, ErrNoReload }
	}
	level.Set(settings.LogLevel())
	loop, err := throttle.New(settings.Throttle(), log.With("component", "throttle"))
	if err != nil {
		return nil, err
	}
	d := &Daemon[S]{Loop: loop, level: level, Metrics: &Collector{Loop: loop, Version: version, Commit: commit}}
	d.Metrics.MaxCircuits.Store(int64(settings.MetricsMaxCircuits()))
	d.Running = NewRunning(loop, settings, load, d.commit, log)
	return d, nil
}

// LogLevel is the least level logged now: the settings', as the last
// reload put them in force.
func (d *Daemon[S]) LogLevel() slog.Level { return d.level.Level() }

// commit puts in force what lives beside the loop, once the loop has taken
// its part of s.
func (d *Daemon[S]) commit(s S) {
	d.level.Set(s.LogLevel())
	d.Metrics.MaxCircuits.Store(int64(s.MetricsMaxCircuits()))
}

// Registry is a daemon's metrics registry: own, and its process's CPU,
// memory and build, which are part of what it promises.
func Registry(own ...prometheus.Collector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(own...)
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewBuildInfoCollector())
	return reg
}

// DryRunSender logs what it would send (send.dry_run), and sends nothing.
type DryRunSender struct{ Log *slog.Logger }

// Send logs r.
func (d DryRunSender) Send(_ context.Context, r throttle.Request) error {
	d.Log.Info("dry run: not sent", "circuit", r.Circuit, "rate", r.Total, "rate_bps", int64(math.Round(r.Total.BitsPerSecond())), "reason", r.Reason)
	return nil
}

// NotifyReloads turns each SIGHUP into a value on the returned channel,
// the form Config.Reloads and NewReloads take; a SIGHUP while one reload
// is pending adds none, as that one reads the file anew. Call stop when
// the front-end ends; it stops the notification and the forwarding
// goroutine.
func NotifyReloads() (reloads <-chan struct{}, stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	out := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-hup:
				select {
				case out <- struct{}{}:
				default: // one reload pending already reads the file anew
				}
			case <-done:
				return
			}
		}
	}()
	return out, func() { signal.Stop(hup); close(done) }
}

// LiveGroup is fairgrid run's group: sc's members, and the warning that
// the capture on iface sees no simulator traffic after SilenceWarning,
// naming the interfaces that carrying finds carrying it (nil: none looked
// for; ports is what the warning names as the simulator ports).
func LiveGroup(sc *Sidecar, iface, ports string, carrying func(context.Context) []string, log *slog.Logger) *group.Group {
	var g group.Group
	sc.AddTo(&g)
	g.Add(func(ctx context.Context) error {
		return WarnIfSilent(ctx, SilenceWarning, func() uint64 { return sc.CaptureStats().Datagrams }, carrying, iface, ports, log)
	}, nil)
	return &g
}

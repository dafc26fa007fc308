package sidecar

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/fairgrid/fairgrid/throttle"
)

// Settings is a front-end's whole configuration as a reload sees it: the
// loop's part, and which of its other settings can change while running.
type Settings[S any] interface {
	// Throttle is the loop's configuration.
	Throttle() throttle.Config
	// Merge returns the receiver (the settings in force) with what of
	// next can change live, and names the settings applied and those that
	// differ but need a restart (they keep the running values). An error
	// refuses next as a whole.
	Merge(next S) (merged S, applied, needRestart []string, err error)
}

// Reloader applies one reload: Config.Reloader; a Running is one, and
// the gateway's is a ReloadFunc.
type Reloader interface {
	Reload() (applied, needRestart []string, err error)
}

// ReloadFunc is a function as a Reloader.
type ReloadFunc func() (applied, needRestart []string, err error)

// Reload calls f.
func (f ReloadFunc) Reload() (applied, needRestart []string, err error) { return f() }

// ReloadStats counts configuration reloads by outcome.
type ReloadStats struct {
	Applied  uint64 // in force (settings that need a restart were named in the log)
	Rejected uint64 // refused: the running configuration stayed
}

// Reloads is the one reload mechanism of every front-end that reads the
// configuration file (run, proxy, gateway): a group member that applies
// each reload asked for on a channel (each SIGHUP, NotifyReloads) with a
// Reloader, logs a refusal, and counts both outcomes, which the
// front-end's metrics export as fairgrid_config_reloads_total{result}
// (Collector.Reloads, or ReloadCollector beside another collector).
type Reloads struct {
	asks              <-chan struct{}
	r                 Reloader
	log               *slog.Logger
	applied, rejected atomic.Uint64
}

// NewReloads returns the member applying a reload with r at each value
// from asks; log, if not nil, hears of refusals.
func NewReloads(asks <-chan struct{}, r Reloader, log *slog.Logger) *Reloads {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Reloads{asks: asks, r: r, log: log}
}

// Run applies each reload asked for until ctx ends. A closed channel asks
// for no more, and Run waits for ctx.
func (r *Reloads) Run(ctx context.Context) error {
	asks := r.asks
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-asks:
			if !ok {
				asks = nil // closed: no more reloads, the rest runs on
				continue
			}
			if _, _, err := r.r.Reload(); err != nil {
				r.rejected.Add(1)
				r.log.Error("reload refused: the running configuration stays", "err", err)
				continue
			}
			r.applied.Add(1)
		}
	}
}

// Stats counts the reloads applied and rejected so far.
func (r *Reloads) Stats() ReloadStats {
	return ReloadStats{Applied: r.applied.Load(), Rejected: r.rejected.Load()}
}

// Running is the configuration in force beside a Loop and the state
// machine that reloads it: read the settings anew, keep what needs a
// restart, hand the loop its part (Loop.Reconfigure), and only once the
// loop took it put in force what lives beside the loop (log level,
// metrics limits): all of it or, when anything refuses, none. The sidecar
// runs it at each reload asked for; it is safe for concurrent use.
type Running[S Settings[S]] struct {
	loop   *throttle.Loop
	load   func() (S, error)
	commit func(S)
	log    *slog.Logger

	mu      sync.Mutex
	current S
}

// NewRunning returns the state machine for settings current, in force in
// loop: load reads them anew (the file, with the command line over it, as
// at start), and commit, if not nil, puts in force what lives beside the
// loop.
func NewRunning[S Settings[S]](loop *throttle.Loop, current S, load func() (S, error), commit func(S), log *slog.Logger) *Running[S] {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Running[S]{loop: loop, load: load, commit: commit, log: log, current: current}
}

// Current returns the settings in force.
func (r *Running[S]) Current() S {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.current
}

// SetLoad replaces how the settings are read anew (a test's file).
func (r *Running[S]) SetLoad(load func() (S, error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.load = load
}

// Reload applies what of the settings read anew differs and can change
// live, and names the rest; nothing changes if any step refuses them.
func (r *Running[S]) Reload() (applied, needRestart []string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	next, err := r.load()
	if err != nil {
		return nil, nil, err
	}
	merged, applied, needRestart, err := r.current.Merge(next)
	if err != nil {
		return nil, nil, err
	}
	loopRestart, err := r.loop.Reconfigure(merged.Throttle())
	if err != nil {
		return nil, nil, err
	}
	if len(loopRestart) > 0 {
		r.log.Warn("reload: these settings need a restart", "loop", loopRestart)
	}
	if r.commit != nil {
		r.commit(merged)
	}
	r.current = merged
	r.log.Info("configuration reloaded", "applied", applied, "need_restart", needRestart)
	return applied, needRestart, nil
}

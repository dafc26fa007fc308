package sidecar

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/throttle"
)

// LiveConfig is the live daemon's (fairgrid run): a sidecar on a live
// capture, sending as the viewer.
type LiveConfig struct {
	// Interface is the interface to capture on; capture.Auto picks the
	// default route's.
	Interface string
	// Ports are the simulator ports captured; PortsText is how the
	// configuration wrote them, for the silence warning.
	Ports     lludp.Ports
	PortsText string
	// DryRun logs each request (DryRunSender) instead of sending it from
	// raw sockets.
	DryRun bool
	// MetricsListener and Metrics, if set, serve the metrics (Config's).
	MetricsListener net.Listener
	Metrics         http.Handler
	// Reloads and Reloader apply reloads (Config's).
	Reloads  <-chan struct{}
	Reloader Reloader
	Log      *slog.Logger
}

// Live is the live daemon: NewLive acquires its raw sockets and its
// capture, Run serves until its context ends or a part fails, and Close
// releases what Run has not (it is idempotent, and releases all of it
// when Run never ran).
type Live struct {
	sc     *Sidecar
	raw    *RawSender // nil in a dry run
	src    Source
	metric net.Listener
	log    *slog.Logger
	// Interface is the interface captured, and Chosen why (capture.ResolveInterface).
	Interface, Chosen string
	portsText         string
	ports             lludp.Ports
}

// NewLive opens the raw sockets (unless cfg.DryRun) and the capture on
// cfg.Interface for loop, and builds the sidecar around them, reopening
// the capture when it fails so that the daemon survives the interface
// going down and up. It starts nothing. On an error it has released
// what it acquired, cfg.MetricsListener included.
func NewLive(loop *throttle.Loop, cfg LiveConfig) (_ *Live, err error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	l := &Live{metric: cfg.MetricsListener, log: cfg.Log, portsText: cfg.PortsText, ports: cfg.Ports}
	defer func() {
		if err != nil {
			l.Close()
		}
	}()
	sc := Config{Loop: loop, Sender: DryRunSender{Log: cfg.Log}, Log: cfg.Log,
		MetricsListener: cfg.MetricsListener, Metrics: cfg.Metrics, Reloads: cfg.Reloads, Reloader: cfg.Reloader}
	if !cfg.DryRun {
		if l.raw, err = NewRawSender(); err != nil {
			return nil, err
		}
		sc.Sender = l.raw
	}
	l.Interface, l.Chosen = capture.ResolveInterface(cfg.Interface)
	sc.Reopen = func() (Source, error) {
		r, err := capture.OpenLive(l.Interface, cfg.Ports)
		if err != nil {
			return nil, err // OpenLive's errors name the interface and what to do
		}
		return r, nil
	}
	if l.src, err = sc.Reopen(); err != nil {
		return nil, err
	}
	sc.Source = l.src
	if l.sc, err = New(sc); err != nil {
		return nil, err
	}
	return l, nil
}

// Sidecar is the live daemon's sidecar, for its statistics.
func (l *Live) Sidecar() *Sidecar { return l.sc }

// Run serves as LiveGroup does, until ctx ends or a part fails, with
// the silence warning's census listening on every interface that is up.
func (l *Live) Run(ctx context.Context) error {
	carrying := func(ctx context.Context) []string {
		return capture.OpenCensus(UpInterfaces(), l.ports).Carrying(ctx, CensusTime)
	}
	return LiveGroup(l.sc, l.Interface, l.portsText, carrying, l.log).Run(ctx)
}

// Close releases the raw sockets, the capture (Run closes the source it
// ends with; a source Reopen opened is closed there) and the metrics
// listener. Closing twice is harmless.
func (l *Live) Close() error {
	var errs []error
	if l.raw != nil {
		errs = append(errs, l.raw.Close())
		l.raw = nil
	}
	if l.src != nil {
		errs = append(errs, l.src.Close())
		l.src = nil
	}
	if l.metric != nil {
		if err := l.metric.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
		l.metric = nil
	}
	return errors.Join(errs...)
}

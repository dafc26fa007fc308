package sidecar

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/circuit"
	"github.com/fairgrid/fairgrid/throttle/group"
)

// Source yields the datagrams a sidecar measures, each stamped with the
// time it was seen: a live capture (*capture.Reader), the link emulator's
// tap or a proxy's relay (both through a PushSource).
type Source interface {
	// Next blocks until the next datagram. Its Payload need only stay
	// valid until the following call. An error means the source failed or
	// ended (io.EOF); Close interrupts a blocked Next.
	Next() (lludp.Datagram, error)
	Close() error
}

// DefaultReopenEvery is how often a failed source is reopened: an
// interface that went down comes back within seconds, and a second
// between attempts costs nothing while it is away.
const DefaultReopenEvery = time.Second

// Config wires a sidecar. Loop, Source and Sender are required.
type Config struct {
	Loop   *throttle.Loop
	Source Source
	// Sender delivers the loop's requests: raw sockets as the viewer, the
	// link emulator, or a proxy's socket for the association.
	Sender throttle.Sender
	// Reopen, if set, replaces a Source that failed: it is called every
	// ReopenEvery (default DefaultReopenEvery) until it succeeds. Without
	// it a failing source ends Run with its error, and a source that ends
	// (io.EOF, ErrSourceClosed) ends Run without one.
	Reopen      func() (Source, error)
	ReopenEvery time.Duration
	// Metrics, if set, are served over HTTP on MetricsListener until Run
	// ends. The caller opens the listener, so that an address in use is
	// reported before the sidecar starts.
	MetricsListener net.Listener
	Metrics         http.Handler
	// Reloads asks for a reload (NotifyReloads turns each SIGHUP into a
	// value), which Reloader applies (a Running: the loop's part with
	// Loop.Reconfigure, then what the caller keeps beside the loop, or
	// nothing at all) through a Reloads, which counts the outcomes
	// (ReloadStats). A refused reload is logged and changes nothing.
	Reloads  <-chan struct{}
	Reloader Reloader
	// AfterTick, if set, is called after each decision with what was sent.
	AfterTick func(now time.Time, sent []throttle.Request)
	Log       *slog.Logger
}

// Sidecar runs the capture → measure → decide → send path of one
// front-end (the daemon, the demo, the proxy) as one unit: Run starts its
// parts, and returns when all have stopped.
type Sidecar struct {
	cfg     Config
	log     *slog.Logger
	current atomic.Pointer[sourceBox] // the source being read: Reopen replaces it
	reopens atomic.Uint64

	reloads *Reloads // nil without Config.Reloads
}

type sourceBox struct{ Source }

// New checks cfg and returns a sidecar that has not started.
func New(cfg Config) (*Sidecar, error) {
	var errs []error
	if cfg.Loop == nil {
		errs = append(errs, errors.New("no loop"))
	}
	if cfg.Source == nil {
		errs = append(errs, errors.New("no source"))
	}
	if cfg.Sender == nil {
		errs = append(errs, errors.New("no sender"))
	}
	if (cfg.MetricsListener == nil) != (cfg.Metrics == nil) {
		errs = append(errs, errors.New("metrics need both a listener and a handler"))
	}
	if (cfg.Reloads == nil) != (cfg.Reloader == nil) {
		errs = append(errs, errors.New("reloads need both a channel and a Reloader"))
	}
	if cfg.ReopenEvery < 0 {
		errs = append(errs, fmt.Errorf("reopen every %v: want positive", cfg.ReopenEvery))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("sidecar: %w", err)
	}
	if cfg.ReopenEvery == 0 {
		cfg.ReopenEvery = DefaultReopenEvery
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	s := &Sidecar{cfg: cfg, log: cfg.Log}
	if cfg.Reloads != nil {
		s.reloads = NewReloads(cfg.Reloads, cfg.Reloader, cfg.Log)
	}
	s.current.Store(&sourceBox{cfg.Source})
	return s, nil
}

// Loop is the sidecar's control loop.
func (s *Sidecar) Loop() *throttle.Loop { return s.cfg.Loop }

// Request returns the request fairgrid currently wants for circuit k —
// the last one the loop decided and sent, with its split — and false
// before the first. A proxy puts its Throttles into the body of each
// AgentThrottle the viewer sends (see Loop.Request).
func (s *Sidecar) Request(k circuit.Key) (throttle.Request, bool) { return s.cfg.Loop.Request(k) }

// CaptureStats returns the counters of the source being read, if it is a
// capture (it has Stats), and the zero Stats otherwise.
func (s *Sidecar) CaptureStats() capture.Stats {
	if c, ok := s.current.Load().Source.(interface{ Stats() capture.Stats }); ok {
		return c.Stats()
	}
	return capture.Stats{}
}

// ReloadStats counts the reloads applied and rejected so far; a
// Collector's Reloads exports it.
func (s *Sidecar) ReloadStats() ReloadStats {
	if s.reloads == nil {
		return ReloadStats{}
	}
	return s.reloads.Stats()
}

// Reopens counts the sources Reopen has opened.
func (s *Sidecar) Reopens() uint64 { return s.reopens.Load() }

// Run reads the source into the loop, runs the loop's decisions and
// sends, serves the metrics and applies reloads, until ctx ends or one of
// them fails. It returns the first failure (nil when ctx ended or the
// source ended), after every part has stopped, and closes the source.
func (s *Sidecar) Run(ctx context.Context) error {
	var g group.Group
	s.AddTo(&g)
	err := g.Run(ctx)
	s.current.Load().Close()
	return err
}

// AddTo adds the sidecar's members (the source reader, the loop, the
// metrics server and the reload handler) to the caller's group, so a
// front-end that runs more than the sidecar (a proxy's SOCKS 5 server, a
// lab rig) runs them all as one: the first to fail stops the rest. The
// source is closed when the group stops.
func (s *Sidecar) AddTo(g *group.Group) {
	g.Add(s.readSource, func() { s.current.Load().Close() })
	g.Add(func(ctx context.Context) error { return s.cfg.Loop.Run(ctx, s.cfg.Sender, s.cfg.AfterTick) }, nil)
	if s.cfg.Metrics != nil {
		g.AddHTTP("metrics", s.cfg.MetricsListener, s.cfg.Metrics)
	}
	if s.reloads != nil {
		g.Add(s.reloads.Run, nil)
	}
}

// readSource feeds the loop until the source fails or ends; a failed one
// is replaced by Reopen, if set. A source closed because Run is stopping
// is no failure.
func (s *Sidecar) readSource(ctx context.Context) error {
	for {
		src := s.current.Load()
		err := s.drain(src)
		if ctx.Err() != nil {
			return nil
		}
		if s.cfg.Reopen == nil {
			if errors.Is(err, io.EOF) || errors.Is(err, ErrSourceClosed) {
				return nil
			}
			return fmt.Errorf("source: %w", err)
		}
		s.log.Warn("source failed; reopening", "err", err, "every", s.cfg.ReopenEvery)
		// Closed before Reopen, which may hand back the same source.
		src.Close()
		next, err := s.reopen(ctx)
		if err != nil {
			return nil // ctx ended while reopening
		}
		s.current.Store(&sourceBox{next})
		s.reopens.Add(1)
		// Run's stop may have closed the old source just before the swap:
		// the new one must not outlive it.
		if ctx.Err() != nil {
			next.Close()
			return nil
		}
		s.log.Info("source reopened")
	}
}

func (s *Sidecar) drain(src *sourceBox) error {
	for {
		d, err := src.Next()
		if err != nil {
			return err
		}
		s.cfg.Loop.Observe(d)
	}
}

// reopen retries Reopen every ReopenEvery until it succeeds or ctx ends;
// the failures are the one already logged, so they are not logged again.
func (s *Sidecar) reopen(ctx context.Context) (Source, error) {
	t := time.NewTicker(s.cfg.ReopenEvery)
	defer t.Stop()
	for {
		if next, err := s.cfg.Reopen(); err == nil {
			return next, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

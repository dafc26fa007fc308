package sidecar

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fairgrid/fairgrid/internal/fakenet"
	"github.com/fairgrid/fairgrid/internal/lifecycletest"
	"github.com/fairgrid/fairgrid/throttle"
)

// TestLiveGroupMemberFailure: run's group is the sidecar's members (the
// capture source, the loop, the metrics server, the reloads) and the
// silence warning. A capture that fails with no Reopen, or a metrics
// server that fails (with Reopen, as run sets it), ends them all, and its
// error, named, reaches the caller at once: no virtual time passes. In
// synctest's bubble, which fails a test that leaves a goroutine behind.
func TestLiveGroupMemberFailure(t *testing.T) {
	errBroken := errors.New("broken")
	for _, tc := range []struct {
		name    string
		source  func() Source
		reopen  bool
		metrics func() net.Listener
		want    string
	}{
		{"capture source, no reopen", func() Source { return &scriptedSource{err: errBroken} }, false,
			func() net.Listener { return fakenet.NewListener(nil) }, "source: broken"},
		{"metrics", func() Source { return NewChanSource(1) }, true,
			func() net.Listener { return fakenet.NewListener(errBroken) }, "metrics: broken"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				log := slog.New(slog.DiscardHandler)
				d, err := NewDaemon(testSettings{}, nil, new(slog.LevelVar), log, "", "")
				if err != nil {
					t.Fatal(err)
				}
				cfg := Config{Loop: d.Loop, Source: tc.source(), Sender: DryRunSender{Log: log}, Log: log,
					MetricsListener: tc.metrics(), Metrics: http.NotFoundHandler(), Reloads: make(chan struct{}), Reloader: d.Running}
				if tc.reopen {
					cfg.Reopen = func() (Source, error) { return NewChanSource(1), nil }
				}
				sc, err := New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				lifecycletest.FailsAtOnce(t, LiveGroup(sc, "lo", "9000-9050", nil, log).Run, errBroken, tc.want)
			})
		})
	}
}

// TestDaemonReloadUnset: a daemon not told how to read its settings
// anew refuses a reload with ErrNoReload and keeps its loop's settings.
func TestDaemonReloadUnset(t *testing.T) {
	d, err := NewDaemon(testSettings{throttle.Config{Interval: 2 * time.Second}}, nil, new(slog.LevelVar), nil, "", "")
	if err != nil {
		t.Fatal(err)
	}
	before := d.Loop.Config()
	if _, _, err := d.Running.Reload(); !errors.Is(err, ErrNoReload) {
		t.Errorf("Reload = %v, want ErrNoReload", err)
	}
	if before.Interval != 2*time.Second || d.Loop.Config().Interval != before.Interval {
		t.Errorf("the loop changed: %v, was %v", d.Loop.Config().Interval, before.Interval)
	}
}

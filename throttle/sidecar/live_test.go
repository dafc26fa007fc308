package sidecar

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/lifecycletest"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/throttle"
)

// TestLiveCloseWithoutRun: NewLive acquires its capture and its raw
// sockets, and Close releases them all without Run having run (the fd
// count is back where it was); a second Close is harmless.
func TestLiveCloseWithoutRun(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a live capture and raw sockets are Linux's")
	}
	loop, err := throttle.New(throttle.Config{Interval: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, dryRun := range []bool{true, false} {
		before := lifecycletest.Open(t)
		l, err := NewLive(loop, LiveConfig{Interface: "lo", Ports: lludp.SimPorts, DryRun: dryRun})
		if err != nil {
			t.Skipf("a live capture on lo and raw sockets need CAP_NET_RAW (run as root; CI does): %v", err)
		}
		if lifecycletest.Open(t) <= before {
			t.Errorf("dry run %v: NewLive acquired no descriptor", dryRun)
		}
		if err := l.Close(); err != nil {
			t.Errorf("dry run %v: Close: %v", dryRun, err)
		}
		if after := lifecycletest.Open(t); after != before {
			t.Errorf("dry run %v: %d descriptors open after Close, %d before NewLive", dryRun, after, before)
		}
		if err := l.Close(); err != nil {
			t.Errorf("dry run %v: a second Close: %v", dryRun, err)
		}
	}
}

// TestLiveRunThenClose: Run ends with its context, and Close afterwards
// releases what is left (the raw sockets) without an error for what Run
// closed already.
func TestLiveRunThenClose(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a live capture and raw sockets are Linux's")
	}
	loop, err := throttle.New(throttle.Config{Interval: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := lifecycletest.Open(t)
	l, err := NewLive(loop, LiveConfig{Interface: "lo", Ports: lludp.SimPorts})
	if err != nil {
		t.Skipf("a live capture on lo and raw sockets need CAP_NET_RAW (run as root; CI does): %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("Close after Run: %v", err)
	}
	if after := lifecycletest.Open(t); after != before {
		t.Errorf("%d descriptors open after Run and Close, %d before NewLive", after, before)
	}
}

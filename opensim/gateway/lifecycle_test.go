package gateway_test

import (
	"context"
	"net/netip"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/opensim/gateway"
	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/fairgrid/fairgrid/ratecalc"
)

// openFiles counts the process's open file descriptors.
func openFiles(t *testing.T) int {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("counting open files reads /proc/self/fd, which only Linux has")
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("counting open files: %v", err)
	}
	return len(fds)
}

// TestCloseWithoutRun: New's public sockets are released by Close alone,
// and a second Close is harmless.
func TestCloseWithoutRun(t *testing.T) {
	far := netip.AddrPortFrom(loopback.Addr(), 9) // never dialled: no circuit opens without Run
	cfg := gateway.Config{Routes: []gateway.Route{{Listen: loopback, Region: far}, {Listen: netip.MustParseAddrPort("127.0.0.2:0"), Region: far}}}
	open := func() *gateway.Gateway {
		g, err := gateway.New(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	// The first socket of the process also opens the runtime's poller,
	// which stays: open and close one before counting.
	open().Close()
	before := openFiles(t)
	g := open()
	if n := openFiles(t); n < before+2 {
		t.Fatalf("New of two routes opened %d files", n-before)
	}
	for i := range 2 {
		if err := g.Close(); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
	if n := openFiles(t); n != before {
		t.Errorf("%d files open after Close, %d before New", n, before)
	}
}

// TestCloseEndsRun: Close during Run, with a viewer's circuit open, ends
// Run; Run's own release after it closes nothing twice.
func TestCloseEndsRun(t *testing.T) {
	sim, _ := startRegion(t, region.Config{Activity: region.Standing})
	g, err := gateway.New(gateway.Config{Routes: route(sim.Addr())}, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- g.Run(context.Background()) }()
	f := startViewers(t, g.Addr(0), []ratecalc.Rate{ratecalc.RateFromBits(300_000)}, 100, 2*time.Second)
	f.served(t)
	if len(g.Circuits()) != 1 {
		t.Fatalf("%d circuits open, want the viewer's", len(g.Circuits()))
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after Close")
	}
	if err := g.Close(); err != nil {
		t.Errorf("Close after Run: %v", err)
	}
	f.wait()
}

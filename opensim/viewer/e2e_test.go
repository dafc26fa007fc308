package viewer

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/fairgrid/fairgrid/ratecalc"
)

// startRegion runs a region on loopback until the test ends.
func startRegion(t *testing.T, cfg region.Config) *region.Server {
	t.Helper()
	if !cfg.Listen.IsValid() {
		cfg.Listen = netip.MustParseAddrPort("127.0.0.1:0")
	}
	s, err := region.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return s
}

// runViewer runs a viewer for d and returns its report.
func runViewer(t *testing.T, cfg Config, d time.Duration) (*Viewer, Report) {
	t.Helper()
	v, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	v.Run(ctx)
	return v, v.Report()
}

// TestLoginAndThrottle: a viewer logs in, asks for 400 kbit/s of a region
// offering far more, and receives close to what it asked for.
func TestLoginAndThrottle(t *testing.T) {
	sim := startRegion(t, region.Config{Activity: region.Flying})
	want := ratecalc.RateFromBits(400_000)
	_, rep := runViewer(t, Config{Sim: sim.Addr(), Throttle: want, CircuitCode: 7}, 4*time.Second)
	t.Logf("report %+v", rep)
	if !rep.LoggedIn || rep.ReliableReceived == 0 {
		t.Fatalf("no login or no traffic: %+v", rep)
	}
	if r := rep.RateBPS / want.BitsPerSecond(); r < 0.8 || r > 1.1 {
		t.Errorf("received %.0f bit/s for a %.0f bit/s throttle (%.2f×)", rep.RateBPS, want.BitsPerSecond(), r)
	}
	if rep.Lost != 0 || rep.RTTms == nil {
		t.Errorf("on loopback: %d lost, RTT %v", rep.Lost, rep.RTTms)
	}
}

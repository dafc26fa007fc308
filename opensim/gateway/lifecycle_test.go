package gateway_test

import (
	"io"
	"net/netip"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/lifecycletest"
	"github.com/fairgrid/fairgrid/opensim/gateway"
	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/fairgrid/fairgrid/ratecalc"
)

// TestCloseWithoutRun: New's public sockets, one per route, are released
// by Close alone, and a second Close is harmless.
func TestCloseWithoutRun(t *testing.T) {
	far := netip.AddrPortFrom(loopback.Addr(), 9) // never dialled: no circuit opens without Run
	cfg := gateway.Config{Routes: []gateway.Route{{Listen: loopback, Region: far}, {Listen: netip.MustParseAddrPort("127.0.0.2:0"), Region: far}}}
	lifecycletest.Released(t, 2, func() io.Closer {
		g, err := gateway.New(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		return g
	})
}

// TestCloseEndsRun: Close during Run, with a viewer's circuit open, ends
// Run; Run's own release after it closes nothing twice.
func TestCloseEndsRun(t *testing.T) {
	sim, _ := startRegion(t, region.Config{Activity: region.Standing})
	g, err := gateway.New(gateway.Config{Routes: route(sim.Addr())}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var f *fleet
	lifecycletest.EndsRun(t, g, g.Run, func() {
		f = startViewers(t, g.Addr(0), []ratecalc.Rate{ratecalc.RateFromBits(300_000)}, 100, 2*time.Second)
		f.served(t)
		if len(g.Circuits()) != 1 {
			t.Fatalf("%d circuits open, want the viewer's", len(g.Circuits()))
		}
	})
	f.wait()
}

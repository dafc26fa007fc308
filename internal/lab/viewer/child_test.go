package viewer

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim"
	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/fairgrid/fairgrid/ratecalc"
)

// TestChildCircuits: a viewer with two neighbour regions opens a child
// circuit to each once its root circuit is complete, completes them with
// RegionHandshakeReply and no CompleteAgentMovement, and is served on all
// three. The regions use OpenSim's buckets and offer textures above the
// Texture rate, so each circuit receives its Texture rate: a child's is
// the root's times OpenSim's factor, 0.85 for an agent at the centre.
// At logout the children are closed at once.
func TestChildCircuits(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: an end-to-end run in real time")
	}
	cfg := region.Config{Activity: region.Textures, Scheduler: opensim.Config{ChannelBuckets: true}}
	root := startRegion(t, cfg)
	var children []*region.Server
	var addrs []netip.AddrPort
	for i := range 2 {
		c := cfg
		off := region.NeighbourOffsets[i]
		c.Child = &region.ChildConfig{OffsetX: off[0], OffsetY: off[1]}
		c.Listen = netip.MustParseAddrPort("127.0.0.1:0")
		s, err := region.New(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := root.AddChild(s); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { s.Run(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
		children, addrs = append(children, s), append(addrs, s.Addr())
	}
	_, rep := runViewer(t, Config{Sim: root.Addr(), CircuitCode: 31, Throttle: ratecalc.RateFromBits(1536 * 1024), Children: addrs}, 3*time.Second)
	t.Logf("root %.0f bit/s, children %+v, total %.0f bit/s", rep.RateBPS, rep.Children, rep.TotalRateBPS)
	if !rep.LoggedIn || len(rep.Children) != 2 {
		t.Fatalf("root logged in %v, %d child reports", rep.LoggedIn, len(rep.Children))
	}
	sum := rep.Bytes
	want := float64(region.ChildThrottleFactor(lludp.Vector3{128, 128, 25}, 1, 0))
	for i, c := range rep.Children {
		sum += c.Bytes
		if !c.LoggedIn || !c.Complete || c.Received == 0 {
			t.Errorf("child %d: %+v", i, c)
			continue
		}
		if r := c.RateBPS / rep.RateBPS; r < want-0.08 || r > want+0.08 {
			t.Errorf("child %d received %.2f of the root's rate, want the factor %.2f", i, r, want)
		}
		// The neighbour applied the root's throttle, scaled, and was sent
		// no CompleteAgentMovement: its circuit was gone at logout. The
		// viewer's CloseCircuit may still be in flight when runViewer
		// returns; the region handles it on its own loop, which exports
		// nothing to wait on but its counters (a fresh clone's make test
		// read them a moment early once).
		closed := time.NewTicker(5 * time.Millisecond)
		for deadline := time.Now().Add(2 * time.Second); children[i].Counters().LoggedOut == 0 && time.Now().Before(deadline); {
			<-closed.C
		}
		closed.Stop()
		if n := len(children[i].Clients()); n != 0 {
			t.Errorf("child region %d still has %d circuits after logout", i, n)
		}
		if k := children[i].Counters(); k.LoggedOut != 1 {
			t.Errorf("child region %d: %d circuits closed by the viewer, want 1", i, k.LoggedOut)
		}
	}
	if rep.TotalBytes != sum {
		t.Errorf("total %d bytes, circuits sum to %d", rep.TotalBytes, sum)
	}
}

// TestChildrenErrors: child regions that cannot be circuits are refused.
func TestChildrenErrors(t *testing.T) {
	sim := netip.MustParseAddrPort("127.0.0.1:9000")
	for _, cfg := range []Config{
		{Sim: sim, Children: []netip.AddrPort{{}}},
		{Sim: sim, Children: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")}},
		{Sim: sim, Children: []netip.AddrPort{sim}},
		{Sim: sim, Children: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:9001"), netip.MustParseAddrPort("127.0.0.1:9001")}},
		{Sim: sim, Stress: true, Children: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:9001")}},
		{Sim: sim, Children: make([]netip.AddrPort, maxChildren+1)},
	} {
		if v, err := New(cfg, nil); err == nil {
			v.conn.Close()
			t.Errorf("New with children %v (stress %v): no error", cfg.Children, cfg.Stress)
		}
	}
}

// TestWorkloadReceived: what a viewer receives of an application-limited
// workload, on the wire, is the region's stated demand: 40 avatars moving
// at 10 Hz, under OpenSim's buckets at a throttle well above it.
func TestWorkloadReceived(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: an end-to-end run in real time")
	}
	sim := startRegion(t, region.Config{Activity: region.Avatars, Avatars: 40, Scheduler: opensim.Config{ChannelBuckets: true}})
	_, rep := runViewer(t, Config{Sim: sim.Addr(), CircuitCode: 41, Throttle: ratecalc.RateFromBits(3_000_000)}, 2*time.Second)
	want := float64(region.Demand(region.Avatars, 40)) * 8
	got := rep.ByChannel[opensim.Avatar.String()]
	t.Logf("Avatar channel %.0f bit/s, demand %.0f bit/s", got, want)
	if r := got / want; r < 0.9 || r > 1.1 {
		t.Errorf("received %.0f bit/s on the Avatar channel, %.2f of the stated demand %.0f", got, r, want)
	}
}

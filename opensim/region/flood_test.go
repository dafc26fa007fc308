package region_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/viewer"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim/gateway/gatewaytest"
	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// sendFrom sends b to sim from src, a loopback address of its own (all of
// 127/8 is local on Linux, so binding one needs no privilege).
func sendFrom(t *testing.T, src netip.Addr, sim netip.AddrPort, b []byte) {
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(src, 0)))
	if err != nil {
		t.Fatalf("bind %v: %v", src, err)
	}
	conn.WriteToUDPAddrPort(b, sim)
	conn.Close()
}

// recorder keeps the messages logged.
type recorder struct {
	mu   sync.Mutex
	msgs []string
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, rec.Message)
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

// TestFloodBounded: 3,000 UseCircuitCode from fresh spoofed loopback
// addresses, each from its own /24, against a region with small caps,
// while an established viewer is served: the pending circuits and the
// limiter's table stay within their caps, the heap grows by the admitted
// circuits only, every datagram is either admitted or counted, the viewer
// keeps its throttle, and the refusals are logged as one summary line.
func TestFloodBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: a long end-to-end run in real time")
	}
	const flood = 3000
	tests := []struct {
		name        string
		maxPending  int
		maxPrefixes int
		maxGrowth   int64 // bytes of heap
	}{
		// 64 pending circuits of some KB each; before the caps each of the
		// 3,000 cost about 7 KB.
		{"pending cap", 64, 16384, 4 << 20},
		{"limiter table", 1000, 256, 16 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			floodRegion(t, flood, tt.maxPending, tt.maxPrefixes, tt.maxGrowth)
		})
	}
}

func floodRegion(t *testing.T, flood, maxPending, maxPrefixes int, maxGrowth int64) {
	log := &recorder{}
	sim, err := region.New(region.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Activity: region.Flying,
		Admission: region.AdmissionConfig{MaxPending: maxPending, MaxPrefixes: maxPrefixes}}, slog.New(log))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { sim.Run(ctx); close(done) }()
	stopped := false
	stop := func() {
		if !stopped {
			cancel()
			<-done
			stopped = true
		}
	}
	defer stop()

	throttle := ratecalc.RateFromBits(800_000)
	v, err := viewer.New(viewer.Config{Sim: sim.Addr(), CircuitCode: 1, Throttle: throttle}, nil)
	if err != nil {
		t.Fatal(err)
	}
	vctx, vcancel := context.WithTimeout(ctx, 3*time.Second)
	defer vcancel()
	vdone := make(chan struct{})
	go func() { v.Run(vctx); close(vdone) }()
	<-v.Served()
	probe := dial(t, sim.Addr())
	probeID := lludp.AgentData{AgentID: lludp.UUID{0xB0}, SessionID: lludp.UUID{0xB1}}
	probe.send(lludp.FlagReliable, &lludp.UseCircuitCode{Code: 2, AgentID: probeID.AgentID, SessionID: probeID.SessionID})
	probe.send(lludp.FlagReliable, &lludp.CompleteAgentMovement{AgentData: probeID, CircuitCode: 2})
	probe.await(lludp.AgentMovementCompleteID)

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	rng := rand.New(rand.NewPCG(1, 2))
	var worst region.Admission
	for i := range flood {
		n := uint32(i) + 256 // never 127.0.0.x
		sendFrom(t, netip.AddrFrom4([4]byte{127, byte(n >> 8), byte(n), 1 + byte(n%250)}), sim.Addr(), gatewaytest.RandomUseCircuitCode(rng))
		if i%50 == 49 {
			a := sim.Admission()
			worst.Pending, worst.Prefixes = max(worst.Pending, a.Pending), max(worst.Prefixes, a.Prefixes)
		}
	}
	// The region handles datagrams in order: once it has answered the
	// probe's ping, it has handled the whole flood.
	probe.send(0, &lludp.StartPingCheck{PingID: 77})
	probe.await(lludp.CompletePingCheckID)
	<-vdone
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	stop()

	rep := v.Report()
	k := sim.Counters()
	a := sim.Admission()
	clients := sim.Clients()
	growth := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("viewer %.0f bit/s of %.0f; worst %+v, at the end %+v; counters %+v; %d clients; heap growth %d KB",
		rep.RateBPS, rep.ThrottleBPS, worst, a, k, len(clients), growth>>10)
	if worst.Pending > maxPending || a.Pending > maxPending || worst.Prefixes > maxPrefixes || a.Prefixes > maxPrefixes {
		t.Errorf("caps exceeded: worst %+v, end %+v (caps %d pending, %d prefixes)", worst, a, maxPending, maxPrefixes)
	}
	// The flood's circuits never completed: they are the pending ones.
	admitted := a.Pending
	if admitted != min(flood, maxPending) || uint64(admitted)+k.PendingFull+k.RateLimited != uint64(flood) {
		t.Errorf("%d admitted + %d refused for a full table + %d rate-limited, want %d admitted of %d",
			admitted, k.PendingFull, k.RateLimited, min(flood, maxPending), flood)
	}
	// The exported series are the region's state and counters.
	want := fmt.Sprintf(`
# HELP fairgrid_sim_limiter_evictions_total Prefixes evicted from the full limiter table before their bucket had refilled.
# TYPE fairgrid_sim_limiter_evictions_total counter
fairgrid_sim_limiter_evictions_total %d
# HELP fairgrid_sim_limiter_prefixes Source prefixes the new-circuit rate limiter tracks.
# TYPE fairgrid_sim_limiter_prefixes gauge
fairgrid_sim_limiter_prefixes %d
# HELP fairgrid_sim_pending_circuits Circuits that have not completed the handshake.
# TYPE fairgrid_sim_pending_circuits gauge
fairgrid_sim_pending_circuits %d
# HELP fairgrid_sim_refused_circuits_total UseCircuitCode from new endpoints refused by admission control, by reason.
# TYPE fairgrid_sim_refused_circuits_total counter
fairgrid_sim_refused_circuits_total{reason="pending_full"} %d
fairgrid_sim_refused_circuits_total{reason="rate_limited"} %d
`, k.LimiterEvictions, a.Prefixes, a.Pending, k.PendingFull, k.RateLimited)
	if err := testutil.CollectAndCompare(region.NewCollector(sim), strings.NewReader(want), "fairgrid_sim_limiter_evictions_total",
		"fairgrid_sim_limiter_prefixes", "fairgrid_sim_pending_circuits", "fairgrid_sim_refused_circuits_total"); err != nil {
		t.Error(err)
	}
	if growth > maxGrowth {
		t.Errorf("the heap grew %d KB under the flood, want at most %d KB", growth>>10, maxGrowth>>10)
	}
	// The viewer's share under the flood, against a run without, is
	// measured with the sim in a process of its own (cmd/fairgrid
	// TestSimFlood): here the flood's sender shares the process.
	log.mu.Lock()
	defer log.mu.Unlock()
	summaries := 0
	for _, m := range log.msgs {
		if m == "new circuits refused" {
			summaries++
		}
	}
	if summaries != 1 || len(log.msgs) != 1 {
		t.Errorf("%d summaries in %d log records %q: want one summary, no line per datagram", summaries, len(log.msgs), log.msgs)
	}
}

// TestLoginBurstOneAddress: 1,000 viewers behind one address (one NAT)
// send UseCircuitCode at once: the per-prefix budget lets every one in.
func TestLoginBurstOneAddress(t *testing.T) {
	sim, err := region.New(region.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Activity: region.Idle}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { sim.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	const n = 1000
	rng := rand.New(rand.NewPCG(3, 4))
	conns := make([]*net.UDPConn, n)
	for i := range conns {
		c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	for _, c := range conns {
		c.WriteToUDPAddrPort(gatewaytest.RandomUseCircuitCode(rng), sim.Addr())
	}
	// Each admitted circuit's UseCircuitCode is acked at once.
	acked := 0
	buf := make([]byte, 2048)
	var p lludp.Packet
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			m, err := c.Read(buf)
			if err != nil {
				break
			}
			if p.DecodeFromBytes(buf[:m]) == nil && p.ID == lludp.PacketAckID {
				acked++
				break
			}
		}
	}
	k := sim.Counters()
	if acked != n || k.RateLimited != 0 || k.PendingFull != 0 || sim.Admission().Pending != n {
		t.Errorf("%d of %d acked; counters %+v; %+v", acked, n, k, sim.Admission())
	}
}

// await reads until a message with the given ID arrives (a region in
// flying activity sends plenty of others meanwhile).
func (c *rawClient) await(id lludp.MessageID) {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, 2048)
	var p lludp.Packet
	for {
		n, err := c.conn.Read(buf)
		if err != nil {
			c.t.Fatalf("waiting for message %v: %v", id, err)
		}
		if p.DecodeFromBytes(buf[:n]) == nil && p.ID == id {
			return
		}
	}
}

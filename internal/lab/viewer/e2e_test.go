package viewer

import (
	"context"
	"math"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/lludp"
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
	if testing.Short() {
		t.Skip("skipped with -short: a long end-to-end run in real time")
	}
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

// TestLossyLink: through the link emulator with 10 % random loss each way,
// every reliable packet still arrives (resends), and the loss the viewer
// measures is exactly the simulator datagrams whose original transmission
// the emulator dropped (a dropped resend is no new loss).
func TestLossyLink(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: a long end-to-end run in real time")
	}
	sim := startRegion(t, region.Config{Activity: region.Walking})
	var mu sync.Mutex
	droppedOriginals := map[uint32]bool{}
	delivered := map[uint32]bool{}
	var droppedReliable []uint32
	// A reliable packet dropped in the run's last maximum RTO (3 s) may have
	// had no time for a resend: the LogoutReply, say. Earlier ones must all
	// arrive.
	const runFor, maxRTO = 12 * time.Second, 3 * time.Second
	resendBy := time.Now().Add(runFor - maxRTO)
	seqOf := func(b []byte) (uint32, lludp.Flags, bool) {
		h, _, _, err := lludp.ParseHeader(b)
		return h.Sequence, h.Flags, err == nil
	}
	relay, err := link.New(link.Config{
		Listen: netip.MustParseAddrPort("127.0.0.1:0"), Upstream: sim.Addr(), Seed: 9,
		Down: link.PipeConfig{Loss: 0.1, Delay: 10 * time.Millisecond},
		Up:   link.PipeConfig{Loss: 0.1, Delay: 10 * time.Millisecond},
		OnDrop: func(d link.Datagram, _ link.Cause) {
			seq, flags, ok := seqOf(d.Payload)
			if !ok || d.Up || seq == 0 {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if !flags.Resent() {
				droppedOriginals[seq] = true
			}
			if flags.Reliable() && d.At.Before(resendBy) {
				droppedReliable = append(droppedReliable, seq)
			}
		},
		Tap: func(d link.Datagram) {
			if seq, _, ok := seqOf(d.Payload); ok && !d.Up {
				mu.Lock()
				delivered[seq] = true
				mu.Unlock()
			}
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { relay.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	// Walk for 6 s, then idle for 6 s: resends of what was lost last (RTO
	// up to 3 s) have time to arrive.
	v, err := New(Config{Sim: relay.Addr(), CircuitCode: 11, Throttle: ratecalc.RateFromBits(800_000)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	vctx, vcancel := context.WithTimeout(context.Background(), runFor)
	defer vcancel()
	stand := time.AfterFunc(6*time.Second, func() { sim.SetActivity(region.Idle) })
	defer stand.Stop()
	v.Run(vctx)
	rep := v.Report()
	down, up := relay.Stats()
	mu.Lock()
	defer mu.Unlock()
	missing := 0
	for _, seq := range droppedReliable {
		if !delivered[seq] {
			missing++
		}
	}
	t.Logf("viewer: %d received, %d lost, %d loss events; link down %+v, up %+v; %d originals dropped; %d reliable drops with time to resend, %d never delivered",
		rep.Received, rep.Lost, rep.LossEvents, down, up, len(droppedOriginals), len(droppedReliable), missing)
	if down.DroppedRandom < 20 {
		t.Fatalf("only %d drops: the test did not exercise loss", down.DroppedRandom)
	}
	if missing != 0 {
		t.Errorf("%d reliable packets were never delivered", missing)
	}
	// The last few gaps may be unconfirmed (fewer than three later arrivals).
	if d := int(rep.Lost) - len(droppedOriginals); d > 0 || d < -3 {
		t.Errorf("the viewer measured %d lost, the link dropped %d originals", rep.Lost, len(droppedOriginals))
	}
}

// TestThrottleChange: a new AgentThrottle takes effect at the region
// within one RTT of the viewer sending it (here across a 50 ms-RTT link).
func TestThrottleChange(t *testing.T) {
	applied := make(chan int64, 16)
	sim := startRegion(t, region.Config{Activity: region.Walking, OnThrottle: func(_ netip.AddrPort, _ float64, total int64, _ time.Time) {
		select {
		case applied <- total:
		default:
		}
	}})
	relay, err := link.New(link.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Upstream: sim.Addr(),
		Down: link.PipeConfig{Delay: 25 * time.Millisecond}, Up: link.PipeConfig{Delay: 25 * time.Millisecond}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go relay.Run(ctx)
	v, err := New(Config{Sim: relay.Addr(), CircuitCode: 12, Throttle: ratecalc.RateFromBits(300_000)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	vdone := make(chan struct{})
	go func() { v.Run(ctx); close(vdone) }()
	defer func() { cancel(); <-vdone }()
	first := <-applied // the login throttle
	want := ratecalc.RateFromBits(1_200_000)
	sent := time.Now()
	v.SetThrottle(want)
	select {
	case total := <-applied:
		took := time.Since(sent)
		t.Logf("login throttle %d B/s; the new one (%d B/s) applied %v after it was sent", first, total, took)
		if math.Abs(float64(total)/float64(want)-1) > 0.02 {
			t.Errorf("applied %d B/s, asked %.0f", total, float64(want))
		}
		if took > 50*time.Millisecond+20*time.Millisecond { // one RTT, with scheduling slack
			t.Errorf("took %v, more than one RTT (50 ms)", took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the new throttle never took effect")
	}
}

// TestThousandViewers: 1,000 viewers in one process log in and are served.
func TestThousandViewers(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 viewers: skipped with -short")
	}
	if raceEnabled {
		t.Skip("1,000 viewers under the race detector measure the detector (it slows every packet several-fold and the region collapses under its own resends); make test runs this without -race in its scale step")
	}
	sim := startRegion(t, region.Config{Activity: region.Standing})
	const n = 1000
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	viewers := make([]*Viewer, n)
	var wg sync.WaitGroup
	for i := range viewers {
		// Logins are what this tests: one AgentUpdate a second keeps the
		// load of 1,000 viewers (and the race detector) reasonable.
		v, err := New(Config{Sim: sim.Addr(), CircuitCode: uint32(1000 + i), AgentUpdateInterval: time.Second}, nil)
		if err != nil {
			t.Fatal(err)
		}
		viewers[i] = v
		wg.Add(1)
		go func() { defer wg.Done(); v.Run(ctx) }()
	}
	// Wait for every viewer to be served; the deadline only bounds a failure
	// (the race detector and a busy machine make logins slow, not wrong).
	deadline := time.After(2 * time.Minute)
	served := 0
wait:
	for _, v := range viewers {
		select {
		case <-v.Served():
			served++
		case <-deadline:
			break wait
		}
	}
	cancel()
	wg.Wait()
	t.Logf("%d of %d viewers logged in and received traffic; region refused %+v", served, n, sim.Counters())
	if served != n {
		t.Errorf("only %d of %d viewers were served", served, n)
	}
}

// TestStress: in stress mode every viewer's movements come back as echoes
// from the region, timed.
func TestStress(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: a long end-to-end run in real time")
	}
	sim := startRegion(t, region.Config{Activity: region.Idle, Stress: region.StressConfig{Enabled: true}})
	res, err := Stress(context.Background(), sim.Addr(), 50, 6*time.Second, 5000)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v; the region sent %d terse updates", res, sim.StressEchoes())
	if res.LoggedIn != 50 || res.Echoes == 0 || uint64(res.Echoes) > res.Moves {
		t.Errorf("%+v", res)
	}
	// Each viewer moves about five times, the last three or so timed after
	// the warm-up; nearly every one must come back (UDP on loopback loses
	// little).
	if float64(res.Echoes) < 0.4*float64(res.Moves) || res.Mean <= 0 || res.Mean > time.Second {
		t.Errorf("%d echoes of %d moves, mean %v", res.Echoes, res.Moves, res.Mean)
	}
}

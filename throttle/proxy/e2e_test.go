package proxy_test

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/configs"
	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/internal/lab/viewer"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/group"
	"github.com/fairgrid/fairgrid/throttle/proxy"
	"github.com/fairgrid/fairgrid/throttle/sidecar"
)

// anyPort lets the relay send to the tests' regions, which listen on
// ephemeral ports rather than the simulator ports.
var anyPort = lludp.Ports{{Lo: 1, Hi: 65535}}

// e2eInterval is shorter than the daemon's 5 s so the test stays short:
// at 2 Mbit/s and 3 % loss a second holds about 7 loss events, enough for
// the loss event rate, and the stock viewer still overrides every 5 s, so
// several of its AgentThrottles cross the proxy after fairgrid's first
// decision.
const (
	e2eInterval  = time.Second
	e2eIntervals = 30
)

// TestProxyEndToEnd: sim ← link (2 Mbit/s, 50 ms, 3 %) ← proxy ← viewer
// through SOCKS5, asking 1,500 kbps with its stock rule. The region applies
// each of fairgrid's requests within an interval; no AgentThrottle of the
// viewer's reaches it unreplaced once fairgrid has decided; every reliable
// packet the viewer sends is acked; and the viewer ends within ±25 % of the
// TCP-fair rate.
func TestProxyEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a 30 s run over loopback")
	}
	t.Parallel()
	log := slog.New(slog.DiscardHandler)

	type applied struct {
		from netip.AddrPort
		bps  float64
		at   time.Time
	}
	var mu sync.Mutex
	var events []applied
	sim, err := region.New(region.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Activity: region.Flying,
		OnThrottle: func(from netip.AddrPort, requested float64, _ int64, at time.Time) {
			mu.Lock()
			events = append(events, applied{from, requested, at})
			mu.Unlock()
		}}, log)
	if err != nil {
		t.Fatal(err)
	}
	// fairgrid link's 2M,50ms,3%,100.
	lc := link.PipeConfig{Rate: 2_000_000 / 8, Delay: 50 * time.Millisecond, Loss: 0.03, Buffer: 100}
	relay, err := link.New(link.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Upstream: sim.Addr(), Down: lc, Up: lc, Seed: 1}, log)
	if err != nil {
		t.Fatal(err)
	}

	f := configs.Default()
	f.Control.Interval.Duration = e2eInterval
	f.Metrics.Address = configs.Address{}
	// The loop as fairgrid proxy builds it from the configuration.
	d, err := sidecar.NewDaemon(f, nil, new(slog.LevelVar), log, "", "")
	if err != nil {
		t.Fatal(err)
	}
	type tick struct {
		at         time.Time
		sent       []float64 // bits/s
		rate, fair float64
	}
	var ticks []tick
	p, err := proxy.New(proxy.Config{UDPPorts: anyPort}, sidecar.Config{Loop: d.Loop, Log: log, AfterTick: func(now time.Time, sent []throttle.Request) {
		tk := tick{at: now}
		for _, r := range sent {
			tk.sent = append(tk.sent, r.Total.BitsPerSecond())
		}
		if keys := d.Loop.Keys(); len(keys) == 1 {
			_, st, _ := d.Loop.Circuit(keys[0])
			tk.rate = st.ReceiveRate.BitsPerSecond()
			if st.EquationRate > 0 && st.RTTSamples > 0 {
				// The rate the default controller stands on (vtcp: the TFRC
				// equation at 1,460 B and its loss event rate per segment):
				// this test is of the path carrying its decisions; how that
				// rate compares with a real TCP flow is lab fairness's.
				tk.fair = st.EquationRate.BitsPerSecond()
			}
		}
		mu.Lock()
		ticks = append(ticks, tk)
		mu.Unlock()
	}}, log)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), e2eIntervals*e2eInterval+e2eInterval/2)
	defer cancel()
	var wg sync.WaitGroup
	proxyErr := make(chan error, 1)
	wg.Go(func() { sim.Run(ctx) })
	wg.Go(func() { relay.Run(ctx) })
	var g group.Group
	p.AddTo(&g, ln)
	wg.Go(func() { proxyErr <- g.Run(ctx) })
	v, err := viewer.New(viewer.Config{Sim: relay.Addr(), SOCKS5: ln.Addr().String(), FollowViewerRule: true, CircuitCode: 4242}, log)
	if err != nil {
		cancel()
		wg.Wait()
		t.Fatal(err)
	}
	wg.Go(func() { v.Run(ctx) })
	wg.Wait()
	if err := <-proxyErr; err != nil {
		t.Fatalf("proxy: %v", err)
	}

	mu.Lock()
	defer mu.Unlock()
	// What fairgrid asked for, and when.
	ours := map[float64]bool{}
	var firstRequest time.Time
	requests := 0
	for _, tk := range ticks {
		for _, bps := range tk.sent {
			ours[bps] = true
			requests++
			if firstRequest.IsZero() {
				firstRequest = tk.at
			}
		}
	}
	if requests == 0 {
		t.Fatalf("fairgrid sent no request in %d intervals", len(ticks))
	}
	near := func(bps float64) bool {
		for o := range ours {
			if d := (bps - o) / o; d < 0.005 && d > -0.005 {
				return true
			}
		}
		return false
	}

	// Every request is applied within one interval. fairgrid's own requests
	// are unreliable, as the viewer's periodic ones are, so the link's 3 %
	// loses about one in thirty; more than a tenth unapplied is a fault.
	missed := 0
	for _, tk := range ticks {
		if tk.at.Add(e2eInterval).After(events[len(events)-1].at) {
			break // the run ended before it could be applied
		}
		for _, bps := range tk.sent {
			applied := false
			for _, e := range events {
				if !e.at.Before(tk.at) && !e.at.After(tk.at.Add(e2eInterval)) && e.bps > bps*0.995 && e.bps < bps*1.005 {
					applied = true
					break
				}
			}
			if !applied {
				missed++
			}
		}
	}
	if missed > 1+requests/10 {
		t.Errorf("%d of %d requests were not applied within an interval (%v)", missed, requests, e2eInterval)
	}

	// The viewer's own AgentThrottles: only those the proxy relayed before
	// fairgrid's first decision may reach the region with their own values.
	var viewerValues int
	endpoints := map[netip.AddrPort]bool{}
	for _, e := range events {
		endpoints[e.from] = true
		if !near(e.bps) {
			viewerValues++
		}
	}
	if len(endpoints) != 1 {
		t.Errorf("the region applied throttles from %v, want one endpoint (the association's relay socket)", endpoints)
	}
	counts := p.Counts()
	passed, rewritten := counts.BeforeDecision, counts.Rewritten
	if rewritten == 0 {
		t.Errorf("no AgentThrottle of the viewer's crossed the proxy after fairgrid's first decision (%d before): nothing was tested", passed)
	}
	if uint64(viewerValues) > passed {
		t.Errorf("the region applied %d of the viewer's own values; only the %d relayed before fairgrid's first decision may pass (%d rewritten)", viewerValues, passed, rewritten)
	}
	if n := counts.Malformed; n > 0 {
		t.Errorf("%d AgentThrottles did not decode", n)
	}

	// Reliability: the rewrite keeps sequence numbers and flags, so the
	// region acks each packet. A broken rewrite would leave every rewritten
	// AgentThrottle unacked, resent three times and given up; the link's
	// 3 % loss each way explains a resend in about 6 %.
	rel := v.Reliability()
	if rel.Sent < 5 || rel.GaveUp > 0 || rel.Acked+uint64(rel.Pending) != rel.Sent || rel.Resent*2 > rel.Sent {
		t.Errorf("reliable packets: %+v; want every one acked (or pending at the end), none given up, resends at most half", rel)
	}

	// The received rate over the last half, against the TCP-fair rate.
	var rate, fair float64
	for _, tk := range ticks[len(ticks)/2:] {
		if tk.fair > 0 {
			rate += tk.rate
			fair += tk.fair
		}
	}
	if fair == 0 {
		t.Fatal("no TCP-fair rate was measured in the last half")
	}
	if ratio := rate / fair; ratio < 0.75 || ratio > 1.25 {
		t.Errorf("the viewer received %.2f× the TCP-fair rate over the last half, want within ±25 %%", ratio)
	}
	t.Logf("%d intervals, %d requests (%d not applied within an interval), %d of the viewer's AgentThrottles rewritten, %d passed before the first decision, %d re-assertions; reliable %+v; received %.0f kbit/s, TCP-fair %.0f kbit/s",
		len(ticks), requests, missed, rewritten, passed, d.Loop.Stats().Reasserts, rel, rate/float64(len(ticks)-len(ticks)/2)/1000, fair/float64(len(ticks)-len(ticks)/2)/1000)
}

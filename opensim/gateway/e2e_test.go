package gateway_test

import (
	"bytes"
	"context"
	"math"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/internal/audit"
	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/internal/lab/viewer"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim"
	"github.com/fairgrid/fairgrid/opensim/gateway"
	"github.com/fairgrid/fairgrid/opensim/gateway/gatewaytest"
	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/prometheus/client_golang/prometheus"
)

var loopback = netip.MustParseAddrPort("127.0.0.1:0")

// startRegion runs a test region (fairgrid sim) on loopback until the
// test ends or stop is called.
func startRegion(t *testing.T, cfg region.Config) (*region.Server, func()) {
	t.Helper()
	if !cfg.Listen.IsValid() {
		cfg.Listen = loopback
	}
	s, err := region.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return s, stop
}

// startGateway runs a gateway in front of the regions until the test ends.
func startGateway(t *testing.T, cfg gateway.Config) *gateway.Gateway {
	t.Helper()
	g, err := gateway.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	gatewaytest.Run(t, g)
	return g
}

func route(region netip.AddrPort) []gateway.Route {
	return []gateway.Route{{Listen: loopback, Region: region}}
}

// fleet is viewers running until their context ends.
type fleet struct {
	vs   []*viewer.Viewer
	reps []viewer.Report
	wg   sync.WaitGroup
}

// startViewers runs a viewer per throttle at addr for d.
func startViewers(t *testing.T, addr netip.AddrPort, throttles []ratecalc.Rate, firstCode uint32, d time.Duration) *fleet {
	t.Helper()
	f := &fleet{reps: make([]viewer.Report, len(throttles))}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	for i, thr := range throttles {
		v, err := viewer.New(viewer.Config{Sim: addr, Throttle: thr, CircuitCode: firstCode + uint32(i)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		f.vs = append(f.vs, v)
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			v.Run(ctx)
			f.reps[i] = v.Report()
		}()
	}
	go func() { f.wg.Wait(); cancel() }()
	return f
}

// served waits until every viewer has received data after its login.
func (f *fleet) served(t *testing.T) {
	t.Helper()
	for i, v := range f.vs {
		select {
		case <-v.Served():
		case <-time.After(10 * time.Second):
			t.Fatalf("viewer %d never served", i)
		}
	}
}

func (f *fleet) wait() []viewer.Report { f.wg.Wait(); return f.reps }

// TestCircuitsThrough: viewers log in through the gateway, the region
// sees each at an endpoint of the gateway's, one circuit per viewer, and
// each receives about what it asked for; after logout the circuits close.
func TestCircuitsThrough(t *testing.T) {
	sim, _ := startRegion(t, region.Config{Activity: region.Flying})
	gw := startGateway(t, gateway.Config{Routes: route(sim.Addr()), Linger: 200 * time.Millisecond})
	want := []ratecalc.Rate{ratecalc.RateFromBits(300_000), ratecalc.RateFromBits(600_000), ratecalc.RateFromBits(300_000)}
	f := startViewers(t, gw.Addr(0), want, 100, 4*time.Second)
	f.served(t)
	circuits, regionSaw := gw.Circuits(), sim.Clients()
	if len(circuits) != len(want) || len(regionSaw) != len(want) {
		t.Fatalf("%d viewers: the gateway carries %d circuits, the region sees %d", len(want), len(circuits), len(regionSaw))
	}
	seen := map[netip.AddrPort]bool{}
	for _, c := range regionSaw {
		seen[c.Addr] = true
	}
	viewers := map[netip.AddrPort]bool{}
	for _, v := range f.vs {
		viewers[v.Addr()] = true
	}
	for _, c := range circuits {
		if !viewers[c.Viewer] || !seen[c.Local] || viewers[c.Local] {
			t.Errorf("circuit of viewer %v at %v: the region sees %v", c.Viewer, c.Local, regionSaw)
		}
	}
	reps := f.wait()
	for i, r := range reps {
		t.Logf("viewer %d: logged in %v, %.0f bit/s for %.0f, lost %d, RTT %v", i, r.LoggedIn, r.RateBPS, want[i].BitsPerSecond(), r.Lost, r.RTTms)
		if !r.LoggedIn || r.ReliableReceived == 0 {
			t.Fatalf("viewer %d: no login or no traffic through the gateway: %+v", i, r)
		}
		if q := r.RateBPS / want[i].BitsPerSecond(); q < 0.7 || q > 1.15 {
			t.Errorf("viewer %d received %.0f bit/s for %.0f asked (%.2f×)", i, r.RateBPS, want[i].BitsPerSecond(), q)
		}
	}
	for _, c := range gw.Circuits() {
		if !c.Closing {
			t.Errorf("circuit of %v still open after its viewer logged out", c.Viewer)
		}
	}
	k := gw.Counters()
	t.Logf("counters %+v", k)
	if k.Drops[gateway.Passed] == 0 || k.Scheduler.SentBytes == 0 {
		t.Errorf("nothing passed or scheduled: %+v", k)
	}
}

// jain is Jain's fairness index of xs: 1 when all are equal.
func jain(xs []float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	return sum * sum / (float64(len(xs)) * sq)
}

// TestSceneShares: three viewers asking 300, 600 and 900 kbit/s behind a
// 480 kbit/s uplink (the scheduler's scene rate) share it in proportion
// to their rates, as the region offers each more than it can take: Jain's
// index of received/allocated at least 0.95.
func TestSceneShares(t *testing.T) {
	sim, _ := startRegion(t, region.Config{Activity: region.Flying})
	scene := ratecalc.RateFromBits(480_000)
	// The fair rate is clamped above every ask: this is the scene's
	// sharing alone (a new circuit starts at its controller's initial
	// rate, below these asks, and climbs: TestFairRateFromStart).
	gw := startGateway(t, gateway.Config{Routes: route(sim.Addr()), Scheduler: opensim.Config{SceneMax: int64(scene)},
		Control: throttle.Config{Min: ratecalc.RateFromBits(2_000_000)}})
	asks := []ratecalc.Rate{ratecalc.RateFromBits(300_000), ratecalc.RateFromBits(600_000), ratecalc.RateFromBits(900_000)}
	reps := startViewers(t, gw.Addr(0), asks, 200, 3*time.Second).wait()
	var sum ratecalc.Rate
	for _, a := range asks {
		sum += a
	}
	var ratios []float64
	var total float64
	for i, r := range reps {
		alloc := scene.BitsPerSecond() * float64(asks[i]/sum)
		ratios = append(ratios, r.RateBPS/alloc)
		total += r.RateBPS
		t.Logf("viewer %d asked %.0f: received %.0f bit/s, allocated %.0f (%.2f)", i, asks[i].BitsPerSecond(), r.RateBPS, alloc, r.RateBPS/alloc)
	}
	if j := jain(ratios); j < 0.95 {
		t.Errorf("Jain's index %.3f, want at least 0.95", j)
	}
	// Each viewer's mean counts its login second, so the sum is a little
	// under the uplink; it must never be above it.
	if total > 1.05*scene.BitsPerSecond() || total < 0.7*scene.BitsPerSecond() {
		t.Errorf("viewers received %.0f bit/s in all through a %.0f bit/s uplink", total, scene.BitsPerSecond())
	}
}

// TestManyViewers: forty viewers log in through one gateway at once and
// each is served.
func TestManyViewers(t *testing.T) {
	sim, _ := startRegion(t, region.Config{Activity: region.Walking})
	gw := startGateway(t, gateway.Config{Routes: route(sim.Addr())})
	asks := make([]ratecalc.Rate, 40)
	for i := range asks {
		asks[i] = ratecalc.RateFromBits(100_000)
	}
	f := startViewers(t, gw.Addr(0), asks, 1000, 3*time.Second)
	f.served(t)
	if n := len(sim.Clients()); n != len(asks) {
		t.Errorf("the region sees %d circuits for %d viewers", n, len(asks))
	}
	for i, r := range f.wait() {
		if !r.LoggedIn || r.RateBPS < 0.5*asks[i].BitsPerSecond() {
			t.Errorf("viewer %d: %+v", i, r)
		}
	}
}

// TestRegionRestart: the region goes away and comes back at the same
// address; the gateway keeps running, and a viewer that logs in afterwards
// is served.
func TestRegionRestart(t *testing.T) {
	sim, stop := startRegion(t, region.Config{Activity: region.Walking})
	addr := sim.Addr()
	gw := startGateway(t, gateway.Config{Routes: route(addr)})
	before := startViewers(t, gw.Addr(0), []ratecalc.Rate{ratecalc.RateFromBits(200_000)}, 1, 1500*time.Millisecond)
	before.served(t)
	stop() // the region is down: the gateway's sockets get ICMP errors
	reps := before.wait()
	if !reps[0].LoggedIn {
		t.Fatalf("first viewer: %+v", reps[0])
	}
	startRegion(t, region.Config{Listen: addr, Activity: region.Walking})
	after := startViewers(t, gw.Addr(0), []ratecalc.Rate{ratecalc.RateFromBits(200_000)}, 2, 2*time.Second)
	after.served(t)
	if r := after.wait()[0]; !r.LoggedIn || r.ReliableReceived == 0 {
		t.Errorf("after the restart: %+v", r)
	}
	if k := gw.Counters(); k.SendErrors == 0 {
		t.Logf("no send errors while the region was down (the viewer had logged out): %+v", k)
	}
}

// TestMetrics: the collector exports each circuit, with the endpoint the
// region sees for it, and the gateway's totals.
func TestMetrics(t *testing.T) {
	sim, _ := startRegion(t, region.Config{Activity: region.Walking})
	gw := startGateway(t, gateway.Config{Routes: route(sim.Addr())})
	f := startViewers(t, gw.Addr(0), []ratecalc.Rate{ratecalc.RateFromBits(200_000)}, 1, 1500*time.Millisecond)
	f.served(t)
	reg := prometheus.NewRegistry()
	reg.MustRegister(gateway.NewCollector(gw, 0))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	var info map[string]string
	for _, mf := range mfs {
		got[mf.GetName()] = len(mf.GetMetric())
		if mf.GetName() == "fairgrid_gateway_circuit_info" {
			info = map[string]string{}
			for _, l := range mf.GetMetric()[0].GetLabel() {
				info[l.GetName()] = l.GetValue()
			}
		}
	}
	// Who the viewer is stays out unless the operator asks
	// (IdentifyViewers, TestMetricsIdentify).
	if info["viewer"] != "c1" || info["local"] != "" || info["agent"] != "" {
		t.Errorf("circuit info %v: want the circuit's ordinal, no endpoint, no agent", info)
	}
	c := gw.Circuits()[0]
	for name, n := range map[string]int{
		"fairgrid_gateway_circuits": 3, "fairgrid_gateway_datagrams_total": 10, "fairgrid_gateway_circuit_info": 1, "fairgrid_gateway_region_answers": 1,
		"fairgrid_gateway_circuit_rate_bytes_per_second": 1, "fairgrid_gateway_circuit_fair_rate_bytes_per_second": 1,
		"fairgrid_gateway_circuit_received_rate_bytes_per_second": 1, "fairgrid_gateway_circuit_loss_event_rate": 1,
		"fairgrid_gateway_circuit_queue_delay_seconds": 5, "fairgrid_gateway_circuit_queue_dropped_total": 5,
	} {
		if got[name] != n {
			t.Errorf("%s: %d series, want %d", name, got[name], n)
		}
	}
	if !c.Local.IsValid() || c.AgentID == "" {
		t.Errorf("circuit %+v: no local endpoint or agent", c)
	}
	f.wait()
}

// TestMetricsIdentify: with IdentifyViewers, the circuit's series name
// the viewer's endpoint, the endpoint the region sees and the agent.
func TestMetricsIdentify(t *testing.T) {
	for _, identify := range []bool{false, true} {
		u := gatewaytest.Start(t, gateway.Config{IdentifyViewers: identify}, nil)
		v := gatewaytest.NewViewer(t, u.GW.Addr(0), 7, gatewaytest.Loopback)
		local := u.LoggedIn(t, v, nil)
		reg := prometheus.NewRegistry()
		reg.MustRegister(gateway.NewCollector(u.GW, 0))
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var text bytes.Buffer
		for _, mf := range mfs {
			text.WriteString(mf.String())
		}
		for _, s := range []string{v.Addr().String(), local.String(), v.Agent().AgentID.String()} {
			if strings.Contains(text.String(), s) != identify {
				t.Errorf("identify %v: %s in the metrics: %v", identify, s, !identify)
			}
		}
	}
}

// TestMeasuredOnRealSockets: a viewer behind the link emulator (3 % loss
// and 25 ms each way) reaches the region through the gateway on real
// sockets; the gateway's ping RTT is the link's round trip plus what the
// loops add (the golden traces' 25 ms), and its loss rate — on few
// datagrams in 5 s — within 4σ of the link's. The estimators' accuracy is
// shown on virtual time (TestEstimatorGroundTruth); this shows the same
// path on sockets, with the lab viewer's own acks and the region's pings.
func TestMeasuredOnRealSockets(t *testing.T) {
	sim, _ := startRegion(t, region.Config{Activity: region.Walking, PingInterval: 500 * time.Millisecond})
	// A capture at the gateway's public side, through its tap.
	var pcap bytes.Buffer
	pw, err := link.NewPcapWriter(&pcap, link.Arrived)
	if err != nil {
		t.Fatal(err)
	}
	var tapMu sync.Mutex // guards tapped and stopped; the capture ends at stopped
	tapped, stopped := 0, false
	gw := startGateway(t, gateway.Config{Routes: route(sim.Addr()), Tap: func(d lludp.Datagram) {
		tapMu.Lock()
		defer tapMu.Unlock()
		if !stopped {
			tapped++
			pw.Tap(link.Event{Kind: link.Arrived, At: d.At, Packet: d.Payload, UDP: link.UDPEndpoints{Src: d.Src, Dst: d.Dst}})
		}
	}})
	const loss, delay = 0.03, 25 * time.Millisecond
	relay, err := link.New(link.Config{Listen: loopback, Upstream: gw.Addr(0), Seed: 5,
		Down: link.PipeConfig{Loss: loss, Delay: delay}, Up: link.PipeConfig{Loss: loss, Delay: delay}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { relay.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	f := startViewers(t, relay.Addr(), []ratecalc.Rate{ratecalc.RateFromBits(800_000)}, 1, 5*time.Second)
	f.served(t)
	var st gateway.CircuitStats
	circuits := gw.Circuits() // read while the viewer is still logged in
	f.wait()
	if len(circuits) != 1 {
		t.Fatalf("%d circuits", len(circuits))
	}
	for _, c := range gw.Circuits() {
		st = c
	}
	n := float64(st.Controller.Received + st.Controller.Lost)
	rate := float64(st.Controller.Lost) / n
	t.Logf("gateway: RTT %v (acks %v), lost %d of %v (%.4f), %d loss events; estimator %+v", st.RTT, st.AckRTT, st.Controller.Lost, n, rate, st.Controller.LossEvents, st.Estimator)
	if st.RTT < 2*delay || st.RTT > 2*delay+25*time.Millisecond {
		t.Errorf("RTT %v, want the link's %v plus at most 25 ms", st.RTT, 2*delay)
	}
	if sd := math.Sqrt(loss * (1 - loss) / n); n < 200 || math.Abs(rate-loss) > 4*sd {
		t.Errorf("loss rate %.4f over %v datagrams, the link's %.2f (±4σ = %.4f)", rate, n, loss, 4*sd)
	}
	// The capture audits as any other: one circuit each way, every
	// datagram decoded, and none lost on the way down before the link —
	// the numbers leave in order.
	tapMu.Lock()
	stopped = true
	tapMu.Unlock()
	if err := pw.Flush(); err != nil {
		t.Fatal(err)
	}
	a, err := audit.New(audit.Config{Sims: []netip.AddrPort{gw.Addr(0)}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := capture.NewReader(bytes.NewReader(pcap.Bytes()), nil)
	if err != nil {
		t.Fatal(err)
	}
	a.Read([]audit.Input{{Name: "gateway-public.pcap", Reader: r}}, nil)
	rep := a.Report()
	var down, up int64
	for _, c := range rep.Circuits {
		t.Logf("audit %s: %d packets, lost %d", c.Direction, c.Packets, c.Lost)
		switch c.Direction {
		case "down":
			down += c.Packets
			if c.Lost != 0 {
				t.Errorf("the audit finds %d lost before the link, where nothing is lost", c.Lost)
			}
		case "up":
			up += c.Packets
		}
	}
	if len(rep.Circuits) != 2 || down+up != int64(tapped) {
		t.Errorf("the audit found %d circuits and %d+%d datagrams; the tap saw %d", len(rep.Circuits), down, up, tapped)
	}
}

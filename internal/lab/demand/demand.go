package demand

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/internal/lab/tcpflow"
	"github.com/fairgrid/fairgrid/internal/lab/viewer"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim"
	"github.com/fairgrid/fairgrid/opensim/gateway"
	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/group"
	"github.com/fairgrid/fairgrid/throttle/proxy"
	"github.com/fairgrid/fairgrid/throttle/sidecar"
)

// FrontEnd is what stands between the viewer and the region.
type FrontEnd string

// The front-ends.
const (
	Stock   FrontEnd = "stock"
	Sidecar FrontEnd = "sidecar"
	Proxy   FrontEnd = "proxy"
	Gateway FrontEnd = "gateway"
)

// FrontEnds lists them, the baseline first.
var FrontEnds = []FrontEnd{Stock, Sidecar, Proxy, Gateway}

// Config is one run.
type Config struct {
	FrontEnd FrontEnd
	// Activity is the region's workload.
	Activity region.Activity
	// Path is each direction of the link between the viewer's host and
	// the region: loss and one-way delay.
	Path link.PipeConfig
	// Bottleneck, if set, is a link the viewer shares with a bulk TCP
	// download (gVisor's CUBIC) in place of Path: the viewer's datagrams
	// and the TCP flow's packets queue in one drop-tail FIFO each way.
	Bottleneck *link.BottleneckConfig
	// ViewerAsks is what the viewer asks for (default the classic 1,500
	// kbps), fairgrid's limit unless the loop's AboveViewer.
	ViewerAsks ratecalc.Rate
	// Children are neighbour regions (0–8, region.NeighbourOffsets'
	// order), each with the same workload, over links of the same kind,
	// throttled at the root's throttles times OpenSim's distance factor for
	// an agent at Position; the viewer opens a child circuit to each from
	// its one socket.
	Children int
	Position lludp.Vector3
	// Interval is fairgrid's decision interval (default 5 s).
	Interval time.Duration
	// Warmup is left out of the measurement, Duration measured after it.
	Warmup, Duration time.Duration
	// Seed makes the link's losses repeatable.
	Seed uint64
	// Throttle configures fairgrid's loop beyond the interval (the
	// defaults if zero): the split, the viewer's limit.
	Throttle throttle.Config
}

// Result is what one run measured over its measured part.
type Result struct {
	FrontEnd FrontEnd
	// TotalBPS is what the viewer received on all its circuits, its
	// neighbours' included, bits/s of LLUDP payload.
	TotalBPS float64
	// ReceivedBPS is what the viewer received, bits/s of LLUDP payload,
	// and GoodputBPS the part that was not a duplicate of a reliable
	// datagram it had (a resend whose ack was late): a front-end that
	// asks less for Resend saves those, and the viewer loses nothing.
	// Reckoned by datagrams, since a workload's are of one size.
	ReceivedBPS, GoodputBPS float64
	// DemandBPS is what the workload offers, region.Demand in bits/s.
	DemandBPS float64
	// Requests are fairgrid's decisions sent in the measured part (the
	// sidecar's and the proxy's; the gateway's stay inside it).
	Requests []throttle.Request
	// TCPBPS is what the TCP download beside read, bits/s of payload, with
	// a Bottleneck.
	TCPBPS float64
	// ControllerBPS is the mean, over the measured part sampled each
	// second, of the front-end's controller rate for the viewer (the
	// largest over its circuits; clamped, before the viewer's limit): the
	// sidecar's and the proxy's loop, the gateway's estimator. 0 for
	// Stock.
	ControllerBPS float64
}

// Run runs cfg for Warmup+Duration on loopback.
func Run(ctx context.Context, cfg Config, log *slog.Logger) (Result, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Warmup <= 0 || cfg.Duration <= 0 {
		return Result{}, errors.New("demand: warm-up and duration must be positive")
	}
	res := Result{FrontEnd: cfg.FrontEnd, DemandBPS: float64(region.Demand(cfg.Activity, 0)) * 8}
	var g group.Group
	var closers []func() error
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	if cfg.Children < 0 || cfg.Children > len(region.NeighbourOffsets) {
		return res, fmt.Errorf("demand: %d neighbour regions: want 0 to %d", cfg.Children, len(region.NeighbourOffsets))
	}
	regionCfg := region.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Activity: cfg.Activity, Position: cfg.Position,
		Scheduler: opensim.Config{ChannelBuckets: true}}
	sim, err := region.New(regionCfg, log)
	if err != nil {
		return res, fmt.Errorf("demand: %w", err)
	}
	closers = append(closers, sim.Close)
	g.Add(sim.Run, nil)
	sims := []*region.Server{sim}
	for i := range cfg.Children {
		c := regionCfg
		c.Child = &region.ChildConfig{OffsetX: region.NeighbourOffsets[i][0], OffsetY: region.NeighbourOffsets[i][1]}
		child, err := region.New(c, log)
		if err != nil {
			closeAll()
			return res, fmt.Errorf("demand: %w", err)
		}
		closers = append(closers, child.Close)
		if err := sim.AddChild(child); err != nil {
			closeAll()
			return res, fmt.Errorf("demand: %w", err)
		}
		g.Add(child.Run, nil)
		sims = append(sims, child)
	}

	var (
		mu       sync.Mutex
		sent     []throttle.Request
		measFrom time.Time
	)
	afterTick := func(now time.Time, rs []throttle.Request) {
		mu.Lock()
		defer mu.Unlock()
		if !measFrom.IsZero() && now.After(measFrom) {
			sent = append(sent, rs...)
		}
	}
	tcfg := cfg.Throttle
	tcfg.Interval = cfg.Interval
	if tcfg.Interval == 0 {
		tcfg.Interval = 5 * time.Second
	}
	// The sidecar's tap: the viewer's datagrams as its host sees them.
	var tap *sidecar.PushSource
	if cfg.FrontEnd == Sidecar {
		tap = sidecar.NewChanSource(4096)
	}
	var tcp *tcpflow.Flow
	lcfg := link.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Down: cfg.Path, Up: cfg.Path, Seed: cfg.Seed}
	if cfg.Bottleneck != nil {
		b, err := link.NewBottleneck(*cfg.Bottleneck, log)
		if err != nil {
			closeAll()
			return res, fmt.Errorf("demand: %w", err)
		}
		stacks, err := tcpflow.New(b, tcpflow.Config{Seed: cfg.Seed}, log)
		if err != nil {
			closeAll()
			return res, fmt.Errorf("demand: %w", err)
		}
		closers = append(closers, func() error { stacks.Close(); return nil })
		if tcp, err = stacks.AddFlow(tcpflow.FlowConfig{Name: "tcp", CC: tcpflow.CUBIC, Dir: tcpflow.Download}); err != nil {
			closeAll()
			return res, fmt.Errorf("demand: %w", err)
		}
		g.Add(b.Run, nil)
		g.Add(stacks.Run, nil)
		lcfg.Down, lcfg.Up, lcfg.Shared = link.PipeConfig{}, link.PipeConfig{}, b
	}
	lcfg.Tap = func(d link.Datagram) {
		if tap != nil {
			tap.Push(lludp.Datagram{At: d.At, Src: d.Src, Dst: d.Dst, Payload: bytes.Clone(d.Payload)})
		}
	}
	// A link to each region, the root's first: what the viewer sends to
	// the link's address reaches the region behind it, or the gateway at
	// the region's public address, in front of it.
	upstreams := make([]netip.AddrPort, len(sims))
	for i, s := range sims {
		upstreams[i] = s.Addr()
	}
	var gw *gateway.Gateway
	var loop *throttle.Loop
	if cfg.FrontEnd == Gateway {
		if cfg.Children > 0 {
			closeAll()
			return res, errors.New("demand: the gateway runs in front of one region here: no neighbours")
		}
		gw, err = gateway.New(gateway.Config{Routes: []gateway.Route{{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Region: sim.Addr()}},
			Control: tcfg}, log)
		if err != nil {
			closeAll()
			return res, fmt.Errorf("demand: %w", err)
		}
		closers = append(closers, gw.Close)
		g.Add(gw.Run, nil)
		upstreams[0] = gw.Addr(0)
	}
	relays := relaySender{}
	var addrs []netip.AddrPort
	for i, up := range upstreams {
		lcfg.Upstream, lcfg.Seed = up, cfg.Seed+uint64(i)
		relay, err := link.New(lcfg, log)
		if err != nil {
			closeAll()
			return res, fmt.Errorf("demand: %w", err)
		}
		closers = append(closers, relay.Close)
		g.Add(relay.Run, nil)
		relays[relay.Addr()] = relay
		addrs = append(addrs, relay.Addr())
	}
	vcfg := viewer.Config{Sim: addrs[0], Children: addrs[1:], FollowViewerRule: true, CircuitCode: 4242, Throttle: cfg.ViewerAsks}

	switch cfg.FrontEnd {
	case Stock, Gateway:
	case Sidecar:
		loop, err = throttle.New(tcfg, log)
		if err != nil {
			closeAll()
			return res, fmt.Errorf("demand: %w", err)
		}
		sc, err := sidecar.New(sidecar.Config{Loop: loop, Source: tap, Sender: relays, Log: log, AfterTick: afterTick})
		if err != nil {
			tap.Close()
			closeAll()
			return res, fmt.Errorf("demand: %w", err)
		}
		sc.AddTo(&g)
	case Proxy:
		loop, err = throttle.New(tcfg, log)
		if err != nil {
			closeAll()
			return res, fmt.Errorf("demand: %w", err)
		}
		p, err := proxy.New(proxy.Config{UDPPorts: lludp.Ports{{Lo: 1, Hi: 65535}}}, sidecar.Config{Loop: loop, Log: log, AfterTick: afterTick}, log)
		if err != nil {
			closeAll()
			return res, fmt.Errorf("demand: %w", err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			closeAll()
			return res, fmt.Errorf("demand: %w", err)
		}
		p.AddTo(&g, ln)
		vcfg.SOCKS5 = ln.Addr().String()
	default:
		closeAll()
		return res, fmt.Errorf("demand: front-end %q: want stock, sidecar, proxy or gateway", cfg.FrontEnd)
	}
	// The front-end serves before the viewer is made: a viewer behind
	// the proxy opens its association in New.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- g.Run(runCtx) }()
	v, err := viewer.New(vcfg, log)
	if err != nil {
		cancel()
		return res, fmt.Errorf("demand: %w", errors.Join(err, <-served))
	}
	var vg group.Group
	vg.Add(v.Run, nil)
	done := make(chan error, 1)
	go func() {
		err := vg.Run(runCtx)
		cancel()
		done <- errors.Join(err, <-served)
	}()
	var before viewer.Report
	timer := time.NewTimer(cfg.Warmup)
	defer timer.Stop()
	select {
	case <-timer.C:
	case err := <-done:
		return res, fmt.Errorf("demand: ended in the warm-up: %w", errors.Join(err, ctx.Err()))
	}
	before = v.Report()
	var tcpBefore uint64
	if tcp != nil {
		tcpBefore = tcp.Read(link.Down)
	}
	mu.Lock()
	measFrom = time.Now()
	mu.Unlock()
	timer.Reset(cfg.Duration)
	every := time.NewTicker(time.Second)
	defer every.Stop()
	var rates []float64
measure:
	for {
		select {
		case <-timer.C:
			break measure
		case <-every.C:
			if r, ok := controllerRate(loop, gw); ok {
				rates = append(rates, r)
			}
		case err := <-done:
			return res, fmt.Errorf("demand: ended early: %w", errors.Join(err, ctx.Err()))
		}
	}
	for _, r := range rates {
		res.ControllerBPS += r / float64(len(rates))
	}
	after := v.Report()
	if tcp != nil {
		res.TCPBPS = float64(tcp.Read(link.Down)-tcpBefore) * 8 / cfg.Duration.Seconds()
	}
	cancel()
	if err := <-done; err != nil {
		return res, fmt.Errorf("demand: %w", err)
	}
	if !after.LoggedIn {
		return res, errors.New("demand: the viewer never logged in")
	}
	res.ReceivedBPS = float64(after.Bytes-before.Bytes) * 8 / cfg.Duration.Seconds()
	res.TotalBPS = float64(after.TotalBytes-before.TotalBytes) * 8 / cfg.Duration.Seconds()
	if n := after.Received - before.Received; n > 0 {
		dup := after.ReliableDuplicates - before.ReliableDuplicates
		res.GoodputBPS = res.ReceivedBPS * float64(n-min(dup, n)) / float64(n)
	}
	mu.Lock()
	res.Requests = sent
	mu.Unlock()
	return res, nil
}

// controllerRate is the front-end's controller rate for the viewer now,
// bits/s: the largest over its circuits.
func controllerRate(loop *throttle.Loop, gw *gateway.Gateway) (float64, bool) {
	var r ratecalc.Rate
	switch {
	case loop != nil:
		for _, c := range loop.Snapshot() {
			r = max(r, c.Control.Rate)
		}
	case gw != nil:
		for _, c := range gw.Circuits() {
			r = max(r, c.Fair)
		}
	}
	return r.BitsPerSecond(), r > 0
}

// relaySender sends fairgrid's AgentThrottle from the viewer's host,
// across the link to the circuit's region: the links by their address.
type relaySender map[netip.AddrPort]*link.Relay

func (s relaySender) Send(_ context.Context, req throttle.Request) error {
	r := s[req.Circuit.Sim]
	if r == nil {
		return fmt.Errorf("demand: no link to %v", req.Circuit.Sim)
	}
	b, err := req.Encode()
	if err != nil {
		return err
	}
	r.InjectUp(req.Circuit.Viewer, b)
	return nil
}

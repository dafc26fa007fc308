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
	"github.com/fairgrid/fairgrid/internal/lab/viewer"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim/gateway"
	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/group"
	"github.com/fairgrid/fairgrid/throttle/proxy"
	"github.com/fairgrid/fairgrid/throttle/sidecar"
)

// Seat is a viewer's seat on a link: its region and neighbours, the
// front-end, the links to each region and the viewer, as one member of a
// group.Group (Run). Run builds it for one run; a lab with a link of
// its own (internal/lab/fairness) puts a Seat on its Bottleneck beside
// whatever else crosses it, each of the seat's circuits a flow "lludp
// VIEWER down" there (link.Config.Shared).
type Seat struct {
	cfg      Config
	log      *slog.Logger
	g        group.Group // the regions, the front-end and the links
	closers  []func() error
	vcfg     viewer.Config
	loop     *throttle.Loop
	gw       *gateway.Gateway
	mu       sync.Mutex // guards the fields below
	v        *viewer.Viewer
	tries    int
	sent     []throttle.Request
	measFrom time.Time
	closed   bool
}

// NewSeat binds the seat's sockets for cfg (its FrontEnd, Region,
// Activity, Children, Position, ViewerAsks, Interval, Throttle, Seed,
// WrapSender and the hooks AfterTick, OnThrottle and Source); shared, if
// set, carries every circuit, in place of
// cfg.Path's links of their own. Run serves; Close releases what Run did
// not.
func NewSeat(cfg Config, shared *link.Bottleneck, log *slog.Logger) (*Seat, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Seat{cfg: cfg, log: log}
	if err := s.build(shared); err != nil {
		s.Close()
		return nil, fmt.Errorf("demand: %w", err)
	}
	return s, nil
}

// Sidecar reports whether the front-end runs `fairgrid run`'s loop on
// the viewer's host.
func (f FrontEnd) Sidecar() bool { return f == Sidecar || f == GatewaySidecar }

// Gateway reports whether the front-end has `fairgrid gateway` in front
// of the region.
func (f FrontEnd) Gateway() bool { return f == Gateway || f == GatewaySidecar }

func (s *Seat) build(shared *link.Bottleneck) error {
	cfg := s.cfg
	if cfg.Children < 0 || cfg.Children > len(region.NeighbourOffsets) {
		return fmt.Errorf("%d neighbour regions: want 0 to %d", cfg.Children, len(region.NeighbourOffsets))
	}
	switch cfg.FrontEnd {
	case Stock, Sidecar, Proxy, Gateway, GatewaySidecar:
	default:
		return fmt.Errorf("front-end %q: want %v", cfg.FrontEnd, FrontEnds)
	}
	regionCfg, err := cfg.Region.regionConfig(cfg.Activity, cfg.Position)
	if err != nil {
		return err
	}
	regionCfg.OnThrottle = cfg.OnThrottle
	sim, err := region.New(regionCfg, s.log)
	if err != nil {
		return err
	}
	s.closers = append(s.closers, sim.Close)
	s.g.Add(sim.Run, nil)
	sims := []*region.Server{sim}
	for i := range cfg.Children {
		c := regionCfg
		c.Child = &region.ChildConfig{OffsetX: region.NeighbourOffsets[i][0], OffsetY: region.NeighbourOffsets[i][1]}
		child, err := region.New(c, s.log)
		if err != nil {
			return err
		}
		s.closers = append(s.closers, child.Close)
		if err := sim.AddChild(child); err != nil {
			return err
		}
		s.g.Add(child.Run, nil)
		sims = append(sims, child)
	}
	tcfg := cfg.Throttle
	tcfg.Interval = cfg.Interval
	if tcfg.Interval == 0 {
		tcfg.Interval = 5 * time.Second
	}
	// The sidecar's tap: the viewer's datagrams as its host sees them.
	var tap *sidecar.PushSource
	if cfg.FrontEnd.Sidecar() && cfg.Source == nil {
		tap = sidecar.NewChanSource(4096)
	}
	lcfg := link.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Down: cfg.Path, Up: cfg.Path, Seed: cfg.Seed}
	if shared != nil {
		lcfg.Down, lcfg.Up, lcfg.Shared = link.PipeConfig{}, link.PipeConfig{}, shared
	}
	lcfg.Tap = func(d link.Datagram) {
		if tap != nil {
			tap.Push(lludp.Datagram{At: d.At, Src: d.Src, Dst: d.Dst, Payload: bytes.Clone(d.Payload)})
		}
	}
	// A link to each region, the root's first: what the viewer sends to
	// the link's address reaches the region behind it, or the gateway at
	// the region's public address, in front of it (one route a region).
	upstreams := make([]netip.AddrPort, len(sims))
	for i, sv := range sims {
		upstreams[i] = sv.Addr()
	}
	if cfg.FrontEnd.Gateway() {
		// One route a region, each listening on an address of its own
		// (the gateway refuses two routes on 127.0.0.1:0): 127.0.0.1,
		// .2 and on, all loopback.
		var routes []gateway.Route
		for i, sv := range sims {
			listen := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, byte(1 + i)}), 0)
			routes = append(routes, gateway.Route{Listen: listen, Region: sv.Addr()})
		}
		if s.gw, err = gateway.New(gateway.Config{Routes: routes, Control: tcfg}, s.log); err != nil {
			return err
		}
		s.closers = append(s.closers, s.gw.Close)
		s.g.Add(s.gw.Run, nil)
		for i := range upstreams {
			upstreams[i] = s.gw.Addr(i)
		}
	}
	relays := relaySender{}
	var addrs []netip.AddrPort
	for i, up := range upstreams {
		lcfg.Upstream, lcfg.Seed = up, cfg.Seed+uint64(i)
		if i > 0 {
			lcfg.Name = fmt.Sprintf("neighbour %d", i) // the viewer's one socket crosses a shared link once a circuit
		}
		relay, err := link.New(lcfg, s.log)
		if err != nil {
			return err
		}
		s.closers = append(s.closers, relay.Close)
		s.g.Add(relay.Run, nil)
		relays[relay.Addr()] = relay
		addrs = append(addrs, relay.Addr())
	}
	s.vcfg = viewer.Config{Sim: addrs[0], Children: addrs[1:], FollowViewerRule: true, CircuitCode: 4242, Throttle: cfg.ViewerAsks}
	afterTick := func(now time.Time, rs []throttle.Request) {
		s.mu.Lock()
		if !s.measFrom.IsZero() && now.After(s.measFrom) {
			s.sent = append(s.sent, rs...)
		}
		s.mu.Unlock()
		if cfg.AfterTick != nil {
			cfg.AfterTick(now, rs)
		}
	}
	switch {
	case cfg.FrontEnd.Sidecar():
		var src sidecar.Source = tap
		if cfg.Source != nil {
			if src, err = cfg.Source(addrs[0]); err != nil {
				return err
			}
		}
		if s.loop, err = throttle.New(tcfg, s.log); err != nil {
			src.Close()
			return err
		}
		var send throttle.Sender = relays
		if cfg.WrapSender != nil {
			send = cfg.WrapSender(send)
		}
		sc, err := sidecar.New(sidecar.Config{Loop: s.loop, Source: src, Sender: send, Log: s.log, AfterTick: afterTick})
		if err != nil {
			src.Close()
			return err
		}
		sc.AddTo(&s.g)
	case cfg.FrontEnd == Proxy:
		if s.loop, err = throttle.New(tcfg, s.log); err != nil {
			return err
		}
		p, err := proxy.New(proxy.Config{UDPPorts: lludp.Ports{{Lo: 1, Hi: 65535}}}, sidecar.Config{Loop: s.loop, Log: s.log, AfterTick: afterTick}, s.log)
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		p.AddTo(&s.g, ln)
		s.vcfg.SOCKS5 = ln.Addr().String()
	}
	return nil
}

// Run serves the seat until ctx ends (nil) or a member fails: the
// regions, the front-end and the links first, then the viewer, which
// logs in (a viewer behind the proxy opens its association as it is
// made, so the proxy serves by then). A viewer not served within
// loginWait (it gives its UseCircuitCode up after three resends, as the
// Second Life viewer does) is closed and another logs in, as a user
// would try again, up to loginTries times; LoginTries says how many it
// took.
func (s *Seat) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errors.New("demand: the seat is closed")
	}
	s.closed = true // Run owns the members now: they close as they return
	s.mu.Unlock()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() {
		served <- s.g.Run(runCtx)
		cancel() // a member that failed, or ended, ends the viewer too
	}()
	var err error
	for try := 1; ; try++ {
		var v *viewer.Viewer
		if v, err = viewer.New(s.vcfg, s.log); err != nil {
			break
		}
		s.mu.Lock()
		s.v, s.tries = v, try
		s.mu.Unlock()
		vctx, vcancel := context.WithCancel(runCtx)
		ran := make(chan error, 1)
		go func() { ran <- v.Run(vctx) }()
		wait := time.NewTimer(loginWait)
		select {
		case <-v.Served():
			wait.Stop()
			err = <-ran
		case err = <-ran:
			wait.Stop()
		case <-wait.C:
			if try < loginTries {
				s.log.Warn("lab viewer not served: logging in again", "after", loginWait, "try", try)
				vcancel()
				if err = <-ran; err == nil {
					continue
				}
			} else {
				err = <-ran
			}
		}
		vcancel()
		break
	}
	cancel()
	if err = errors.Join(err, <-served); err != nil {
		return fmt.Errorf("demand: %w", err)
	}
	return nil
}

// loginWait is how long a seat's viewer has to be served before another
// logs in in its place, loginTries times in all: the viewer gives up its
// UseCircuitCode after 4 s at the least (three resends a second apart).
const (
	loginWait  = 6 * time.Second
	loginTries = 3
)

// LoginTries is how many viewers the seat has had log in so far (1 when
// the first was served).
func (s *Seat) LoginTries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tries
}

// Close releases the sockets of a seat whose Run never started; it is
// idempotent.
func (s *Seat) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	return errors.Join(errs...)
}

// Report is the viewer's report now (the zero Report before it exists).
func (s *Seat) Report() viewer.Report {
	s.mu.Lock()
	v := s.v
	s.mu.Unlock()
	if v == nil {
		return viewer.Report{}
	}
	return v.Report()
}

// Measure starts the measured part: Requests are those sent from now.
func (s *Seat) Measure(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.measFrom = now
}

// Requests are fairgrid's decisions sent since Measure (the sidecar's
// and the proxy's; the gateway's stay inside it).
func (s *Seat) Requests() []throttle.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]throttle.Request(nil), s.sent...)
}

// ControllerRate is the front-end's controller rate for the viewer now,
// bits/s: the largest over its circuits; false for Stock.
func (s *Seat) ControllerRate() (float64, bool) {
	var r ratecalc.Rate
	switch {
	case s.loop != nil:
		for _, c := range s.loop.Snapshot() {
			r = max(r, c.Control.Rate)
		}
	case s.gw != nil:
		for _, c := range s.gw.Circuits() {
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

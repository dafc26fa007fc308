package gatewaylab

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"strings"
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

// DefaultLink is the demo's link (internal/lab/demo.DefaultLink, which the
// demo passes as Config.Link): 1 Mbit/s, 50 ms one way, 1 % random loss,
// a 100-datagram buffer, each way. The stock viewer asks for more than it
// carries.
var DefaultLink = link.PipeConfig{Rate: 1_000_000 / 8, Delay: 50 * time.Millisecond, Loss: 0.01, Buffer: 100}

// DefaultWarmup is `fairgrid lab gateway`'s warm-up: the download leaves
// slow start and the gateway has made a few decisions at its 5 s interval.
const DefaultWarmup = 20 * time.Second

// Arm is one way the viewer reaches the region.
type Arm string

const (
	// Stock: the viewer straight to the region, as without fairgrid.
	Stock Arm = "stock"
	// Gateway: the viewer through fairgrid's gateway at the region's
	// public address.
	Gateway Arm = "gateway"
	// Sidecar: through the gateway, with fairgrid's client side at the
	// viewer as well (the sidecar: measure what arrives, send the
	// viewer's AgentThrottle every interval, across the link), with the
	// gateway's controller and interval.
	Sidecar Arm = "gateway+sidecar"
	// Proxy: through the gateway, with the viewer's UDP through
	// fairgrid's SOCKS 5 proxy on its host (throttle/proxy: it measures
	// what it relays, puts its request into the viewer's AgentThrottles
	// and sends its own every interval), with the gateway's controller and
	// interval.
	Proxy Arm = "gateway+proxy"
)

// Config describes a run. Zero fields take the defaults named.
type Config struct {
	// Link is each direction of the bottleneck (default DefaultLink).
	Link link.PipeConfig
	// Warmup is left out of the measurement: the download's slow start,
	// the viewer's login and the gateway's first decisions (0: none; the
	// command's default is DefaultWarmup). Duration is the measured part
	// (default 40 s).
	Warmup, Duration time.Duration
	// Seed makes the links' losses and the TCP stacks repeatable (default 1).
	Seed uint64
	// Throttle is what the stock viewer asks for (default its 1,500 kbps).
	Throttle ratecalc.Rate
	// Activity is the region's load (default flying: every channel busy).
	Activity region.Activity
	// Controller is the gateway's fair-rate controller and Interval its
	// decision interval (default: the gateway's defaults).
	Controller throttle.ControllerName
	Interval   time.Duration
	// Segment is the segment size the gateway's fair rate stands on, its
	// control.segment (default throttle's).
	Segment throttle.Segment
	// Arms are the arms to run, at once (default Gateway and Stock).
	Arms []Arm
}

func (c Config) withDefaults() Config {
	if c.Link == (link.PipeConfig{}) {
		c.Link = DefaultLink
	}
	c.Duration = cmp.Or(c.Duration, 40*time.Second)
	c.Seed = cmp.Or(c.Seed, 1)
	c.Throttle = cmp.Or(c.Throttle, viewer.DefaultThrottle)
	c.Activity = cmp.Or(c.Activity, region.Flying)
	if len(c.Arms) == 0 {
		c.Arms = []Arm{Gateway, Stock}
	}
	return c
}

// Validate reports what Run would refuse.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if err := c.Link.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("link: %w", err))
	}
	if c.Warmup < 0 || c.Duration < time.Second {
		errs = append(errs, fmt.Errorf("warm-up %v, duration %v: want a warm-up of 0 or more and a duration of at least 1s", c.Warmup, c.Duration))
	}
	seen := map[Arm]bool{}
	for _, a := range c.Arms {
		if a != Stock && a != Gateway && a != Sidecar && a != Proxy || seen[a] {
			errs = append(errs, fmt.Errorf("arm %q: want %s, %s, %s or %s, once each", a, Gateway, Sidecar, Proxy, Stock))
		}
		seen[a] = true
	}
	if _, err := c.gatewayConfig(netip.MustParseAddrPort("127.0.0.1:9")).WithDefaults(); err != nil {
		errs = append(errs, err)
	} else if _, err := throttle.New(c.sidecarConfig(), nil); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (c Config) gatewayConfig(sim netip.AddrPort) gateway.Config {
	return gateway.Config{Routes: []gateway.Route{{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Region: sim}},
		Control: throttle.Config{Controller: c.Controller, Interval: c.Interval, Segment: c.Segment}}
}

// sidecarConfig is the client side's (the sidecar's or the proxy's): the
// gateway's controller and interval.
func (c Config) sidecarConfig() throttle.Config {
	gc := c.gatewayDefaults()
	return throttle.Config{Controller: gc.Control.Controller, Interval: gc.Control.Interval, Segment: gc.Control.Segment}
}

// ArmResult is one arm over the measured part of its run.
type ArmResult struct {
	Arm Arm `json:"arm"`
	// Seconds is how long the measured part lasted.
	Seconds float64 `json:"seconds"`
	// DownloadBPS is what the download's receiver read, bits/s.
	DownloadBPS float64 `json:"download_bps"`
	// DownloadWireBPS is the download's data through the link towards its
	// receiver on the wire (headers and retransmissions included), as
	// ViewerBPS is the viewer's: the demo's measure of one share.
	DownloadWireBPS float64 `json:"download_wire_bps"`
	// ViewerBPS is what reached the viewer through the bottleneck, bits/s
	// on the wire (payload plus IPv4 and UDP headers).
	ViewerBPS float64 `json:"viewer_bps"`
	// DownloadShare is DownloadWireBPS ÷ (DownloadWireBPS + ViewerBPS);
	// ViewerOverDownload is ViewerBPS ÷ DownloadWireBPS (TCP-fair:
	// 0.8–1.25): both flows' bytes on the wire, as the demo and the
	// lab's coexistence table divide; 0 when the download moved nothing.
	DownloadShare      float64 `json:"download_share"`
	ViewerOverDownload float64 `json:"viewer_over_download"`
	// The viewer's datagrams' wait in the bottleneck's FIFO towards it.
	QueueDelayMeanMs float64 `json:"queue_delay_mean_ms"`
	QueueDelayP95Ms  float64 `json:"queue_delay_p95_ms"`
	// ViewerDropped is how many of the viewer's datagrams the bottleneck
	// dropped on the way down (random loss and a full buffer).
	ViewerDropped uint64 `json:"viewer_dropped"`
	// ViewerRequestBPS is the viewer's own request at the end.
	ViewerRequestBPS float64 `json:"viewer_request_bps"`
	// Gateway is the gateway's view of the circuit (the gateway arm only).
	Gateway *GatewayView `json:"gateway,omitempty"`
}

// GatewayView is the gateway's own measurement of the viewer's circuit.
type GatewayView struct {
	Controller throttle.ControllerName `json:"controller"`
	// QueueDelayMeanMs is the mean wait of the region's datagrams in the
	// gateway's scheduler over the measured part, all channels; ByChannel
	// by channel (opensim's names), for the channels that sent anything.
	QueueDelayMeanMs float64            `json:"queue_delay_mean_ms"`
	ByChannelMs      map[string]float64 `json:"queue_delay_by_channel_ms"`
	// FairBPS is the gateway's latest fair rate, RateBPS the rate in force
	// (the lesser of it and the viewer's request), bits/s.
	FairBPS       float64 `json:"fair_bps"`
	RateBPS       float64 `json:"rate_bps"`
	LossEventRate float64 `json:"loss_event_rate"`
	RTTms         float64 `json:"rtt_ms"`
	// Asserts and Rewrites count the AgentThrottles the gateway sent the
	// region and the viewer's it rewrote, over the whole run.
	Asserts  uint64 `json:"asserts"`
	Rewrites uint64 `json:"rewrites"`
	// PerSecond samples the circuit once a second over the measured part:
	// the request the gateway saw (the viewer's, or the client side's),
	// its fair rate, and the rate in force, bits/s. RateCV is the rate in
	// force's coefficient of variation over them: how much it moves.
	PerSecond []RateSample `json:"per_second"`
	RateCV    float64      `json:"rate_cv"`
	// ClientRequests counts the client side's requests (the sidecar and
	// proxy arms), and ClientAskedBPS are their totals in the order sent,
	// bits/s.
	ClientRequests uint64    `json:"client_requests,omitempty"`
	ClientAskedBPS []float64 `json:"client_asked_bps,omitempty"`
	// ProxyRewritten counts the viewer's own AgentThrottles the proxy
	// rewrote to its request on their way out (the proxy arm).
	ProxyRewritten uint64 `json:"proxy_rewritten,omitempty"`
}

// RateSample is the gateway's view of the circuit at one moment, bits/s.
type RateSample struct {
	T        float64 `json:"t_s"`
	AskedBPS float64 `json:"asked_bps"`
	FairBPS  float64 `json:"fair_bps"`
	RateBPS  float64 `json:"rate_bps"`
}

// Result is a run.
type Result struct {
	LinkBPS    float64     `json:"link_bps"`
	DelayMs    float64     `json:"delay_ms"`
	Loss       float64     `json:"loss"`
	Buffer     int         `json:"buffer_packets"`
	WarmupS    float64     `json:"warmup_s"`
	DurationS  float64     `json:"duration_s"`
	Seed       uint64      `json:"seed"`
	ThrottleBP float64     `json:"viewer_throttle_bps"`
	Arms       []ArmResult `json:"arms"`
	// Interrupted is set when the context ended after the warm-up but
	// before the duration: each arm's Seconds says what it measured.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Arm returns the result of arm a.
func (r Result) Arm(a Arm) (ArmResult, bool) {
	for _, x := range r.Arms {
		if x.Arm == a {
			return x, true
		}
	}
	return ArmResult{}, false
}

// Run runs every arm of cfg at once, each on its own copy of the link,
// and returns them in cfg's order. Each arm is one group.Group; the
// first arm's failure is returned with every other's.
func Run(ctx context.Context, cfg Config, log *slog.Logger) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, fmt.Errorf("gatewaylab: %w", err)
	}
	cfg = cfg.withDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	type done struct {
		i   int
		r   ArmResult
		err error
	}
	results := make(chan done, len(cfg.Arms))
	for i, a := range cfg.Arms {
		go func() {
			r, err := runArm(ctx, cfg, a, log.With("arm", a), true)
			results <- done{i, r, err}
		}()
	}
	res := Result{LinkBPS: float64(cfg.Link.Rate) * 8, DelayMs: float64(cfg.Link.Delay) / float64(time.Millisecond), Loss: cfg.Link.Loss,
		Buffer: cmp.Or(cfg.Link.Buffer, link.DefaultBuffer), WarmupS: cfg.Warmup.Seconds(), DurationS: cfg.Duration.Seconds(), Seed: cfg.Seed,
		ThrottleBP: cfg.Throttle.BitsPerSecond(), Arms: make([]ArmResult, len(cfg.Arms))}
	var errs []error
	for range cfg.Arms {
		d := <-results
		res.Arms[d.i] = d.r
		if d.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", cfg.Arms[d.i], d.err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Result{}, fmt.Errorf("gatewaylab: %w", err)
	}
	for _, a := range res.Arms {
		res.Interrupted = res.Interrupted || a.Seconds < cfg.Duration.Seconds()*0.99
	}
	return res, nil
}

// downloadFlow is the bulk download beside the viewer, as the demo's.
func downloadFlow() tcpflow.FlowConfig {
	return tcpflow.FlowConfig{Name: "cubic download", CC: tcpflow.CUBIC, Dir: tcpflow.Download}
}

// Observer measures the viewer's circuit at the viewer's host and sends
// nothing: a throttle.Loop fed by the relay's tap, as the lab's stock rig
// measures its viewer, so that a caller comparing this arm with others
// (the demo) reads every arm's TCP-fair share by one model.
type Observer struct {
	// Loop measures; its requests go nowhere.
	Loop *throttle.Loop
	// AfterTick, if set, is called after each of Loop's decisions with
	// the circuit as it measured it (measured is false before its first
	// datagram).
	AfterTick func(now time.Time, circuit ratecalc.Stats, measured bool)
}

// ArmRig is one arm whose members run in the caller's group.Group,
// beside whatever else the caller runs (RunArm runs it alone; the demo
// runs it beside its two rigs and ends the group at its last row):
// NewArmRig builds it, AddTo adds its members, Result reads the measured
// part once the group has returned, and Close releases what it holds.
//
// Its measuring member returns at Warmup+Duration, which ends the group;
// a group ended earlier after the warm-up (by the caller's context or by
// another member) leaves what was measured until then, as
// scenario.Rig's does, and Result says it is partial.
type ArmRig struct {
	cfg      Config
	arm      Arm
	b        *link.Bottleneck
	tcpNet   *tcpflow.Net
	download *tcpflow.Flow
	gw       *gateway.Gateway
	v        *viewer.Viewer // the Proxy arm's is made by a member once the proxy serves
	loop     *throttle.Loop // the client side's (the Sidecar and Proxy arms), or nil
	px       *proxy.Proxy   // the Proxy arm's, or nil
	members  group.Group
	// release closes what NewArmRig acquired, last first (each member's
	// Close, idempotent, whether its Run ran or not).
	release []func() error

	// Written by the measuring member, read after the group returned.
	first, last  link.BottleneckStats
	read0, read1 uint64
	gw0, gw1     gateway.CircuitStats
	samples      []RateSample
	// Written by the client side's loop after each decision.
	clientAsked []float64
	warmedUp    bool
	measured    bool // the snapshot at the end (or at an early end after the warm-up) is taken
	complete    bool // the run lasted its whole duration
	endCause    error
}

// NewArmRig builds arm's rig for cfg: it binds its sockets and starts
// nothing. obs, if not nil, measures the viewer's circuit at its host.
func NewArmRig(cfg Config, arm Arm, obs *Observer, log *slog.Logger) (*ArmRig, error) {
	cfg.Arms = []Arm{arm}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("gatewaylab: %w", err)
	}
	cfg = cfg.withDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if obs != nil && (obs.Loop == nil || arm == Sidecar || arm == Proxy) {
		return nil, errors.New("gatewaylab: an observer needs its loop, and the client side's arm has its own")
	}
	r := &ArmRig{cfg: cfg, arm: arm}
	var err error
	if r.b, err = link.NewBottleneck(link.BottleneckConfig{Up: cfg.Link, Down: cfg.Link, Seed: cfg.Seed}, log); err != nil {
		return nil, err
	}
	if r.tcpNet, err = tcpflow.New(r.b, tcpflow.Config{Seed: cfg.Seed}, log); err != nil {
		return nil, err
	}
	if r.download, err = r.tcpNet.AddFlow(downloadFlow()); err != nil {
		r.tcpNet.Close()
		return nil, err
	}
	// Each member bound so far is in release: should a later one fail,
	// their Close releases them.
	fail := func(err error) (*ArmRig, error) {
		return nil, errors.Join(err, r.Close())
	}
	r.members.Add(r.b.Run, nil)
	r.members.Add(r.tcpNet.Run, nil)
	sim, err := region.New(region.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Activity: cfg.Activity}, log)
	if err != nil {
		return fail(err)
	}
	r.release = append(r.release, sim.Close)
	r.members.Add(sim.Run, nil)
	upstream := sim.Addr()
	if arm != Stock {
		if r.gw, err = gateway.New(cfg.gatewayConfig(sim.Addr()), log.With("component", "gateway")); err != nil {
			return fail(err)
		}
		r.release = append(r.release, r.gw.Close)
		r.members.Add(r.gw.Run, nil)
		upstream = r.gw.Addr(0)
	}
	// The relay puts the viewer's datagrams on the bottleneck as flows
	// "lludp VIEWER up" and "lludp VIEWER down".
	var source *sidecar.PushSource
	var tap func(link.Datagram)
	if arm == Sidecar || obs != nil {
		// The client side, or the observer, sees what the viewer's host
		// sees; the payload is only lent.
		source = sidecar.NewChanSource(4096)
		// The sidecar closes it when its group stops; one that never ran
		// leaves it to the rig.
		r.release = append(r.release, source.Close)
		tap = func(d link.Datagram) {
			source.Push(lludp.Datagram{At: d.At, Src: d.Src, Dst: d.Dst, Payload: bytes.Clone(d.Payload)})
		}
	}
	relay, err := link.New(link.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Upstream: upstream, Shared: r.b, Tap: tap}, log)
	if err != nil {
		return fail(err)
	}
	r.release = append(r.release, relay.Close)
	r.members.Add(relay.Run, nil)
	vcfg := viewer.Config{Sim: relay.Addr(), Throttle: cfg.Throttle, FollowViewerRule: true, CircuitCode: 4242}
	if arm == Proxy {
		if err := r.addProxy(vcfg, relay.Addr(), log); err != nil {
			return fail(err)
		}
		r.members.Add(r.measure, nil)
		return r, nil
	}
	if r.v, err = viewer.New(vcfg, log); err != nil {
		return fail(err)
	}
	r.release = append(r.release, r.v.Close)
	r.members.Add(r.v.Run, nil)
	switch {
	case arm == Sidecar:
		if r.loop, err = throttle.New(cfg.sidecarConfig(), log); err != nil {
			return fail(err)
		}
		sc, err := sidecar.New(sidecar.Config{Loop: r.loop, Source: source, Sender: throttle.InjectSender(relay.InjectUp),
			AfterTick: r.recordClient, Log: log})
		if err != nil {
			return fail(err)
		}
		sc.AddTo(&r.members)
	case obs != nil:
		loop := obs.Loop
		sc, err := sidecar.New(sidecar.Config{Loop: loop, Source: source, Sender: discard{}, Log: log,
			AfterTick: func(now time.Time, _ []throttle.Request) {
				if obs.AfterTick == nil {
					return
				}
				var st ratecalc.Stats
				measured := false
				if keys := loop.Keys(); len(keys) > 0 {
					_, st, measured = loop.Circuit(keys[0])
				}
				obs.AfterTick(now, st, measured)
			}})
		if err != nil {
			return fail(err)
		}
		sc.AddTo(&r.members)
	}
	r.members.Add(r.measure, nil)
	return r, nil
}

// addProxy adds the Proxy arm's client side: fairgrid's SOCKS 5 proxy on
// loopback, relaying only to sim (the link's relay, towards the gateway),
// and the viewer, whose UDP goes through it. The viewer's association is
// made when it is built, so a member builds it once the proxy's group
// runs (its listener is bound here, and takes the viewer's connection
// until the server accepts it).
func (r *ArmRig) addProxy(vcfg viewer.Config, sim netip.AddrPort, log *slog.Logger) error {
	var err error
	if r.loop, err = throttle.New(r.cfg.sidecarConfig(), log); err != nil {
		return err
	}
	pcfg := proxy.Config{UDPPorts: lludp.Ports{{Lo: sim.Port(), Hi: sim.Port()}}}
	if r.px, err = proxy.New(pcfg, sidecar.Config{Loop: r.loop, AfterTick: r.recordClient, Log: log}, log.With("component", "proxy")); err != nil {
		return err
	}
	r.release = append(r.release, r.px.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	r.px.AddTo(&r.members, ln)
	vcfg.SOCKS5 = ln.Addr().String()
	r.members.Add(func(ctx context.Context) error {
		v, err := viewer.New(vcfg, log)
		if err != nil {
			return err
		}
		r.v = v
		return v.Run(ctx)
	}, nil)
	// The viewer a member made: Close reads it once the group returned.
	r.release = append(r.release, func() error {
		if r.v == nil {
			return nil
		}
		return r.v.Close()
	})
	return nil
}

// recordClient keeps the totals the client side's loop sent, after each
// of its decisions.
func (r *ArmRig) recordClient(_ time.Time, sent []throttle.Request) {
	for _, q := range sent {
		r.clientAsked = append(r.clientAsked, q.Total.BitsPerSecond())
	}
}

// discard is the observer's sender: it measures and sends nothing.
type discard struct{}

func (discard) Send(context.Context, throttle.Request) error { return nil }

// AddTo adds the rig's members to g; a rig runs in one group, once.
func (r *ArmRig) AddTo(g *group.Group) {
	g.Add(r.members.Run, nil)
}

// Close releases the rig once its group has returned, or when it never
// ran: each member's Close, last first, then the stacks. It returns what
// they failed to release, and may be called more than once.
func (r *ArmRig) Close() error {
	var errs []error
	for i := len(r.release) - 1; i >= 0; i-- {
		errs = append(errs, r.release[i]())
	}
	r.release = nil
	r.tcpNet.Close()
	return errors.Join(errs...)
}

// measure snapshots the link and the gateway at the end of the warm-up,
// the gateway's circuit every second after it, and the end; its return
// at the end ends the run.
func (r *ArmRig) measure(ctx context.Context) error {
	warm := time.NewTimer(r.cfg.Warmup)
	defer warm.Stop()
	end := time.NewTimer(r.cfg.Warmup + r.cfg.Duration)
	defer end.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var warmAt time.Time
	snapshot := func() {
		r.last, r.read1 = r.b.Stats(), r.download.Read(link.Down)
		// At an early end the gateway is stopping too: its circuit as the
		// last second's sample saw it stands if it is gone now.
		if c, ok := circuit(r.gw); ok {
			r.gw1 = c
		}
		r.measured = true
	}
	for {
		select {
		case <-ctx.Done():
			// Ended early: after the warm-up, what was measured so far
			// stands, and Result says it is partial.
			r.endCause = context.Cause(ctx)
			if r.warmedUp {
				snapshot()
			}
			return nil
		case <-warm.C:
			r.first, r.read0 = r.b.Stats(), r.download.Read(link.Down)
			r.gw0, _ = circuit(r.gw)
			warmAt, r.warmedUp = time.Now(), true
		case now := <-tick.C:
			if c, ok := circuit(r.gw); ok && r.warmedUp {
				r.gw1 = c
				r.samples = append(r.samples, RateSample{T: now.Sub(warmAt).Seconds(), AskedBPS: c.Asked.BitsPerSecond(),
					FairBPS: c.Fair.BitsPerSecond(), RateBPS: c.Rate.BitsPerSecond()})
			}
		case <-end.C:
			snapshot()
			r.complete = true
			return nil
		}
	}
}

// Complete says whether the run lasted its whole duration; a Result of a
// run ended early after its warm-up covers what ran.
func (r *ArmRig) Complete() bool { return r.complete }

// Result is the measured part of a run whose group has returned; an
// error when it ended before its warm-up did.
func (r *ArmRig) Result() (ArmResult, error) {
	if !r.measured {
		if r.endCause != nil {
			return ArmResult{}, fmt.Errorf("gatewaylab: ended before its warm-up: %w", r.endCause)
		}
		return ArmResult{}, errors.New("gatewaylab: the arm has not run")
	}
	if r.v == nil {
		return ArmResult{}, errors.New("gatewaylab: the viewer was never made")
	}
	d := r.last.Since(r.first)
	// The link's one viewer flow: the viewer's own socket, or in the
	// proxy arm the proxy's relay socket.
	down, ok := viewerDown(d)
	if !ok {
		return ArmResult{}, fmt.Errorf("the viewer's circuit never crossed the link (%v)", r.v.Report())
	}
	secs := r.last.Down.At.Sub(r.first.Down.At).Seconds()
	ms := func(x time.Duration) float64 { return float64(x) / float64(time.Millisecond) }
	res := ArmResult{Arm: r.arm, Seconds: secs, DownloadBPS: float64(r.read1-r.read0) * 8 / secs, ViewerBPS: float64(down.DeliveredBytes) * 8 / secs,
		QueueDelayMeanMs: ms(down.QueueDelay.Mean()), QueueDelayP95Ms: ms(down.QueueDelay.Quantile(0.95)), ViewerDropped: down.Dropped(),
		ViewerRequestBPS: r.v.Report().ThrottleBPS}
	if data, ok := d.Flow(downloadFlow().Name + " " + link.Down.String()); ok {
		res.DownloadWireBPS = data.Throughput() * 8
	}
	if sum := res.DownloadWireBPS + res.ViewerBPS; sum > 0 {
		res.DownloadShare = res.DownloadWireBPS / sum
	}
	if res.DownloadWireBPS > 0 {
		res.ViewerOverDownload = res.ViewerBPS / res.DownloadWireBPS
	}
	if r.gw != nil {
		if !r.gw1.Viewer.IsValid() {
			return ArmResult{}, errors.New("the gateway carried no circuit at the end of the run")
		}
		res.Gateway = gatewayView(r.cfg, r.gw0, r.gw1, r.gw.Counters())
		res.Gateway.PerSecond, res.Gateway.RateCV = r.samples, rateCV(r.samples)
		if r.loop != nil {
			res.Gateway.ClientRequests, res.Gateway.ClientAskedBPS = r.loop.Stats().Requests, r.clientAsked
		}
		if r.px != nil {
			res.Gateway.ProxyRewritten = r.px.Counts().Rewritten
		}
	}
	return res, nil
}

// viewerDown is the flow towards the arm's one viewer in d (each arm's
// link carries one circuit).
func viewerDown(d link.BottleneckStats) (link.FlowReport, bool) {
	for _, f := range d.Flows {
		if strings.HasPrefix(f.Name, "lludp ") && f.Dir == link.Down {
			return f, true
		}
	}
	return link.FlowReport{}, false
}

// RunArm runs one arm for cfg's warm-up and duration and measures the
// part after the warm-up. The bottleneck, the TCP stacks, the region, the
// gateway, the relay, the viewer and the measurement are one
// group.Group (an ArmRig's): the first failure ends the run and is
// returned, and so is a ctx that ends before the duration.
func RunArm(ctx context.Context, cfg Config, arm Arm, log *slog.Logger) (ArmResult, error) {
	return runArm(ctx, cfg, arm, log, false)
}

// runArm is RunArm; with partial, a run whose context ended after the
// warm-up gives what it measured (Run's, for an interrupted command).
func runArm(ctx context.Context, cfg Config, arm Arm, log *slog.Logger, partial bool) (res ArmResult, err error) {
	r, err := NewArmRig(cfg, arm, nil, log)
	if err != nil {
		return ArmResult{}, err
	}
	defer func() {
		if cerr := r.Close(); cerr != nil {
			res, err = ArmResult{}, errors.Join(err, cerr)
		}
	}()
	var g group.Group
	r.AddTo(&g)
	if err := g.Run(ctx); err != nil {
		return ArmResult{}, err
	}
	if !r.Complete() && !partial {
		return ArmResult{}, fmt.Errorf("ended before its duration: %w", context.Cause(ctx))
	}
	return r.Result()
}

// rateCV is the coefficient of variation of the rate in force: its
// standard deviation over its mean.
func rateCV(samples []RateSample) float64 {
	if len(samples) == 0 {
		return 0
	}
	var sum, sq float64
	for _, x := range samples {
		sum += x.RateBPS
	}
	mean := sum / float64(len(samples))
	for _, x := range samples {
		sq += (x.RateBPS - mean) * (x.RateBPS - mean)
	}
	if mean == 0 {
		return 0
	}
	return math.Sqrt(sq/float64(len(samples))) / mean
}

// circuit is the gateway's one circuit, if it carries one.
func circuit(gw *gateway.Gateway) (gateway.CircuitStats, bool) {
	if gw == nil {
		return gateway.CircuitStats{}, false
	}
	for _, c := range gw.Circuits() {
		if !c.Closing {
			return c, true
		}
	}
	return gateway.CircuitStats{}, false
}

// gatewayView is the gateway's view of the circuit between snapshots a
// and b (a may be empty: the circuit opened during the measurement).
func gatewayView(cfg Config, a, b gateway.CircuitStats, k gateway.Counters) *GatewayView {
	gv := &GatewayView{Controller: cfg.gatewayDefaults().Control.Controller, ByChannelMs: map[string]float64{}, FairBPS: b.Fair.BitsPerSecond(), RateBPS: b.Rate.BitsPerSecond(),
		LossEventRate: b.Controller.LossEventRate, RTTms: float64(b.RTT) / float64(time.Millisecond), Asserts: k.Asserts, Rewrites: k.Rewrites}
	if a.Viewer != b.Viewer {
		a = gateway.CircuitStats{}
	}
	var sum time.Duration
	var n uint64
	for ch := range opensim.Channel(opensim.NumChannels) {
		dn := b.DelayCount[ch] - a.DelayCount[ch]
		if dn == 0 {
			continue
		}
		ds := b.DelayMean[ch]*time.Duration(b.DelayCount[ch]) - a.DelayMean[ch]*time.Duration(a.DelayCount[ch])
		gv.ByChannelMs[ch.String()] = float64(ds/time.Duration(dn)) / float64(time.Millisecond)
		sum += ds
		n += dn
	}
	if n > 0 {
		gv.QueueDelayMeanMs = float64(sum/time.Duration(n)) / float64(time.Millisecond)
	}
	return gv
}

// gatewayDefaults is the gateway's configuration with its defaults, of a
// Config that Validate accepted: Validate refuses one whose gateway
// configuration does not take its defaults, so an error here is a bug.
func (c Config) gatewayDefaults() gateway.Config {
	gc, err := c.gatewayConfig(netip.MustParseAddrPort("127.0.0.1:9")).WithDefaults()
	if err != nil {
		panic(fmt.Sprintf("gatewaylab: a validated configuration's gateway: %v", err))
	}
	return gc
}

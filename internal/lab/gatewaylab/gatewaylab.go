package gatewaylab

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
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
		if a != Stock && a != Gateway && a != Sidecar || seen[a] {
			errs = append(errs, fmt.Errorf("arm %q: want %s, %s or %s, once each", a, Gateway, Sidecar, Stock))
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
		Control: throttle.Config{Controller: c.Controller, Interval: c.Interval}}
}

// sidecarConfig is the client side's: the gateway's controller and
// interval.
func (c Config) sidecarConfig() throttle.Config {
	gc := c.gatewayDefaults()
	return throttle.Config{Controller: gc.Control.Controller, Interval: gc.Control.Interval}
}

// ArmResult is one arm over the measured part of its run.
type ArmResult struct {
	Arm Arm `json:"arm"`
	// Seconds is how long the measured part lasted.
	Seconds float64 `json:"seconds"`
	// DownloadBPS is what the download's receiver read, bits/s.
	DownloadBPS float64 `json:"download_bps"`
	// ViewerBPS is what reached the viewer through the bottleneck, bits/s
	// on the wire (payload plus IPv4 and UDP headers).
	ViewerBPS float64 `json:"viewer_bps"`
	// DownloadShare is DownloadBPS ÷ (DownloadBPS + ViewerBPS);
	// ViewerOverDownload is ViewerBPS ÷ DownloadBPS (TCP-fair: 0.8–1.25),
	// 0 when the download moved nothing.
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
	// ClientRequests counts the client side's requests (the sidecar arm).
	ClientRequests uint64 `json:"client_requests,omitempty"`
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
// and returns them in cfg's order. Each arm is one throttle.Group; the
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
			r, err := RunArm(ctx, cfg, a, log.With("arm", a))
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
	return res, nil
}

// downloadFlow is the bulk download beside the viewer, as the demo's.
func downloadFlow() tcpflow.FlowConfig {
	return tcpflow.FlowConfig{Name: "cubic download", CC: tcpflow.CUBIC, Dir: tcpflow.Download}
}

// RunArm runs one arm for cfg's warm-up and duration and measures the
// part after the warm-up. The bottleneck, the TCP stacks, the region, the
// gateway, the relay, the viewer and the measurement are one
// throttle.Group: the first failure ends the run and is returned. The
// demo can call it for its gateway line (the Gateway arm on its link).
func RunArm(ctx context.Context, cfg Config, arm Arm, log *slog.Logger) (ArmResult, error) {
	cfg.Arms = []Arm{arm}
	if err := cfg.Validate(); err != nil {
		return ArmResult{}, fmt.Errorf("gatewaylab: %w", err)
	}
	cfg = cfg.withDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b, err := link.NewBottleneck(link.BottleneckConfig{Up: cfg.Link, Down: cfg.Link, Seed: cfg.Seed}, log)
	if err != nil {
		return ArmResult{}, err
	}
	tcpNet, err := tcpflow.New(b, tcpflow.Config{Seed: cfg.Seed}, log)
	if err != nil {
		return ArmResult{}, err
	}
	defer tcpNet.Close()
	download, err := tcpNet.AddFlow(downloadFlow())
	if err != nil {
		return ArmResult{}, err
	}
	sim, err := region.New(region.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Activity: cfg.Activity}, log)
	if err != nil {
		return ArmResult{}, err
	}
	var g throttle.Group
	g.Add(b.Run, nil)
	g.Add(tcpNet.Run, nil)
	g.Add(sim.Run, nil)
	upstream := sim.Addr()
	var gw *gateway.Gateway
	if arm != Stock {
		if gw, err = gateway.New(cfg.gatewayConfig(sim.Addr()), log.With("component", "gateway")); err != nil {
			closeRegion(sim)
			return ArmResult{}, err
		}
		g.Add(gw.Run, nil)
		upstream = gw.Addr(0)
	}
	// The relay puts the viewer's datagrams on the bottleneck as flows
	// "lludp VIEWER up" and "lludp VIEWER down".
	var source *throttle.PushSource
	var tap func(link.Datagram)
	if arm == Sidecar {
		// The client side sees what the viewer's host sees; the payload
		// is only lent.
		source = throttle.NewChanSource(4096)
		tap = func(d link.Datagram) {
			source.Push(lludp.Datagram{At: d.At, Src: d.Src, Dst: d.Dst, Payload: bytes.Clone(d.Payload)})
		}
	}
	relay, err := link.New(link.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Upstream: upstream, Shared: b, Tap: tap}, log)
	if err != nil {
		closeRegion(sim)
		closeGateway(gw)
		return ArmResult{}, err
	}
	v, err := viewer.New(viewer.Config{Sim: relay.Addr(), Throttle: cfg.Throttle, FollowViewerRule: true, CircuitCode: 4242}, log)
	if err != nil {
		closeRegion(sim)
		closeGateway(gw)
		closeRelay(relay)
		return ArmResult{}, err
	}
	g.Add(relay.Run, nil)
	g.Add(v.Run, nil)
	var loop *throttle.Loop
	if arm == Sidecar {
		if loop, err = throttle.New(cfg.sidecarConfig(), log); err == nil {
			var sc *throttle.Sidecar
			if sc, err = throttle.NewSidecar(throttle.SidecarConfig{Loop: loop, Source: source, Sender: throttle.InjectSender(relay.InjectUp), Log: log}); err == nil {
				sc.AddTo(&g)
			}
		}
		if err != nil {
			closeRegion(sim)
			closeGateway(gw)
			closeRelay(relay)
			endedRun(v.Run)
			return ArmResult{}, err
		}
	}
	downName := fmt.Sprintf("lludp %v down", v.Addr())

	var first, last link.BottleneckStats
	var read0, read1 uint64
	var gw0, gw1 gateway.CircuitStats
	var samples []RateSample
	g.Add(func(ctx context.Context) error {
		warm := time.NewTimer(cfg.Warmup)
		defer warm.Stop()
		end := time.NewTimer(cfg.Warmup + cfg.Duration)
		defer end.Stop()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		var warmAt time.Time
		for {
			select {
			case <-ctx.Done():
				return fmt.Errorf("ended before its duration: %w", context.Cause(ctx))
			case <-warm.C:
				first, read0 = b.Stats(), download.Read(link.Down)
				gw0, _ = circuit(gw)
				warmAt = time.Now()
			case now := <-tick.C:
				if c, ok := circuit(gw); ok && !warmAt.IsZero() {
					samples = append(samples, RateSample{T: now.Sub(warmAt).Seconds(), AskedBPS: c.Asked.BitsPerSecond(),
						FairBPS: c.Fair.BitsPerSecond(), RateBPS: c.Rate.BitsPerSecond()})
				}
			case <-end.C:
				last, read1 = b.Stats(), download.Read(link.Down)
				gw1, _ = circuit(gw)
				return nil
			}
		}
	}, nil)
	if err := g.Run(ctx); err != nil {
		return ArmResult{}, err
	}
	d := last.Since(first)
	down, ok := d.Flow(downName)
	if !ok {
		return ArmResult{}, fmt.Errorf("the viewer's circuit never crossed the link (%v)", v.Report())
	}
	secs := last.Down.At.Sub(first.Down.At).Seconds()
	ms := func(x time.Duration) float64 { return float64(x) / float64(time.Millisecond) }
	r := ArmResult{Arm: arm, Seconds: secs, DownloadBPS: float64(read1-read0) * 8 / secs, ViewerBPS: float64(down.DeliveredBytes) * 8 / secs,
		QueueDelayMeanMs: ms(down.QueueDelay.Mean()), QueueDelayP95Ms: ms(down.QueueDelay.Quantile(0.95)), ViewerDropped: down.Dropped(),
		ViewerRequestBPS: v.Report().ThrottleBPS}
	if sum := r.DownloadBPS + r.ViewerBPS; sum > 0 {
		r.DownloadShare = r.DownloadBPS / sum
	}
	if r.DownloadBPS > 0 {
		r.ViewerOverDownload = r.ViewerBPS / r.DownloadBPS
	}
	if gw != nil {
		if !gw1.Viewer.IsValid() {
			return ArmResult{}, errors.New("the gateway carried no circuit at the end of the run")
		}
		k := gw.Counters()
		r.Gateway = gatewayView(cfg, gw0, gw1, k)
		r.Gateway.PerSecond, r.Gateway.RateCV = samples, rateCV(samples)
		if loop != nil {
			r.Gateway.ClientRequests = loop.Stats().Requests
		}
	}
	return r, nil
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

// gatewayDefaults is the gateway's configuration with its defaults.
func (c Config) gatewayDefaults() gateway.Config {
	gc, _ := c.gatewayConfig(netip.MustParseAddrPort("127.0.0.1:9")).WithDefaults()
	return gc
}

// The members' sockets are closed by their Run once its context has
// ended; a run that does not start runs them on an ended context.
func closeRegion(s *region.Server) { endedRun(s.Run) }
func closeRelay(r *link.Relay)     { endedRun(r.Run) }
func closeGateway(g *gateway.Gateway) {
	if g != nil {
		endedRun(g.Run)
	}
}

func endedRun(run func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	run(ctx)
}

package gatewaylab

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"sync"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/demand"
	"github.com/fairgrid/fairgrid/internal/lab/fairness"
	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/internal/lab/viewer"
	"github.com/fairgrid/fairgrid/opensim"
	"github.com/fairgrid/fairgrid/opensim/gateway"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
)

// DefaultLink is the demo's link (internal/lab/demo.DefaultLink, which the
// demo passes as Config.Link): 1 Mbit/s, 50 ms one way, 1 % random loss
// towards the viewer, a 100-datagram buffer. The stock viewer asks for
// more than it carries.
var DefaultLink = link.PipeConfig{Rate: 1_000_000 / 8, Delay: 50 * time.Millisecond, Loss: 0.01, Buffer: 100}

// DefaultWarmup is `fairgrid lab gateway`'s warm-up: the download leaves
// slow start and the gateway has made a few decisions at its 5 s interval.
const DefaultWarmup = 20 * time.Second

// Arm is one way the viewer reaches the region: one of the fairness rig's
// product seats (internal/lab/demand's front-ends).
type Arm string

const (
	// Stock: the viewer straight to the region, as without fairgrid.
	Stock = Arm(demand.Stock)
	// Gateway: the viewer through fairgrid's gateway at the region's
	// public address.
	Gateway = Arm(demand.Gateway)
	// Sidecar: through the gateway, with fairgrid's client side at the
	// viewer as well (the sidecar: measure what arrives, send the
	// viewer's AgentThrottle every interval, across the link), with the
	// gateway's controller and interval.
	Sidecar = Arm(demand.GatewaySidecar)
)

// Arms are the arms a run takes.
var Arms = []Arm{Gateway, Sidecar, Stock}

// Config describes a run. Zero fields take the defaults named.
type Config struct {
	// Link is the bottleneck (default DefaultLink): its rate, one-way
	// delay and buffer each way, its random loss towards the viewer (the
	// fairness rig's uplink loses nothing).
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
	c.Interval = cmp.Or(c.Interval, c.gatewayDefaults().Control.Interval)
	if len(c.Arms) == 0 {
		c.Arms = []Arm{Gateway, Stock}
	}
	return c
}

// Validate reports what Run would refuse.
func (c Config) Validate() error {
	var errs []error
	if _, err := c.gatewayConfig(netip.MustParseAddrPort("127.0.0.1:9")).WithDefaults(); err != nil {
		return err
	} else if _, err := throttle.New(c.sidecarConfig(), nil); err != nil {
		return err
	}
	c = c.withDefaults()
	if err := c.Link.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("link: %w", err))
	}
	if l := c.Link; l.BurstLen > 1 || l.BufferBytes != 0 {
		errs = append(errs, fmt.Errorf("link: burst length %v, buffer %d bytes: the fairness rig's link has independent losses and a buffer in datagrams", l.BurstLen, l.BufferBytes))
	}
	if err := c.cell(Gateway).Validate(); err != nil {
		errs = append(errs, err)
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
	return errors.Join(errs...)
}

func (c Config) gatewayConfig(sim netip.AddrPort) gateway.Config {
	return gateway.Config{Routes: []gateway.Route{{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Region: sim}},
		Control: throttle.Config{Controller: c.Controller, Interval: c.Interval, Segment: c.Segment}}
}

// sidecarConfig is the client side's: the gateway's controller and
// interval.
func (c Config) sidecarConfig() throttle.Config {
	gc := c.gatewayDefaults()
	return throttle.Config{Controller: gc.Control.Controller, Interval: gc.Control.Interval, Segment: gc.Control.Segment}
}

// cell is the fairness rig's cell of arm on c's link, beside one CUBIC
// download of gVisor's.
func (c Config) cell(arm Arm) fairness.Cell {
	return fairness.Cell{Product: demand.FrontEnd(arm), TCP: fairness.GVisorCUBIC, Flows: 1, Buffer: cmp.Or(c.Link.Buffer, link.DefaultBuffer),
		Loss: c.Link.Loss, RTTms: 2 * float64(c.Link.Delay) / float64(time.Millisecond), LinkBPS: float64(c.Link.Rate) * 8}
}

// ArmResult is one arm over the measured part of its run.
type ArmResult struct {
	Arm Arm `json:"arm"`
	// Seconds is how long the measured part lasted.
	Seconds float64 `json:"seconds"`
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
	// ViewerRequestBPS is the viewer's own request at the end.
	ViewerRequestBPS float64 `json:"viewer_request_bps"`
	// Gateway is the gateway's view of the circuit (the gateway arms only).
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
	// ClientRequests counts the client side's requests over the measured
	// part (the gateway+sidecar arm), and ClientAskedBPS are their totals
	// in the order sent, bits/s.
	ClientRequests uint64    `json:"client_requests,omitempty"`
	ClientAskedBPS []float64 `json:"client_asked_bps,omitempty"`
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

// Run runs every arm of cfg at once, each a cell of the fairness rig
// (fairness.Run) on its own copy of the link, and returns them in cfg's
// order; the first arm's failure is returned with every other's. A
// context that ends after the warm-up gives what each arm measured until
// then, marked Interrupted.
func Run(ctx context.Context, cfg Config, log *slog.Logger) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, fmt.Errorf("gatewaylab: %w", err)
	}
	cfg = cfg.withDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	res := Result{LinkBPS: float64(cfg.Link.Rate) * 8, DelayMs: float64(cfg.Link.Delay) / float64(time.Millisecond), Loss: cfg.Link.Loss,
		Buffer: cmp.Or(cfg.Link.Buffer, link.DefaultBuffer), WarmupS: cfg.Warmup.Seconds(), DurationS: cfg.Duration.Seconds(), Seed: cfg.Seed,
		ThrottleBP: cfg.Throttle.BitsPerSecond(), Arms: make([]ArmResult, len(cfg.Arms))}
	errs := make([]error, len(cfg.Arms))
	var wg sync.WaitGroup
	for i, a := range cfg.Arms {
		wg.Go(func() {
			if res.Arms[i], errs[i] = runArm(ctx, cfg, a, log.With("arm", a)); errs[i] != nil {
				errs[i] = fmt.Errorf("%s: %w", a, errs[i])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Result{}, fmt.Errorf("gatewaylab: %w", err)
	}
	for _, a := range res.Arms {
		res.Interrupted = res.Interrupted || a.Seconds < cfg.Duration.Seconds()*0.99
	}
	return res, nil
}

// runArm runs one arm's cell and reads the gateway as it runs.
func runArm(ctx context.Context, cfg Config, arm Arm, log *slog.Logger) (ArmResult, error) {
	var seat *demand.Seat
	w := watch{warmup: cfg.Warmup, done: make(chan struct{}), ended: make(chan struct{})}
	opt := fairness.Options{Warmup: cfg.Warmup, Duration: cfg.Duration, Interval: cfg.Interval, Seed: cfg.Seed, Log: log,
		SeatConfig: func(dc *demand.Config) {
			dc.ViewerAsks = cfg.Throttle
			dc.Throttle = throttle.Config{Controller: cfg.Controller, Segment: cfg.Segment}
		},
		OnSeat: func(s *demand.Seat) {
			seat, w.gw = s, s.Gateway()
			go w.run()
		}}
	r, err := fairness.Run(ctx, cfg.cell(arm), opt)
	if seat != nil {
		close(w.done)
		<-w.ended
	}
	if err != nil {
		return ArmResult{}, err
	}
	res := ArmResult{Arm: arm, Seconds: r.Seconds, ViewerBPS: r.MeanViewer(), DownloadWireBPS: r.MeanTCP(),
		QueueDelayMeanMs: r.SeatQueueDelayMeanMs, QueueDelayP95Ms: r.SeatQueueDelayP95Ms, ViewerRequestBPS: seat.Report().ThrottleBPS}
	res.divide()
	if w.gw != nil {
		if !w.gw1.Viewer.IsValid() {
			return ArmResult{}, errors.New("the gateway carried no circuit at the end of the run")
		}
		res.Gateway = gatewayView(cfg, w.gw0, w.gw1, w.gw.Counters())
		res.Gateway.PerSecond, res.Gateway.RateCV = w.samples, rateCV(w.samples)
		res.Gateway.ClientRequests, res.Gateway.ClientAskedBPS = uint64(len(r.Requests)), r.Requests
	}
	return res, nil
}

// divide sets the arm's shares from its two rates on the wire.
func (res *ArmResult) divide() {
	if sum := res.DownloadWireBPS + res.ViewerBPS; sum > 0 {
		res.DownloadShare = res.DownloadWireBPS / sum
	}
	if res.DownloadWireBPS > 0 {
		res.ViewerOverDownload = res.ViewerBPS / res.DownloadWireBPS
	}
}

// watch reads the gateway's circuit at the end of the warm-up and once a
// second after it, beside the fairness rig's own measurement, until done
// closes; its fields are read once ended has closed.
type watch struct {
	gw          *gateway.Gateway // nil: no gateway, nothing to read
	warmup      time.Duration
	done, ended chan struct{}
	gw0, gw1    gateway.CircuitStats
	samples     []RateSample
}

func (w *watch) run() {
	defer close(w.ended)
	if w.gw == nil {
		return
	}
	warm := time.NewTimer(w.warmup)
	defer warm.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var warmAt time.Time
	for {
		select {
		case <-w.done:
			return
		case now := <-warm.C:
			w.gw0, _ = circuit(w.gw)
			warmAt = now
		case now := <-tick.C:
			if c, ok := circuit(w.gw); ok && !warmAt.IsZero() {
				w.gw1 = c
				w.samples = append(w.samples, RateSample{T: now.Sub(warmAt).Seconds(), AskedBPS: c.Asked.BitsPerSecond(),
					FairBPS: c.Fair.BitsPerSecond(), RateBPS: c.Rate.BitsPerSecond()})
			}
		}
	}
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
		// Means of rounded durations: a difference of nought may come out
		// a nanosecond below.
		ds := max(0, b.DelayMean[ch]*time.Duration(b.DelayCount[ch])-a.DelayMean[ch]*time.Duration(a.DelayCount[ch]))
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

// Package demo runs fairgrid's embedded default: a test region, a link
// emulator and a stock viewer in one process, with the sidecar's control
// loop reading the viewer's traffic from the emulator's tap and sending its
// AgentThrottle through the emulator instead of a raw socket. It needs no
// root and no network, and otherwise runs the same loop as the daemon.
//
// The set-up is the lab's rig (scenario.Rig: region, relay, viewer and
// sidecar on a link.Bottleneck). The viewer shares its link with a bulk
// TCP download (gVisor's userspace CUBIC, Linux's default), and a second
// rig runs beside it with the stock viewer left alone, and a third
// (internal/lab/gatewaylab's gateway arm) with the stock viewer reaching
// the region through fairgrid's gateway instead of the sidecar, so that
// the demo ends with whom the stock viewer hurts and what each side of
// fairgrid changes: the download's throughput, the viewer's received rate
// and queueing delay, and its TCP-fair share, for each. A run too short
// for the controller (MinSettledIntervals) says so instead of judging.
package demo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/internal/lab/gatewaylab"
	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/internal/lab/scenario"
	"github.com/fairgrid/fairgrid/internal/lab/tcpflow"
	"github.com/fairgrid/fairgrid/internal/lab/viewer"
	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/group"
	"github.com/fairgrid/fairgrid/throttle/sidecar"
)

// Config describes the demo. Zero fields take the defaults named;
// Validate says which values it refuses, and Run refuses them too.
type Config struct {
	// Link is the emulated link, the same both ways. A zero Link is
	// DefaultLink; any other is taken as it is, so a lossless or
	// unlimited link can be asked for.
	Link link.PipeConfig
	// Duration of the run (default 60 s): at least two intervals, so that
	// there is a second half to judge.
	Duration time.Duration
	// Loop configures the control loop (default throttle's: its
	// DefaultController, 5 s, its default segment size). The TCP-fair
	// rates the demo shows stand on the loop's segment size, as its
	// controller's do.
	Loop throttle.Config
	// ViewerThrottle is the stock viewer's request (default 1,500 kbps of
	// 1024 bit/s); the viewer follows the stock ±10 % rule from it.
	ViewerThrottle ratecalc.Rate
	Activity       region.Activity
	Seed           uint64
	// Live runs the daemon's production path instead of the in-process
	// tap: fairgrid captures the viewer's datagrams on lo through AF_PACKET
	// and sends with raw sockets as the viewer. It needs CAP_NET_RAW.
	Live bool
	// Alone leaves the viewer alone on its link: no TCP download beside
	// it, and no stock run to compare with. A run shorter than
	// MinCompareDuration is alone whatever Alone says.
	Alone bool
	// NoGateway leaves the gateway's rig out of the comparison: the stock
	// viewer through fairgrid's gateway, a third region, download and
	// link beside the other two, whose cost on a loaded machine may be
	// more than its row is worth.
	NoGateway bool

	// source, if set, opens the sidecar's source in place of the rig's
	// tap (scenario.RigViewer.Source): the tests' failing source.
	source func(relay netip.AddrPort) (sidecar.Source, error)
	// afterStockTick, if set, sees each decision of the stock rig's
	// measuring loop (scenario.RigViewer.AfterTick): the tests' view of
	// what the stock side's fair share stands on.
	afterStockTick func(scenario.RigTick)
}

// MinCompareDuration is the shortest demo that gets the download and the
// stock run beside it: the download needs a few seconds to leave slow
// start and the stock viewer steps its request every 5 s, so a comparison
// over less would compare start-ups. Shorter runs (the command's tests
// run for a fraction of a second) leave the download out, which also
// keeps a bulk flow over an unlimited or delay-free link from spinning a
// core.
const MinCompareDuration = 10 * time.Second

// DefaultLink is the demo's link: 1 Mbit/s, 50 ms one way, 1 % random
// loss, a 100-datagram buffer. The stock viewer asks for more than the
// link carries, so beside it the download is held by what the viewer
// leaves of the link, and the viewer's own datagrams queue; at the
// thesis's 3 % loss (ThesisLink) the random loss alone holds a download to
// a few hundred kbit/s whoever shares the link, and the demo shows no
// harm.
var DefaultLink = link.PipeConfig{Rate: 1_000_000 / 8, Delay: 50 * time.Millisecond, Loss: 0.01, Buffer: 100}

// ThesisLink is DefaultLink at the thesis's 3 % loss, where the stock
// viewer's ±10 % rule acts: it steps its request down above 3 % measured
// loss and up at or below 0.5 % (ratecalc's viewer rule), so fairgrid has
// the viewer's own AgentThrottle to override. At 1 % the viewer holds its
// request.
var ThesisLink = link.PipeConfig{Rate: 2_000_000 / 8, Delay: 50 * time.Millisecond, Loss: 0.03, Buffer: 100}

func (c Config) withDefaults() Config {
	if c.Link == (link.PipeConfig{}) {
		c.Link = DefaultLink
	}
	c.Duration = cmp.Or(c.Duration, 60*time.Second)
	c.ViewerThrottle = cmp.Or(c.ViewerThrottle, viewer.DefaultThrottle)
	c.Activity = cmp.Or(c.Activity, region.Flying)
	c.Seed = cmp.Or(c.Seed, 1)
	return c
}

// Validate reports what Run would refuse: a link the emulator refuses, a
// loop configuration throttle.New refuses, and a run shorter than two
// intervals, whose verdict would judge nothing.
func (c Config) Validate() error {
	c = c.withDefaults()
	loop, err := c.loop(nil)
	if err != nil || !c.withGateway() {
		return err
	}
	return c.gatewayConfig(loop.Interval()).Validate()
}

// withGateway says whether the run has the gateway's rig.
func (c Config) withGateway() bool {
	return !c.NoGateway && !c.Alone && c.Duration >= MinCompareDuration
}

// gatewayConfig is the gateway rig's: the demo's link, viewer and region,
// and the gateway deciding as the sidecar does (its controller, segment
// and interval), measured over the same last half as the other rigs.
func (c Config) gatewayConfig(interval time.Duration) gatewaylab.Config {
	warmup, duration := c.measured(interval)
	lc := c.Loop
	return gatewaylab.Config{Link: c.Link, Warmup: warmup, Duration: duration, Seed: c.Seed, Throttle: c.ViewerThrottle,
		Controller: lc.Controller, Interval: interval, Segment: lc.Segment}
}

// measured is the rigs' warm-up and measured duration: the last half of
// the run's whole intervals, and half an interval more. The run ends
// after its last whole interval's row; the rigs' end, half an interval
// later, only stops a loop that fell behind: a tick at the very end of
// the duration would otherwise race it.
func (c Config) measured(interval time.Duration) (warmup, duration time.Duration) {
	intervals := int(c.Duration / interval)
	half := time.Duration(intervals-intervals/2) * interval
	return time.Duration(intervals)*interval - half, half + interval/2
}

// loop checks c, which has its defaults, and builds its control loop.
func (c Config) loop(log *slog.Logger) (*throttle.Loop, error) {
	if err := c.Link.Validate(); err != nil {
		return nil, fmt.Errorf("link: %w", err)
	}
	loop, err := throttle.New(c.Loop, log)
	if err != nil {
		return nil, err
	}
	if c.Duration < 2*loop.Interval() {
		return nil, fmt.Errorf("duration %v is shorter than two intervals (2 × %v)", c.Duration, loop.Interval())
	}
	return loop, nil
}

// MinSettledIntervals is the fewest intervals whose last half judges
// fairgrid rather than its start-up: the loop sends its first request at
// the end of the first interval, the region applies a request within two
// (Summary.MaxFollowIntervals), and the judged half should begin after
// both. Six is 30 s at the default 5 s.
const MinSettledIntervals = 6

// TooShort says, in words, why an unsettled run's ratios are no verdict,
// and is empty for a settled one.
func (s Summary) TooShort() string {
	if s.Settled {
		return ""
	}
	interval := time.Duration(s.IntervalSeconds * float64(time.Second))
	return fmt.Sprintf("the controller had too little time to judge: %d intervals of %v, where a verdict needs at least %d (%v)",
		s.Intervals, interval, MinSettledIntervals, MinSettledIntervals*interval)
}

// Row is one interval of the run (`fairgrid run --demo --format json`).
type Row struct {
	T       float64 `json:"t_s"`
	RateBPS float64 `json:"rate_bps"` // received by the viewer over the interval
	// FairBPS is the TCP-fair rate at the measured loss event rate, RTT and
	// the controller's segment size (the mean payload or 1460 B, as the
	// loop's Segment says), by the model the controller follows: the
	// Mathis rate (Reno's AIMD) for window tracking, the TFRC equation
	// otherwise. Null until its model has counted a loss event (vtcp counts per
	// segment, later than per packet).
	FairBPS            *float64 `json:"fair_bps"`
	LossEventRate      float64  `json:"loss_event_rate"`
	RTTms              *float64 `json:"rtt_ms"`
	ViewerRequestBPS   float64  `json:"viewer_request_bps"`
	FairgridRequestBPS *float64 `json:"fairgrid_request_bps"` // null until the first request
	AppliedBPS         float64  `json:"applied_bps"`          // what the region applies
}

// Summary ends the run.
type Summary struct {
	Summary bool `json:"summary"`
	// Intervals is how many rows the run produced; Interrupted is set when
	// the caller's context ended it before its duration, and the verdict
	// covers what ran.
	Intervals   int  `json:"intervals"`
	Interrupted bool `json:"interrupted"`
	// IntervalSeconds is the loop's decision interval.
	IntervalSeconds float64 `json:"interval_s"`
	// Settled is set when the run had at least MinSettledIntervals
	// intervals, so that its last half, which the ratios judge, follows
	// fairgrid's requests; an unsettled run's ratios are its start-up, and
	// TooShort says so.
	Settled bool `json:"settled"`
	// FairModel names the TCP-fair model: "mathis" or "tfrc".
	FairModel string `json:"fair_model"`
	// Segment is the segment size s the fair rates stand on: "mean" or
	// "nominal" (throttle.Segment).
	Segment throttle.Segment `json:"segment"`
	// RatioToFair is the mean received rate over the last half of the run
	// (the datagrams' payload, as the loop counts it: the equation's s is
	// payload) divided by the mean TCP-fair rate over the same intervals:
	// the controller's own yardstick. The verdict is a Side's
	// ViewerOverDownload, on the wire.
	RatioToFair float64 `json:"ratio_to_fair"`
	MeanRateBPS float64 `json:"mean_rate_bps"`
	MeanFairBPS float64 `json:"mean_fair_bps"`
	// ViewerRatioToFair is what the stock viewer's own request would have
	// been, against the same fair rate.
	ViewerRatioToFair float64 `json:"viewer_ratio_to_fair"`
	Requests          uint64  `json:"requests"`
	Reasserts         uint64  `json:"reasserts"`
	// MaxOverrideMs is the longest the region applied a viewer's own
	// AgentThrottle before fairgrid's re-assertion replaced it.
	MaxOverrideMs float64 `json:"max_override_ms"`
	// FollowIntervals: after each request changed, how many intervals until
	// the region applied it (at most).
	MaxFollowIntervals int `json:"max_follow_intervals"`
	// Stock, Fairgrid and Gateway compare the runs side by side, each
	// with a bulk CUBIC download on its own copy of the link, over the
	// last half of the run; nil when the viewer ran alone, or when the run
	// was interrupted before the measured half began. Gateway is the stock
	// viewer reaching the region through fairgrid's gateway; nil too with
	// Config.NoGateway.
	Stock    *Side `json:"stock,omitempty"`
	Fairgrid *Side `json:"fairgrid,omitempty"`
	Gateway  *Side `json:"gateway,omitempty"`
}

// Side is one viewer beside the download.
type Side struct {
	// DownloadBPS is what the download's data carried through the link
	// towards its receiver, on the wire (headers and retransmissions
	// included), as ViewerBPS is the viewer's: one share is the same
	// bytes/s on the wire, as the lab measures it.
	DownloadBPS float64 `json:"download_bps"`
	// ViewerBPS is what reached the viewer, on the wire.
	ViewerBPS float64 `json:"viewer_bps"`
	// The viewer's datagrams' wait in the link's queue towards it.
	QueueDelayMeanMs float64 `json:"queue_delay_mean_ms"`
	QueueDelayP95Ms  float64 `json:"queue_delay_p95_ms"`
	// FairBPS is the viewer's TCP-fair share at the loss and RTT its
	// circuit measured, by the model FairModel names with the segment size
	// Summary.Segment names, for every viewer (the stock viewer's circuit,
	// alone and through the gateway, is measured at the viewer's host by
	// the same controller, which sends nothing): the mean
	// over the decisions of the measured half; 0 without loss.
	FairBPS float64 `json:"fair_bps"`
	// ViewerOverDownload is ViewerBPS ÷ DownloadBPS: the promise, measured
	// (TCP-fair means one share: 0.8–1.25); 0 when the download moved
	// nothing.
	ViewerOverDownload float64 `json:"viewer_over_download"`
}

func downloadFlow() tcpflow.FlowConfig {
	return tcpflow.FlowConfig{Name: "cubic download", CC: tcpflow.CUBIC, Dir: tcpflow.Download}
}

// applied records what the region applies and when.
type applied struct {
	mu       sync.Mutex
	total    int64
	viewerAt time.Time // when a value not ours was applied, still in force
	maxOver  time.Duration
	ours     map[int64]bool // totals fairgrid asked for (bytes/s, as the region clamps them)
	events   []appliedEvent
}

type appliedEvent struct {
	at    time.Time
	total int64
}

// set records an applied AgentThrottle: requested is what the message
// asked for (bytes/s), total what the region applies after its clamps.
func (a *applied) set(requested, total int64, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.total = total
	a.events = append(a.events, appliedEvent{at: at, total: requested})
	if near(a.ours, requested) {
		if !a.viewerAt.IsZero() {
			a.maxOver = max(a.maxOver, at.Sub(a.viewerAt))
			a.viewerAt = time.Time{}
		}
		return
	}
	if a.viewerAt.IsZero() && len(a.ours) > 0 {
		a.viewerAt = at
	}
}

// near: the split's float32 values sum to the request within rounding, so
// a total within 0.5 % of one asked for is that one.
func near(set map[int64]bool, total int64) bool {
	for t := range set {
		if d := float64(total-t) / float64(t); d < 0.005 && d > -0.005 {
			return true
		}
	}
	return false
}

// recordingSender notes each request fairgrid sends, before it leaves, so
// that the region's applying it is known as ours, then sends it on: across
// the rig's bottleneck as the viewer, or with raw sockets in live mode.
type recordingSender struct {
	next throttle.Sender
	a    *applied
	mu   sync.Mutex
	sent []sentRequest
}

type sentRequest struct {
	at    time.Time
	total int64 // bytes/s
}

func (s *recordingSender) Send(ctx context.Context, r throttle.Request) error {
	total := int64(r.Total)
	s.a.mu.Lock()
	s.a.ours[total] = true
	s.a.mu.Unlock()
	s.mu.Lock()
	s.sent = append(s.sent, sentRequest{at: time.Now(), total: total})
	s.mu.Unlock()
	return s.next.Send(ctx, r)
}

// Run runs the demo, calling onRow after every interval, and returns the
// summary: one row per whole interval of the duration. When ctx ends
// first, it stops and returns the summary of the intervals that ran,
// marked Interrupted, and no error: an interrupted demo still has a
// verdict.
//
// The demo is the lab's rig (scenario.Rig), twice: the viewer with
// fairgrid and, unless Alone, the stock viewer, each beside a CUBIC
// download on its own copy of the link. Both rigs run in one
// group.Group with the member that ends the run at its last row: the
// first failure of any part stops every other, and is what Run returns.
func Run(ctx context.Context, cfg Config, log *slog.Logger, onRow func(Row)) (Summary, error) {
	cfg = cfg.withDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg.Alone = cfg.Alone || cfg.Duration < MinCompareDuration
	loop, err := cfg.loop(log)
	if err != nil {
		return Summary{}, err
	}
	// Every side is measured over the same last half (Config.measured).
	interval := loop.Interval()
	intervals := int(cfg.Duration / interval)
	warmup, measured := cfg.measured(interval)
	rigConfig := func(v *scenario.RigViewer) scenario.RigConfig {
		rc := scenario.RigConfig{Up: cfg.Link, Down: cfg.Link, Seed: cfg.Seed, Viewer: v,
			Warmup: warmup, Duration: measured}
		if !cfg.Alone {
			rc.TCP = []tcpflow.FlowConfig{downloadFlow()}
		}
		return rc
	}

	a := &applied{ours: map[int64]bool{}}
	sender := &recordingSender{a: a}
	var (
		start       time.Time
		rows        []Row
		stockFair   []*float64 // the stock viewer's TCP-fair rate at each decision, as rows' FairBPS
		gatewayFair []*float64 // the same through the gateway
		lastRequest *float64
		lastRow     = make(chan struct{})
	)
	fairgrid := &scenario.RigViewer{Mode: scenario.ViewerMode(loop.Config().Controller), Loop: loop, Throttle: cfg.ViewerThrottle, Activity: cfg.Activity,
		Source: cfg.source,
		Sender: func(relay throttle.Sender) throttle.Sender {
			if sender.next == nil {
				sender.next = relay
			}
			return sender
		},
		OnThrottle: func(_ netip.AddrPort, requested float64, total int64, at time.Time) {
			a.set(int64(requested/8), total, at)
		},
		// The per-interval row: what the loop measured and decided, what
		// the viewer asks for and what the region applies.
		AfterTick: func(tick scenario.RigTick) {
			if len(rows) == intervals {
				return
			}
			for _, r := range tick.Sent {
				bps := r.Total.BitsPerSecond()
				lastRequest = &bps
			}
			row := Row{T: tick.Now.Sub(start).Seconds(), FairgridRequestBPS: lastRequest, ViewerRequestBPS: tick.ViewerRequestBPS, FairBPS: tickFair(loop, tick)}
			if st := tick.Circuit; tick.Measured {
				row.RateBPS, row.LossEventRate = st.ReceiveRate.BitsPerSecond(), st.LossEventRate
				if st.RTTSamples > 0 {
					ms := float64(st.SRTT) / float64(time.Millisecond)
					row.RTTms = &ms
				}
			}
			a.mu.Lock()
			row.AppliedBPS = float64(a.total) * 8
			a.mu.Unlock()
			rows = append(rows, row)
			if onRow != nil {
				onRow(row)
			}
			if len(rows) == intervals {
				close(lastRow)
			}
		}}
	if cfg.Live {
		// The daemon's production path: what a capture on the viewer's
		// host sees, and raw sockets as the viewer.
		fairgrid.Source = func(relay netip.AddrPort) (sidecar.Source, error) {
			return capture.OpenLive("lo", capture.Ports{{Lo: relay.Port(), Hi: relay.Port()}})
		}
		raw, err := sidecar.NewRawSender()
		if err != nil {
			return Summary{}, err
		}
		defer raw.Close()
		sender.next = raw
	}

	var g group.Group
	fairgridRig, err := scenario.NewRig(ctx, rigConfig(fairgrid), log)
	if err != nil {
		return Summary{}, err
	}
	defer fairgridRig.Close()
	fairgridRig.AddTo(&g)
	var stockRig *scenario.Rig
	if !cfg.Alone {
		// The stock viewer's run beside this one: the same link and
		// download, measured over the same last half.
		// Its loop is fairgrid's controller, measuring and sending
		// nothing, so that both sides' fair shares stand on one model.
		stockLoop, err := throttle.New(cfg.Loop, log)
		if err != nil {
			return Summary{}, err
		}
		stock := &scenario.RigViewer{Mode: scenario.Stock, Loop: stockLoop, Throttle: cfg.ViewerThrottle, Activity: cfg.Activity,
			AfterTick: func(tick scenario.RigTick) {
				if len(stockFair) < intervals {
					stockFair = append(stockFair, tickFair(stockLoop, tick))
				}
				if cfg.afterStockTick != nil {
					cfg.afterStockTick(tick)
				}
			}}
		if stockRig, err = scenario.NewRig(ctx, rigConfig(stock), log); err != nil {
			return Summary{}, err
		}
		defer stockRig.Close()
		stockRig.AddTo(&g)
	}
	var gatewayRig *gatewaylab.ArmRig
	if cfg.withGateway() {
		// The stock viewer through fairgrid's gateway, the lab's gateway
		// arm on its own copy of the link: no sidecar at the viewer, but a
		// loop of the same controller measuring at its host and sending
		// nothing, for the fair share on one model.
		gatewayLoop, err := throttle.New(cfg.Loop, log)
		if err != nil {
			return Summary{}, err
		}
		observe := &gatewaylab.Observer{Loop: gatewayLoop, AfterTick: func(now time.Time, st ratecalc.Stats, measured bool) {
			if len(gatewayFair) < intervals {
				gatewayFair = append(gatewayFair, tickFair(gatewayLoop, scenario.RigTick{Now: now, Circuit: st, Measured: measured}))
			}
		}}
		if gatewayRig, err = gatewaylab.NewArmRig(cfg.gatewayConfig(interval), gatewaylab.Gateway, observe, log.With("rig", "gateway")); err != nil {
			return Summary{}, err
		}
		defer gatewayRig.Close()
		gatewayRig.AddTo(&g)
	}
	g.Add(func(ctx context.Context) error {
		select {
		case <-lastRow:
		case <-ctx.Done():
		}
		return nil
	}, nil)
	start = time.Now()
	if err := g.Run(ctx); err != nil {
		return Summary{}, err
	}

	sum := summarize(rows, loop, a, sender, interval)
	sum.FairModel, sum.Segment = fairModel(loop.Config().Controller), loop.Config().Segment
	sum.Intervals, sum.Interrupted = len(rows), ctx.Err() != nil
	sum.IntervalSeconds = interval.Seconds()
	sum.Settled = len(rows) >= MinSettledIntervals
	if cfg.Alone {
		return sum, nil
	}
	fm, ferr := fairgridRig.Measurement()
	sm, serr := stockRig.Measurement()
	var gm gatewaylab.ArmResult
	var gerr error
	if gatewayRig != nil {
		gm, gerr = gatewayRig.Result()
	}
	if ferr != nil || serr != nil || gerr != nil {
		if sum.Interrupted {
			// Stopped before the measured half began: no comparison.
			return sum, nil
		}
		return Summary{}, fmt.Errorf("the comparison: %w", errors.Join(ferr, serr, gerr))
	}
	// The rigs measure from the judged half's first interval on: both
	// fair shares are the mean over its decisions (the last half of the
	// rows, unless interrupted).
	judged := intervals / 2
	fairgridFair := make([]*float64, len(rows))
	for i, r := range rows {
		fairgridFair[i] = r.FairBPS
	}
	sum.Fairgrid = side(fm, meanFair(fairgridFair, judged))
	sum.Stock = side(sm, meanFair(stockFair, judged))
	if gatewayRig != nil {
		sum.Gateway = gatewaySide(gm, meanFair(gatewayFair, judged))
	}
	return sum, nil
}

// tickFair is the TCP-fair rate at one of loop's decisions, by the model
// its controller follows (fairRate); nil until it has one.
func tickFair(loop *throttle.Loop, tick scenario.RigTick) *float64 {
	fair, ok := fairRate(loop.Config().Controller, tick.Circuit)
	if !tick.Measured || !ok {
		return nil
	}
	f := fair.BitsPerSecond()
	return &f
}

// meanFair is the mean of the fair rates from the decision judged on; 0
// when there is none.
func meanFair(fairs []*float64, judged int) float64 {
	var sum float64
	n := 0
	for _, f := range fairs[min(judged, len(fairs)):] {
		if f != nil {
			sum += *f
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// side is one rig's viewer and download over its measured half, against
// the viewer's TCP-fair rate fair.
func side(m scenario.Measurement, fair float64) *Side {
	v := m.Viewer.Down
	s := &Side{ViewerBPS: v.ThroughputBPS, QueueDelayMeanMs: v.QueueDelayMeanMs, QueueDelayP95Ms: v.QueueDelayP95Ms, FairBPS: fair}
	if len(m.TCP) > 0 {
		s.DownloadBPS = m.TCP[0].Data.ThroughputBPS
	}
	if s.DownloadBPS > 0 {
		s.ViewerOverDownload = s.ViewerBPS / s.DownloadBPS
	}
	return s
}

// gatewaySide is the gateway rig's viewer and download over its measured
// half, on the wire as side's, against the viewer's TCP-fair rate fair.
func gatewaySide(r gatewaylab.ArmResult, fair float64) *Side {
	return &Side{DownloadBPS: r.DownloadWireBPS, ViewerBPS: r.ViewerBPS, ViewerOverDownload: r.ViewerOverDownload,
		QueueDelayMeanMs: r.QueueDelayMeanMs, QueueDelayP95Ms: r.QueueDelayP95Ms, FairBPS: fair}
}

// fairModel is the TCP model a controller follows (congestion.md §6.7):
// window tracking emulates Reno, whose rate is Mathis's; the virtual TCP
// stands on the TFRC equation at its loss event rate per 1,460-byte
// segment (its heavy-loss cap); TFRC and the viewer rule on the equation
// at the per-packet rate.
func fairModel(controller throttle.ControllerName) string {
	switch controller {
	case throttle.Window:
		return "mathis"
	case "", throttle.VirtualTCP:
		return "tfrc per segment"
	}
	return "tfrc"
}

// fairRate is the TCP-fair rate by the controller's model, with the s its
// rate stands on (st.FairSegmentSize: the mean payload or the nominal);
// false while the model's loss event rate is 0: before the first loss, and
// for the virtual TCP until a loss event per segment has closed (it counts
// later than per packet), where the equation would stand on its clamp
// (hundreds of Mbit/s in a demo's first row).
func fairRate(controller throttle.ControllerName, st ratecalc.Stats) (ratecalc.Rate, bool) {
	switch fairModel(controller) {
	case "mathis":
		return ratecalc.MathisRate(st.FairSegmentSize, st.SRTT, st.LossEventRate), st.LossEventRate > 0
	case "tfrc per segment":
		return ratecalc.TFRCRate(ratecalc.NominalSegmentSize, st.SRTT, st.SegmentLossEventRate), st.SegmentLossEventRate > 0
	}
	return ratecalc.TFRCRate(st.FairSegmentSize, st.SRTT, st.LossEventRate), st.LossEventRate > 0
}

// summarize compares the last half of the run with the TCP-fair rate.
func summarize(rows []Row, loop *throttle.Loop, a *applied, s *recordingSender, interval time.Duration) Summary {
	st := loop.Stats()
	sum := Summary{Summary: true, Requests: st.Requests, Reasserts: st.Reasserts}
	var rate, fair, viewerReq float64
	n := 0
	for _, r := range rows[len(rows)/2:] {
		if r.FairBPS == nil {
			continue
		}
		rate += r.RateBPS
		fair += *r.FairBPS
		viewerReq += r.ViewerRequestBPS
		n++
	}
	if n > 0 && fair > 0 {
		sum.MeanRateBPS, sum.MeanFairBPS = rate/float64(n), fair/float64(n)
		sum.RatioToFair = rate / fair
		sum.ViewerRatioToFair = viewerReq / fair
	} else if half := rows[len(rows)/2:]; len(half) > 0 {
		// No loss measured, so no fair rate: what the viewer received is
		// still worth saying.
		for _, r := range half {
			sum.MeanRateBPS += r.RateBPS / float64(len(half))
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	sum.MaxOverrideMs = float64(a.maxOver) / float64(time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.sent {
		for _, e := range a.events {
			if e.at.Before(r.at) || !near(map[int64]bool{r.total: true}, e.total) {
				continue
			}
			sum.MaxFollowIntervals = max(sum.MaxFollowIntervals, int(e.at.Sub(r.at)/interval)+1)
			break
		}
	}
	return sum
}

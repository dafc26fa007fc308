// Package demo runs fairgrid's embedded default: a test region, a link
// emulator and a stock viewer in one process, with the sidecar's control
// loop reading the viewer's traffic from the emulator's tap and sending its
// AgentThrottle through the emulator instead of a raw socket. It needs no
// root and no network, and otherwise runs the same loop as the daemon.
//
// The demo is a view of the fairness rig (internal/lab/fairness): one
// cell with the sidecar in the viewer's seat (internal/lab/demand's Seat:
// `fairgrid sim`'s region, the link on a shared bottleneck, the lab's
// stock viewer, fairgrid's loop), beside a bulk TCP download (gVisor's
// userspace CUBIC, Linux's default); a second cell runs beside it with
// the stock viewer alone, and a third with the stock viewer reaching the
// region through fairgrid's gateway instead of the sidecar, so that the
// demo ends with whom the stock viewer hurts and what each side of
// fairgrid changes: the download's throughput, the viewer's received rate
// and queueing delay, and its share beside the download, for each. A run
// too short for the controller (MinSettledIntervals) says so instead of
// judging.
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
	"github.com/fairgrid/fairgrid/internal/lab/demand"
	"github.com/fairgrid/fairgrid/internal/lab/fairness"
	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/internal/lab/viewer"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/sidecar"
)

// Config describes the demo. Zero fields take the defaults named;
// Validate says which values it refuses, and Run refuses them too.
type Config struct {
	// Link is the emulated link: its rate, one-way delay and buffer each
	// way, and its random loss towards the viewer (the fairness rig's
	// cell: it refuses an unlimited rate, a delay under half a millisecond
	// and bursts of loss). A zero Link is DefaultLink; any other is taken
	// as it is, so a lossless link can be asked for.
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
	// 1024 bit/s, in place of the fairness rig's SeatAsks: the classic
	// viewer's); the viewer follows the stock ±10 % rule from it.
	ViewerThrottle ratecalc.Rate
	Seed           uint64
	// Live runs the daemon's production path instead of the in-process
	// tap: fairgrid captures the viewer's datagrams on lo through AF_PACKET
	// and sends with raw sockets as the viewer. It needs CAP_NET_RAW.
	Live bool
	// Alone leaves the viewer alone on its link: no TCP download beside
	// it, and no stock run to compare with. A run shorter than
	// MinCompareDuration is alone whatever Alone says.
	Alone bool
	// NoGateway leaves the gateway's cell out of the comparison: the
	// stock viewer through fairgrid's gateway, a third region, download
	// and link beside the other two, whose cost on a loaded machine may be
	// more than its row is worth.
	NoGateway bool

	// source, if set, opens the sidecar's source in place of the rig's
	// tap (demand.Config.Source): the tests' failing source.
	source func(relay netip.AddrPort) (sidecar.Source, error)
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
	c.Seed = cmp.Or(c.Seed, 1)
	return c
}

// Validate reports what Run would refuse: a link the emulator or the
// fairness rig refuses, a loop configuration throttle.New refuses, and a
// run shorter than two intervals, whose verdict would judge nothing.
func (c Config) Validate() error {
	c = c.withDefaults()
	_, err := c.loop(nil)
	return err
}

// withGateway says whether the run has the gateway's cell.
func (c Config) withGateway() bool {
	return !c.NoGateway && !c.Alone && c.Duration >= MinCompareDuration
}

// cell is the fairness rig's cell with seat in the viewer's seat, on the
// demo's link, beside a CUBIC download of gVisor's unless alone.
func (c Config) cell(seat demand.FrontEnd, alone bool) fairness.Cell {
	cell := fairness.Cell{Product: seat, Buffer: cmp.Or(c.Link.Buffer, link.DefaultBuffer), Loss: c.Link.Loss,
		RTTms: 2 * float64(c.Link.Delay) / float64(time.Millisecond), LinkBPS: float64(c.Link.Rate) * 8}
	if !alone {
		cell.TCP, cell.Flows = fairness.GVisorCUBIC, 1
	}
	return cell
}

// measured is the cells' warm-up and measured duration: the last half of
// the run's whole intervals, and half an interval more. The run ends
// after its last whole interval's row; the cells' end, half an interval
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
	switch l := c.Link; {
	case l.Rate == 0:
		return nil, errors.New("link: an unlimited rate: the fairness rig the demo runs on wants 64 kbit/s to 1 Gbit/s")
	case l.Delay < 500*time.Microsecond:
		return nil, fmt.Errorf("link: delay %v: the fairness rig the demo runs on wants 0.5 ms one way or more", l.Delay)
	case l.BurstLen > 1 || l.BufferBytes != 0:
		return nil, fmt.Errorf("link: burst length %v, buffer %d bytes: the fairness rig's link has independent losses and a buffer in datagrams", l.BurstLen, l.BufferBytes)
	}
	if err := c.cell(demand.Sidecar, c.Alone).Validate(); err != nil {
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
	// Summary.Segment names: the mean over the decisions of the measured
	// half; 0 without loss. The fairgrid side's only: nothing of fairgrid
	// measures the stock viewer's circuit at its host.
	FairBPS float64 `json:"fair_bps,omitempty"`
	// ViewerOverDownload is ViewerBPS ÷ DownloadBPS: the promise, measured
	// (TCP-fair means one share: 0.8–1.25); 0 when the download moved
	// nothing.
	ViewerOverDownload float64 `json:"viewer_over_download"`
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
// The demo is cells of the fairness rig (fairness.Run), run at once: the
// sidecar's seat and, unless Alone, the stock viewer's and (unless
// NoGateway) the gateway's, each beside a CUBIC download on its own copy
// of the link. The sidecar's last row ends them all, and so does the
// first failure of any, which is what Run returns.
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

	a := &applied{ours: map[int64]bool{}}
	sender := &recordingSender{a: a}
	if cfg.Live {
		raw, err := sidecar.NewRawSender()
		if err != nil {
			return Summary{}, err
		}
		defer raw.Close()
		sender.next = raw
	}
	var (
		start       time.Time
		seat        *demand.Seat // the sidecar's
		rows        []Row
		lastRequest *float64
		lastRow     = make(chan struct{})
	)
	// The per-interval row: what the loop measured and decided, what the
	// viewer asks for and what the region applies.
	afterTick := func(now time.Time, sent []throttle.Request) {
		if len(rows) == intervals {
			return
		}
		for _, r := range sent {
			bps := r.Total.BitsPerSecond()
			lastRequest = &bps
		}
		st, measured := circuitStats(seat.Loop())
		row := Row{T: now.Sub(start).Seconds(), FairgridRequestBPS: lastRequest, ViewerRequestBPS: seat.Report().ThrottleBPS,
			FairBPS: tickFair(loop, st, measured)}
		if measured {
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
	}
	options := func(fe demand.FrontEnd) fairness.Options {
		return fairness.Options{Warmup: warmup, Duration: measured, Interval: interval, Seed: cfg.Seed, Log: log.With("seat", fe),
			SeatConfig: func(dc *demand.Config) {
				dc.ViewerAsks, dc.Throttle = cfg.ViewerThrottle, cfg.Loop
				if fe != demand.Sidecar {
					return
				}
				dc.AfterTick = afterTick
				dc.OnThrottle = func(_ netip.AddrPort, requested float64, total int64, at time.Time) {
					a.set(int64(requested/8), total, at)
				}
				dc.WrapSender = func(relay throttle.Sender) throttle.Sender {
					if sender.next == nil {
						sender.next = relay
					}
					return sender
				}
				dc.Source = cfg.source
				if cfg.Live {
					// The daemon's production path: what a capture on the
					// viewer's host sees, and raw sockets as the viewer.
					dc.Source = func(relay netip.AddrPort) (sidecar.Source, error) {
						return capture.OpenLive("lo", capture.Ports{{Lo: relay.Port(), Hi: relay.Port()}})
					}
				}
			},
			OnSeat: func(s *demand.Seat) {
				if fe == demand.Sidecar {
					seat = s
				}
			}}
	}
	seats := []demand.FrontEnd{demand.Sidecar}
	if !cfg.Alone {
		seats = append(seats, demand.Stock)
	}
	if cfg.withGateway() {
		seats = append(seats, demand.Gateway)
	}
	results, err := runCells(ctx, cfg, seats, options, lastRow, &start)
	if err != nil {
		return Summary{}, err
	}
	if seat == nil {
		return Summary{}, fmt.Errorf("the sidecar's seat was never built: %w", results[0].err)
	}

	sum := summarize(rows, seat.Loop(), a, sender, interval)
	sum.FairModel, sum.Segment = fairModel(loop.Config().Controller), loop.Config().Segment
	sum.Intervals, sum.Interrupted = len(rows), ctx.Err() != nil
	sum.IntervalSeconds = interval.Seconds()
	sum.Settled = len(rows) >= MinSettledIntervals
	if cfg.Alone {
		return sum, nil
	}
	var errs []error
	for _, r := range results {
		errs = append(errs, r.err)
	}
	if err := errors.Join(errs...); err != nil {
		if sum.Interrupted {
			// Stopped before the measured half began: no comparison.
			return sum, nil
		}
		return Summary{}, fmt.Errorf("the comparison: %w", err)
	}
	// The cells measure from the judged half's first interval on: the
	// fair share is the mean over its decisions (the last half of the
	// rows, unless interrupted).
	fairs := make([]*float64, len(rows))
	for i, r := range rows {
		fairs[i] = r.FairBPS
	}
	sum.Fairgrid = side(results[0].Result, meanFair(fairs, intervals/2))
	sum.Stock = side(results[1].Result, 0)
	if len(results) > 2 {
		sum.Gateway = side(results[2].Result, 0)
	}
	return sum, nil
}

// cellResult is one cell's run.
type cellResult struct {
	fairness.Result
	err error
}

// runCells runs a cell for each seat at once, setting *start as they
// start, until the last row or the first failure ends them all: a cell
// that fails while the others run is what runCells returns; what the
// others return once ended (a result over what ran after the warm-up, or
// an error before it) is each seat's cellResult.
func runCells(ctx context.Context, cfg Config, seats []demand.FrontEnd, options func(demand.FrontEnd) fairness.Options,
	lastRow <-chan struct{}, start *time.Time) ([]cellResult, error) {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]cellResult, len(seats))
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	*start = time.Now()
	for i, fe := range seats {
		wg.Go(func() {
			r, err := fairness.Run(runCtx, cfg.cell(fe, cfg.Alone), options(fe))
			results[i] = cellResult{r, err}
			mu.Lock()
			if err != nil && first == nil && runCtx.Err() == nil {
				first = err
			}
			mu.Unlock()
			cancel()
		})
	}
	wg.Go(func() {
		select {
		case <-lastRow:
		case <-runCtx.Done():
		}
		cancel()
	})
	wg.Wait()
	return results, first
}

// circuitStats is what loop measured of its circuit (the demo's one),
// and whether it has measured it yet.
func circuitStats(loop *throttle.Loop) (ratecalc.Stats, bool) {
	if keys := loop.Keys(); len(keys) > 0 {
		_, st, measured := loop.Circuit(keys[0])
		return st, measured
	}
	return ratecalc.Stats{}, false
}

// tickFair is the TCP-fair rate at one of loop's decisions, by the model
// its controller follows (fairRate); nil until it has one.
func tickFair(loop *throttle.Loop, st ratecalc.Stats, measured bool) *float64 {
	fair, ok := fairRate(loop.Config().Controller, st)
	if !measured || !ok {
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

// side is one cell's viewer and download over its measured half, both on
// the wire, against the viewer's TCP-fair rate fair.
func side(r fairness.Result, fair float64) *Side {
	s := &Side{DownloadBPS: r.MeanTCP(), ViewerBPS: r.MeanViewer(), QueueDelayMeanMs: r.SeatQueueDelayMeanMs, QueueDelayP95Ms: r.SeatQueueDelayP95Ms, FairBPS: fair}
	if s.DownloadBPS > 0 {
		s.ViewerOverDownload = s.ViewerBPS / s.DownloadBPS
	}
	return s
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

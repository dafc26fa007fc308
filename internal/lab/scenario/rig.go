package scenario

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/kerneltcp"
	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/internal/lab/tcpflow"
	"github.com/fairgrid/fairgrid/internal/lab/viewer"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/group"
	"github.com/fairgrid/fairgrid/throttle/sidecar"
)

// ViewerMode is who sets the viewer's throttle.
type ViewerMode string

const (
	// Stock is the viewer alone: it asks for 1,500 kbps and follows its
	// ±10 % rule. fairgrid measures the circuit and sends nothing.
	Stock ViewerMode = "stock"
	// Window is fairgrid's window tracking (the thesis's Mongoose client).
	Window ViewerMode = "window"
	// TFRC is fairgrid's RFC 5348 controller.
	TFRC ViewerMode = "tfrc"
)

// NominalSegment is the segment size TFRC-SP takes for a small-packet flow
// (RFC 4828 §3: 1460 bytes), and the one the literature's bulk TCP flows
// send (Ethernet's MSS, RFC 894).
const NominalSegment = ratecalc.NominalSegmentSize

// RigViewer puts an LLUDP viewer and a region on the bottleneck.
type RigViewer struct {
	Mode ViewerMode
	// Interval is fairgrid's decision interval (default 5 s, the
	// viewer's and the thesis's).
	Interval time.Duration
	// Floor is fairgrid's guaranteed minimum (QoS); 0 is none.
	Floor ratecalc.Rate
	// Throttle is what the stock viewer starts asking for (default its
	// 1,500 kbps).
	Throttle ratecalc.Rate
	// Activity is the region's load (default flying: every channel busy).
	Activity region.Activity
	// Segment is the s fairgrid's rate stands on, its control.segment:
	// SegmentMean (the mean payload) or SegmentNominal (1460 B, TFRC-SP's);
	// empty is throttle's default.
	Segment string

	// What a front-end beside the lab's figures needs (the demo): each is
	// optional, and a rig without them is the lab's.

	// Loop, if set, is fairgrid's loop as the caller built it, in place of
	// the one Mode, Interval, Floor and Segment describe (which must then
	// be zero: Mode only names the viewer in the result, and a Stock
	// viewer's loop measures and sends nothing, as a Stock rig's own). The
	// demo measures its stock viewer with the controller it compares.
	Loop *throttle.Loop
	// Source, if set, opens the sidecar's source in place of the relay's
	// tap, given where the viewer sends (the relay's address): the demo's
	// live mode captures there, as the daemon does.
	Source func(relay netip.AddrPort) (sidecar.Source, error)
	// Sender, if set, wraps the sender fairgrid's requests leave by
	// (across the bottleneck as the viewer), or replaces it (raw sockets).
	Sender func(throttle.Sender) throttle.Sender
	// OnThrottle, if set, sees each AgentThrottle the region applies
	// (region.Config.OnThrottle).
	OnThrottle func(viewer netip.AddrPort, requestedBPS float64, applied int64, at time.Time)
	// AfterTick, if set, is called after each of the loop's decisions,
	// after the rig has recorded it.
	AfterTick func(RigTick)
}

// RigTick is one decision of a rig's loop, as RigViewer.AfterTick sees it.
type RigTick struct {
	Now time.Time
	// Sent is what the loop sent (nothing in Stock mode).
	Sent []throttle.Request
	// Circuit is the viewer's circuit as the loop measured it; Measured
	// is false before its first datagram.
	Circuit  ratecalc.Stats
	Measured bool
	// ViewerRequestBPS is what the viewer itself asks for now, in bit/s:
	// the stock ±10 % rule's current request.
	ViewerRequestBPS float64
}

// The segment choices of RigViewer.Segment: throttle's, as
// control.segment and fairgrid audit's --segment name them.
const (
	SegmentMean    = string(throttle.SegmentMean)
	SegmentNominal = string(throttle.SegmentNominal)
)

// RigConfig describes one run on a shared bottleneck.
type RigConfig struct {
	Up, Down link.PipeConfig
	Seed     uint64
	TCP      []tcpflow.FlowConfig
	// Kernel are bulk flows of Linux's own TCP (reno, cubic, bbr) in
	// network namespaces joined to the bottleneck through TUN devices
	// (kerneltcp; root only). Their Warmup and Duration are the run's.
	// Measurement.TCP lists them after the gVisor flows.
	Kernel []kerneltcp.FlowConfig
	Viewer *RigViewer // nil: TCP only
	// Warmup is left out of the measurement: slow start, the viewer's
	// login and its first intervals.
	Warmup, Duration time.Duration
	// Tap, if set, sees every packet the bottleneck handles (captures).
	Tap func(link.Event)
	// ViewerTap, if set, sees the viewer's datagrams as its host does
	// (for the audit's report); it must not block.
	ViewerTap func(lludp.Datagram)
}

// FlowResult is one flow through one direction of the bottleneck over the
// measured part of a run.
type FlowResult struct {
	Name string `json:"name"`
	Dir  string `json:"dir"`
	// ThroughputBPS is what reached the far end, in bits/s on the wire.
	ThroughputBPS    float64 `json:"throughput_bps"`
	QueueDelayMeanMs float64 `json:"queue_delay_mean_ms"`
	QueueDelayP95Ms  float64 `json:"queue_delay_p95_ms"`
	Arrived          uint64  `json:"arrived"`
	Dropped          uint64  `json:"dropped"`
}

func flowResult(r link.FlowReport) FlowResult {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return FlowResult{Name: r.Name, Dir: r.Dir.String(), ThroughputBPS: r.Throughput() * 8,
		QueueDelayMeanMs: ms(r.QueueDelay.Mean()), QueueDelayP95Ms: ms(r.QueueDelay.Quantile(0.95)),
		Arrived: r.Arrived, Dropped: r.Dropped()}
}

// TCPResult is one TCP flow's data direction.
type TCPResult struct {
	Name string `json:"name"`
	CC   string `json:"cc"`
	// GoodputBPS is what the receiving application read, in bits/s.
	GoodputBPS float64    `json:"goodput_bps"`
	Data       FlowResult `json:"data"`
	// Other is the flow's packets the other way: a bulk flow's ACKs, an
	// application-limited flow's client→server updates and ACKs, whose
	// goodput GoodputUpBPS is (0 for a bulk flow).
	Other        FlowResult `json:"other"`
	GoodputUpBPS float64    `json:"goodput_up_bps,omitempty"`
}

// ViewerResult is the viewer's circuit.
type ViewerResult struct {
	Mode ViewerMode `json:"mode"`
	// Down and Up are its datagrams through the bottleneck.
	Down FlowResult `json:"down"`
	Up   FlowResult `json:"up"`
	// The circuit as fairgrid measured it (mean over the decisions after
	// the warm-up): loss event rate, RTT, mean payload.
	LossEventRate float64 `json:"loss_event_rate"`
	RTTms         float64 `json:"rtt_ms"`
	SegmentBytes  float64 `json:"segment_bytes"`
	// FairMeanBPS and FairNominalBPS are the Mathis (Reno) rate at that
	// loss and RTT with s the mean payload and with s = 1460 B; 0 before
	// any loss.
	FairMeanBPS    float64 `json:"fair_mean_bps"`
	FairNominalBPS float64 `json:"fair_nominal_bps"`
	// FairTFRCBPS is the TFRC equation (RFC 5348 §3.1) at the same p, RTT
	// and mean s: the rate the TFRC controller aims at.
	FairTFRCBPS float64 `json:"fair_tfrc_bps"`
	Requests    uint64  `json:"requests"`
	// PerSecondBPS is what the viewer received in each second of the
	// measured part, on the wire.
	PerSecondBPS []float64 `json:"per_second_bps"`
	// PerSecondPayloadBPS is the same without the 28 bytes of IPv4 and
	// UDP each datagram carries on the wire: the LLUDP bytes the region's
	// throttle counts and the fair rate's s measures.
	PerSecondPayloadBPS []float64 `json:"per_second_payload_bps,omitempty"`
	// PayloadBPS is Down's throughput in the same bytes, over the
	// measured part.
	PayloadBPS float64 `json:"payload_bps,omitempty"`
	// AskedBPS is the throttle the region was asked for (each
	// AgentThrottle's total, the viewer's own or fairgrid's, as sent),
	// time-weighted over the measured part; 0 if none was asked.
	AskedBPS float64 `json:"asked_bps,omitempty"`
	// AppliedBPS is what the region set for those throttles (its
	// channels' rates summed, each raised to its minimum or cut to its
	// maximum), time-weighted the same way, in bits/s.
	AppliedBPS float64 `json:"applied_bps,omitempty"`
	// Ticks are fairgrid's decisions, from the first with the circuit
	// measured, warm-up included.
	Ticks []ViewerTick `json:"ticks,omitempty"`
}

// ViewerTick is one decision of fairgrid's loop: the circuit as measured
// then, the fair rate by the run's model (fairFor's), and the throttle the
// client had calculated: fairgrid's latest request in its modes, the
// stock viewer's own ±10 % rule's in Stock.
type ViewerTick struct {
	// Seconds since the first decision.
	Seconds       float64 `json:"s"`
	Measured      bool    `json:"measured,omitempty"` // after the warm-up
	LossEventRate float64 `json:"p"`
	FairBPS       float64 `json:"fair_bps"`
	ThrottleBPS   float64 `json:"throttle_bps"`
}

// Measurement is a run's result.
type Measurement struct {
	Seconds float64       `json:"seconds"`
	Viewer  *ViewerResult `json:"viewer,omitempty"`
	TCP     []TCPResult   `json:"tcp"`
	Up      FlowResult    `json:"up"`
	Down    FlowResult    `json:"down"`
	// Branches are multiplexing's two branches (delayed, plain).
	Branches []BranchResult        `json:"branches,omitempty"`
	Stacks   [2]tcpflow.StackStats `json:"-"`
}

// loopTickStats is fairgrid's view of the circuit after one decision.
type loopTickStats struct {
	at time.Time
	st ratecalc.Stats
	// throttle is what the client had calculated by then, bits/s.
	throttle float64
}

// askedAt is an AgentThrottle the region applied: its total as sent.
type askedAt struct {
	at  time.Time
	bps float64
}

// discard is the stock runs' sender: fairgrid measures and sends nothing.
type discard struct{}

func (discard) Send(context.Context, throttle.Request) error { return nil }

// relaySender sends fairgrid's AgentThrottle from the viewer's host,
// across the bottleneck.
type relaySender struct{ r *link.Relay }

func (s relaySender) Send(_ context.Context, req throttle.Request) error {
	b, err := req.Encode()
	if err != nil {
		return err
	}
	s.r.InjectUp(req.Circuit.Viewer, b)
	return nil
}

// tapBuffer holds a few seconds of the viewer's datagrams (a few hundred
// a second) in case the sidecar is descheduled.
const tapBuffer = 4096

// RunRig runs cfg for Warmup+Duration and measures the part after the
// warm-up. The bottleneck, the TCP stacks, the kernel's flows, and the
// region, relay, viewer and sidecar run as one group.Group: the first
// failure ends the run and is what RunRig returns, joined with the
// kernel lab's failure to remove its namespaces (Close).
func RunRig(ctx context.Context, cfg RigConfig, log *slog.Logger) (m Measurement, err error) {
	r, err := NewRig(ctx, cfg, log)
	if err != nil {
		return Measurement{}, err
	}
	defer func() {
		if cerr := r.Close(); cerr != nil {
			m, err = Measurement{}, errors.Join(err, cerr)
		}
	}()
	var g group.Group
	r.AddTo(&g)
	if err := g.Run(ctx); err != nil {
		return Measurement{}, err
	}
	return r.Measurement()
}

// Rig is one run of a RigConfig whose members run in the caller's
// group.Group, beside whatever else the caller runs (the demo runs two
// rigs and ends them at its last row): NewRig builds it, AddTo adds its
// members, Measurement reads the measured part once the group has
// returned, and Close releases what it holds.
//
// The rig's measuring member returns at Warmup+Duration, which ends the
// group; a group ended earlier after the warm-up (by the caller's context
// or by another member) leaves what was measured until then.
type Rig struct {
	cfg     RigConfig
	log     *slog.Logger
	b       *link.Bottleneck
	tcpNet  *tcpflow.Net
	kernel  *kerneltcp.Lab
	flows   []*tcpflow.Flow
	vr      *viewerRig
	members group.Group
	// release closes what NewRig acquired, last first (each member's
	// Close, idempotent, whether its Run ran or not).
	release []func() error

	// Written by the measuring member, read after the group returned.
	first, last    link.BottleneckStats
	read0, up0     []uint64
	readEnd, upEnd []uint64
	perSecond      []float64
	// perSecondPayload is perSecond without IPv4 and UDP's 28 bytes a
	// datagram.
	perSecondPayload []float64
	kernelResults    kernelResult
	measured         bool
	measureErr       error
	kernelDone       chan kernelResult
}

// NewRig builds cfg's rig: it binds its sockets and opens its namespaces,
// and starts nothing. ctx bounds the kernel flows' set-up.
func NewRig(ctx context.Context, cfg RigConfig, log *slog.Logger) (*Rig, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Duration <= 0 || cfg.Warmup < 0 {
		return nil, fmt.Errorf("scenario: duration %v, warm-up %v: want a positive duration", cfg.Duration, cfg.Warmup)
	}
	r := &Rig{cfg: cfg, log: log, kernelDone: make(chan kernelResult, 1)}
	var err error
	if r.b, err = link.NewBottleneck(link.BottleneckConfig{Up: cfg.Up, Down: cfg.Down, Seed: cfg.Seed, Tap: cfg.Tap}, log); err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	if r.tcpNet, err = tcpflow.New(r.b, tcpflow.Config{Seed: cfg.Seed}, log); err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	r.flows = make([]*tcpflow.Flow, len(cfg.TCP))
	for i, fc := range cfg.TCP {
		if r.flows[i], err = r.tcpNet.AddFlow(fc); err != nil {
			return nil, errors.Join(fmt.Errorf("scenario: %w", err), r.Close())
		}
	}
	n := len(r.flows)
	r.read0, r.up0, r.readEnd, r.upEnd = make([]uint64, n), make([]uint64, n), make([]uint64, n), make([]uint64, n)
	r.members.Add(r.b.Run, nil)
	if len(r.flows) > 0 {
		// Without flows the stacks' Run has nothing to run and returns at
		// once, which would end the group.
		r.members.Add(r.tcpNet.Run, nil)
	}

	// The kernel's flows measure themselves over the warm-up and the
	// duration; the measurement below waits for them.
	if len(cfg.Kernel) > 0 {
		if r.kernel, err = kerneltcp.New(ctx, kerneltcp.Config{Bottleneck: r.b, Name: "linux"}, log); err != nil {
			return nil, errors.Join(fmt.Errorf("scenario: %w", err), r.Close())
		}
		r.members.Add(r.kernel.Run, nil)
		r.members.Add(func(ctx context.Context) error {
			k := runKernelFlows(ctx, r.kernel, cfg)
			r.kernelDone <- k
			if k.err != nil {
				return k.err
			}
			<-ctx.Done()
			return nil
		}, nil)
	} else {
		r.kernelDone <- kernelResult{}
	}
	if cfg.Viewer != nil {
		if r.vr, r.release, err = addViewer(&r.members, r.b, *cfg.Viewer, cfg.Warmup, cfg.ViewerTap, log); err != nil {
			return nil, errors.Join(err, r.Close())
		}
	}
	r.members.Add(r.measure, nil)
	return r, nil
}

// AddTo adds the rig's members to g; a rig runs in one group, once.
func (r *Rig) AddTo(g *group.Group) {
	g.Add(r.members.Run, nil)
}

// Close releases the rig once its group has returned, or when it never
// ran: each member's Close, then the stacks and the kernel lab's
// namespaces (which go once everything using them has stopped). It
// returns what they failed to release, and may be called more than once.
func (r *Rig) Close() error {
	errs := closeAll(r.release)
	r.release = nil
	if r.tcpNet != nil {
		r.tcpNet.Close()
	}
	if r.kernel != nil {
		errs = errors.Join(errs, r.kernel.Close())
	}
	return errs
}

// closeAll calls each release, last first, and joins their errors.
func closeAll(release []func() error) error {
	var errs []error
	for i := len(release) - 1; i >= 0; i-- {
		errs = append(errs, release[i]())
	}
	return errors.Join(errs...)
}

// measure snapshots the bottleneck at the end of the warm-up, every second
// for the viewer's per-second rate, and at the end; its return at the end
// ends the run.
func (r *Rig) measure(ctx context.Context) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	warm := time.NewTimer(r.cfg.Warmup)
	defer warm.Stop()
	end := time.NewTimer(r.cfg.Warmup + r.cfg.Duration)
	defer end.Stop()
	var prevDown, prevDatagrams uint64
	warmedUp := false
	snapshot := func(st *link.BottleneckStats, read, up []uint64) {
		*st = r.b.Stats()
		for i, f := range r.flows {
			read[i], up[i] = f.Read(dataDir(f.Config())), f.Read(link.Up)
		}
	}
	for {
		select {
		case <-ctx.Done():
			// Ended early (the caller's context, another member's failure,
			// which the group returns instead, or the caller's own end, as
			// the demo's last row): after the warm-up, what was measured so
			// far stands.
			if !warmedUp {
				r.measureErr = fmt.Errorf("scenario: %w before the warm-up ended", context.Cause(ctx))
				return nil
			}
			snapshot(&r.last, r.readEnd, r.upEnd)
			r.kernelResults = <-r.kernelDone
			r.measured = true
			return nil
		case <-end.C:
			snapshot(&r.last, r.readEnd, r.upEnd)
			select {
			case r.kernelResults = <-r.kernelDone:
			case <-ctx.Done():
				return fmt.Errorf("scenario: %w before the kernel's flows ended", context.Cause(ctx))
			}
			if !warmedUp {
				return errors.New("scenario: the run ended before its warm-up")
			}
			r.measured = true
			return nil
		case <-warm.C:
			snapshot(&r.first, r.read0, r.up0)
			if f, ok := viewerFlow(r.first, link.Down); ok {
				prevDown, prevDatagrams = f.DeliveredBytes, f.Delivered
			}
			warmedUp = true
		case <-tick.C:
			if !warmedUp {
				continue
			}
			s := r.b.Stats()
			if f, ok := viewerFlow(s, link.Down); ok {
				r.perSecond = append(r.perSecond, float64(f.DeliveredBytes-prevDown)*8)
				r.perSecondPayload = append(r.perSecondPayload, payloadBits(f.DeliveredBytes-prevDown, f.Delivered-prevDatagrams))
				prevDown, prevDatagrams = f.DeliveredBytes, f.Delivered
			}
		}
	}
}

// Measurement is the measured part of a run whose group has returned; an
// error when it ended before its warm-up did.
func (r *Rig) Measurement() (Measurement, error) {
	if r.measureErr != nil {
		return Measurement{}, r.measureErr
	}
	if !r.measured {
		return Measurement{}, errors.New("scenario: the rig has not run")
	}
	if r.vr != nil && r.vr.source != nil {
		if n := r.vr.source.Dropped(); n > 0 {
			// Each would have measured as a loss: the viewer's figures are
			// suspect.
			r.log.Warn("the sidecar fell behind the tap: datagrams not measured", "dropped", n)
		}
	}
	d := r.last.Since(r.first)
	m := Measurement{Seconds: r.last.Flows[0].At.Sub(r.first.Flows[0].At).Seconds(), Up: flowResult(link.FlowReport{Name: "all", Dir: link.Up, FlowStats: d.Up}),
		Down: flowResult(link.FlowReport{Name: "all", Dir: link.Down, FlowStats: d.Down})}
	m.Stacks[0], m.Stacks[1] = r.tcpNet.Stats()
	for i, f := range r.flows {
		fc := f.Config()
		dir := dataDir(fc)
		data, _ := d.Flow(fc.Name + " " + dir.String())
		other, _ := d.Flow(fc.Name + " " + (1 - dir).String())
		t := TCPResult{Name: fc.Name, CC: string(fc.CC), GoodputBPS: float64(r.readEnd[i]-r.read0[i]) * 8 / m.Seconds, Data: flowResult(data), Other: flowResult(other)}
		if fc.App != nil {
			t.GoodputUpBPS = float64(r.upEnd[i]-r.up0[i]) * 8 / m.Seconds
		}
		m.TCP = append(m.TCP, t)
	}
	for _, k := range r.kernelResults.results {
		data, _ := d.Flow(k.Config.Name + " data")
		acks, _ := d.Flow(k.Config.Name + " acks")
		m.TCP = append(m.TCP, TCPResult{Name: k.Config.Name, CC: "linux " + k.Congestion, GoodputBPS: k.Goodput * 8, Data: flowResult(data), Other: flowResult(acks)})
	}
	if r.vr != nil {
		m.Viewer = r.vr.result(d, r.perSecond, r.perSecondPayload, m.Seconds)
	}
	return m, nil
}

type kernelResult struct {
	results []kerneltcp.FlowResult
	err     error
}

// runKernelFlows runs cfg's kernel flows at once, each measured over the
// run's warm-up and duration, and returns them in order.
func runKernelFlows(ctx context.Context, lab *kerneltcp.Lab, cfg RigConfig) kernelResult {
	out := kernelResult{results: make([]kerneltcp.FlowResult, len(cfg.Kernel))}
	errs := make([]error, len(cfg.Kernel))
	var wg sync.WaitGroup
	for i, fc := range cfg.Kernel {
		fc.Warmup, fc.Duration = cfg.Warmup, cfg.Duration
		wg.Go(func() { out.results[i], errs[i] = lab.Flow(ctx, fc) })
	}
	wg.Wait()
	out.err = errors.Join(errs...)
	return out
}

// viewerRig is the region, the relay, the viewer and the sidecar of a run.
type viewerRig struct {
	mode    ViewerMode
	warmEnd time.Time
	loop    *throttle.Loop
	// source is the relay's tap, nil when RigViewer.Source replaced it.
	source *sidecar.PushSource
	mu     sync.Mutex
	ticks  []loopTickStats
	asked  []askedAt
	// applied is what the region set for each of asked, bits/s.
	applied []askedAt
}

// loopFor is the loop cfg describes, or the caller's.
func loopFor(cfg RigViewer, log *slog.Logger) (*throttle.Loop, error) {
	if cfg.Loop != nil {
		if cfg.Interval != 0 || cfg.Floor != 0 || cfg.Segment != "" {
			return nil, errors.New("scenario: a viewer with its own loop takes no interval, floor or segment")
		}
		return cfg.Loop, nil
	}
	interval := cfg.Interval
	if interval == 0 {
		interval = 5 * time.Second
	}
	controller := throttle.Window
	if cfg.Mode == TFRC {
		controller = throttle.TFRC
	}
	var segment throttle.Segment
	if cfg.Segment != "" {
		if err := segment.UnmarshalText([]byte(cfg.Segment)); err != nil {
			return nil, fmt.Errorf("scenario: segment %w", err)
		}
	}
	loop, err := throttle.New(throttle.Config{Controller: controller, Segment: segment, Interval: interval, Floor: cfg.Floor}, log)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return loop, nil
}

// addViewer adds the region, the relay, the viewer and the sidecar to g,
// and returns what releases them (each their Close), whether g runs or
// not. On failure, what it had bound is released already.
func addViewer(g *group.Group, b *link.Bottleneck, cfg RigViewer, warmup time.Duration, viewerTap func(lludp.Datagram), log *slog.Logger) (_ *viewerRig, release []func() error, err error) {
	defer func() {
		if err != nil {
			err = errors.Join(err, closeAll(release))
			release = nil
		}
	}()
	loop, err := loopFor(cfg, log)
	if err != nil {
		return nil, nil, err
	}
	activity := cfg.Activity
	if activity == 0 {
		activity = region.Flying
	}
	vr := &viewerRig{mode: cfg.Mode, loop: loop, warmEnd: time.Now().Add(warmup)}
	onThrottle := func(addr netip.AddrPort, requested float64, applied int64, at time.Time) {
		vr.mu.Lock()
		vr.asked = append(vr.asked, askedAt{at, requested})
		vr.applied = append(vr.applied, askedAt{at, float64(applied) * 8})
		vr.mu.Unlock()
		if cfg.OnThrottle != nil {
			cfg.OnThrottle(addr, requested, applied, at)
		}
	}
	sim, err := region.New(region.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Activity: activity, OnThrottle: onThrottle}, log)
	if err != nil {
		return nil, nil, fmt.Errorf("scenario: %w", err)
	}
	release = append(release, sim.Close)
	if cfg.Source == nil {
		vr.source = sidecar.NewChanSource(tapBuffer)
	}
	// The viewer's datagrams cross b as flows "lludp VIEWER up" and
	// "lludp VIEWER down" (viewerFlow finds them); the tap sees them as
	// the viewer's host does, and its payload is only lent.
	relay, err := link.New(link.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Upstream: sim.Addr(), Shared: b,
		Tap: func(d link.Datagram) {
			if vr.source == nil && viewerTap == nil {
				return
			}
			ld := lludp.Datagram{At: d.At, Src: d.Src, Dst: d.Dst, Payload: bytes.Clone(d.Payload)}
			if vr.source != nil {
				vr.source.Push(ld)
			}
			if viewerTap != nil {
				viewerTap(ld)
			}
		}}, log)
	if err != nil {
		return nil, release, fmt.Errorf("scenario: %w", err)
	}
	release = append(release, relay.Close)
	v, err := viewer.New(viewer.Config{Sim: relay.Addr(), Throttle: cfg.Throttle, FollowViewerRule: true, CircuitCode: 4242}, log)
	if err != nil {
		return nil, release, fmt.Errorf("scenario: %w", err)
	}
	release = append(release, v.Close)
	var source sidecar.Source = vr.source
	if cfg.Source != nil {
		if source, err = cfg.Source(relay.Addr()); err != nil {
			return nil, release, fmt.Errorf("scenario: the sidecar's source: %w", err)
		}
	}
	// The sidecar closes its source when its group stops; a sidecar that
	// never ran leaves it to the rig (sources close idempotently).
	release = append(release, source.Close)
	var sender throttle.Sender = discard{}
	if cfg.Mode != Stock {
		sender = relaySender{relay}
		if cfg.Sender != nil {
			sender = cfg.Sender(sender)
		}
	}
	sc, err := sidecar.New(sidecar.Config{Loop: loop, Source: source, Sender: sender, Log: log,
		AfterTick: func(now time.Time, sent []throttle.Request) {
			tick := RigTick{Now: now, Sent: sent}
			if keys := loop.Keys(); len(keys) > 0 {
				if _, st, ok := loop.Circuit(keys[0]); ok {
					tick.Circuit, tick.Measured = st, true
					vr.mu.Lock()
					calc := 0.0
					switch {
					case cfg.Mode == Stock:
						calc = v.Report().ThrottleBPS
					case len(sent) > 0:
						calc = sent[len(sent)-1].Total.BitsPerSecond()
					case len(vr.ticks) > 0:
						calc = vr.ticks[len(vr.ticks)-1].throttle
					}
					vr.ticks = append(vr.ticks, loopTickStats{at: now, st: st, throttle: calc})
					vr.mu.Unlock()
				}
			}
			if cfg.AfterTick != nil {
				tick.ViewerRequestBPS = v.Report().ThrottleBPS
				cfg.AfterTick(tick)
			}
		}})
	if err != nil {
		return nil, release, fmt.Errorf("scenario: %w", err)
	}
	g.Add(sim.Run, nil)
	g.Add(relay.Run, nil)
	g.Add(v.Run, nil)
	sc.AddTo(g)
	return vr, release, nil
}

func (vr *viewerRig) result(d link.BottleneckStats, perSecond, perSecondPayload []float64, seconds float64) *ViewerResult {
	r := &ViewerResult{Mode: vr.mode, PerSecondBPS: perSecond, PerSecondPayloadBPS: perSecondPayload, Requests: vr.loop.Stats().Requests}
	if f, ok := viewerFlow(d, link.Down); ok {
		r.Down = flowResult(f)
		if seconds > 0 {
			r.PayloadBPS = payloadBits(f.DeliveredBytes, f.Delivered) / seconds
		}
	}
	if f, ok := viewerFlow(d, link.Up); ok {
		r.Up = flowResult(f)
	}
	vr.mu.Lock()
	defer vr.mu.Unlock()
	measuredEnd := vr.warmEnd.Add(time.Duration(len(perSecond)) * time.Second)
	r.AskedBPS = askedMean(vr.asked, vr.warmEnd, measuredEnd)
	r.AppliedBPS = askedMean(vr.applied, vr.warmEnd, measuredEnd)
	for _, t := range vr.ticks {
		fair := 0.0
		if t.st.LossEventRate > 0 {
			fair = ratecalc.MathisRate(t.st.SegmentSize, t.st.SRTT, t.st.LossEventRate).BitsPerSecond()
			if vr.mode == TFRC {
				fair = ratecalc.TFRCRate(t.st.SegmentSize, t.st.SRTT, t.st.LossEventRate).BitsPerSecond()
			}
		}
		r.Ticks = append(r.Ticks, ViewerTick{Seconds: t.at.Sub(vr.ticks[0].at).Seconds(), Measured: !t.at.Before(vr.warmEnd),
			LossEventRate: t.st.LossEventRate, FairBPS: fair, ThrottleBPS: t.throttle})
	}
	var n float64
	for _, t := range vr.ticks {
		if t.at.Before(vr.warmEnd) || t.st.LossEventRate <= 0 {
			continue
		}
		n++
		r.LossEventRate += t.st.LossEventRate
		r.RTTms += float64(t.st.SRTT) / float64(time.Millisecond)
		r.SegmentBytes += t.st.SegmentSize
		r.FairMeanBPS += ratecalc.MathisRate(t.st.SegmentSize, t.st.SRTT, t.st.LossEventRate).BitsPerSecond()
		r.FairNominalBPS += ratecalc.MathisRate(NominalSegment, t.st.SRTT, t.st.LossEventRate).BitsPerSecond()
		r.FairTFRCBPS += ratecalc.TFRCRate(t.st.SegmentSize, t.st.SRTT, t.st.LossEventRate).BitsPerSecond()
	}
	if n > 0 {
		r.LossEventRate /= n
		r.RTTms /= n
		r.SegmentBytes /= n
		r.FairMeanBPS /= n
		r.FairNominalBPS /= n
		r.FairTFRCBPS /= n
	}
	return r
}

// udpIPBytes is what IPv4 and UDP add to an LLUDP datagram on the wire
// (link.Relay's flows' overhead).
const udpIPBytes = 20 + 8

// payloadBits is bytes on the wire of so many datagrams, without their
// IPv4 and UDP headers, in bits.
func payloadBits(wire, datagrams uint64) float64 {
	return max(0, float64(wire)-float64(datagrams)*udpIPBytes) * 8
}

// askedMean is the throttle asked over [from, to), weighted by how long
// each stood (the one asked before from stands from it); 0 if none was.
func askedMean(asked []askedAt, from, to time.Time) float64 {
	var sum, covered float64
	cur, have, at := 0.0, false, from
	for _, a := range asked {
		if a.at.After(at) && a.at.Before(to) {
			if have {
				sum += cur * a.at.Sub(at).Seconds()
				covered += a.at.Sub(at).Seconds()
			}
			at = a.at
		}
		if !a.at.Before(to) {
			break
		}
		cur, have = a.bps, true
	}
	if have && to.After(at) {
		sum += cur * to.Sub(at).Seconds()
		covered += to.Sub(at).Seconds()
	}
	if covered == 0 {
		return 0
	}
	return sum / covered
}

// viewerFlow is the viewer's flow through the bottleneck going dir, as
// link.Relay names it ("lludp VIEWER up" or "down"); a rig has one viewer.
func viewerFlow(s link.BottleneckStats, dir link.Direction) (link.FlowReport, bool) {
	for _, f := range s.Flows {
		if f.Dir == dir && strings.HasPrefix(f.Name, "lludp ") && strings.HasSuffix(f.Name, " "+dir.String()) {
			return f, true
		}
	}
	return link.FlowReport{}, false
}

// Jain is Jain's fairness index of xs: 1 when all are equal, 1/n when one
// takes everything (Jain, Chiu and Hawe, DEC-TR-301, 1984).
func Jain(xs ...float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(xs)) * sq)
}

// dataDir is the way a bulk flow's data crosses the bottleneck (an
// application-limited flow's downstream, the larger of a game's two).
func dataDir(fc tcpflow.FlowConfig) link.Direction {
	if fc.App == nil && fc.Dir == tcpflow.Upload {
		return link.Up
	}
	return link.Down
}

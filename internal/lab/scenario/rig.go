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
// region, relay, viewer and sidecar run as one throttle.Group: the first
// failure ends the run and is what RunRig returns.
func RunRig(ctx context.Context, cfg RigConfig, log *slog.Logger) (Measurement, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Duration <= 0 || cfg.Warmup < 0 {
		return Measurement{}, fmt.Errorf("scenario: duration %v, warm-up %v: want a positive duration", cfg.Duration, cfg.Warmup)
	}
	b, err := link.NewBottleneck(link.BottleneckConfig{Up: cfg.Up, Down: cfg.Down, Seed: cfg.Seed, Tap: cfg.Tap}, log)
	if err != nil {
		return Measurement{}, fmt.Errorf("scenario: %w", err)
	}
	tcpNet, err := tcpflow.New(b, tcpflow.Config{Seed: cfg.Seed}, log)
	if err != nil {
		return Measurement{}, fmt.Errorf("scenario: %w", err)
	}
	defer tcpNet.Close()
	flows := make([]*tcpflow.Flow, len(cfg.TCP))
	for i, fc := range cfg.TCP {
		if flows[i], err = tcpNet.AddFlow(fc); err != nil {
			return Measurement{}, fmt.Errorf("scenario: %w", err)
		}
	}
	var g throttle.Group
	g.Add(b.Run, nil)
	g.Add(tcpNet.Run, nil)

	// The kernel's flows measure themselves over the warm-up and the
	// duration; the measurement below waits for them.
	kernelDone := make(chan kernelResult, 1)
	if len(cfg.Kernel) > 0 {
		lab, err := kerneltcp.New(ctx, kerneltcp.Config{Bottleneck: b, Name: "linux"}, log)
		if err != nil {
			return Measurement{}, fmt.Errorf("scenario: %w", err)
		}
		// The namespaces go once the group, everything using them, has
		// stopped.
		defer lab.Close()
		g.Add(lab.Run, nil)
		g.Add(func(ctx context.Context) error {
			r := runKernelFlows(ctx, lab, cfg)
			kernelDone <- r
			if r.err != nil {
				return r.err
			}
			<-ctx.Done()
			return nil
		}, nil)
	} else {
		kernelDone <- kernelResult{}
	}

	var vr *viewerRig
	if cfg.Viewer != nil {
		if vr, err = addViewer(&g, b, *cfg.Viewer, cfg.Warmup, cfg.ViewerTap, log); err != nil {
			return Measurement{}, err
		}
	}

	// Snapshots: one at the end of the warm-up, then one a second for the
	// viewer's per-second rate, and the last at the end; this member's
	// return ends the run.
	var first, last link.BottleneckStats
	read0 := make([]uint64, len(flows))
	up0 := make([]uint64, len(flows))
	readEnd := make([]uint64, len(flows))
	upEnd := make([]uint64, len(flows))
	var perSecond []float64
	var kernel kernelResult
	g.Add(func(ctx context.Context) error {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		warm := time.NewTimer(cfg.Warmup)
		defer warm.Stop()
		end := time.NewTimer(cfg.Warmup + cfg.Duration)
		defer end.Stop()
		var prevDown uint64
		warmedUp := false
		for {
			select {
			case <-ctx.Done():
				// Ended early (the caller's context, or another member's
				// failure, which the group returns instead): after the
				// warm-up, what was measured so far stands, as the demo's
				// stock half, which ends with its caller, relies on.
				if !warmedUp {
					return fmt.Errorf("scenario: %w before the warm-up ended", context.Cause(ctx))
				}
				last = b.Stats()
				for i, f := range flows {
					readEnd[i], upEnd[i] = f.Read(dataDir(f.Config())), f.Read(link.Up)
				}
				kernel = <-kernelDone
				return nil
			case <-end.C:
				last = b.Stats()
				for i, f := range flows {
					readEnd[i], upEnd[i] = f.Read(dataDir(f.Config())), f.Read(link.Up)
				}
				select {
				case kernel = <-kernelDone:
				case <-ctx.Done():
					return fmt.Errorf("scenario: %w before the kernel's flows ended", context.Cause(ctx))
				}
				if !warmedUp {
					return errors.New("scenario: the run ended before its warm-up")
				}
				return nil
			case <-warm.C:
				first = b.Stats()
				for i, f := range flows {
					read0[i], up0[i] = f.Read(dataDir(f.Config())), f.Read(link.Up)
				}
				if r, ok := viewerFlow(first, link.Down); ok {
					prevDown = r.DeliveredBytes
				}
				warmedUp = true
			case <-tick.C:
				if !warmedUp {
					continue
				}
				s := b.Stats()
				if r, ok := viewerFlow(s, link.Down); ok {
					perSecond = append(perSecond, float64(r.DeliveredBytes-prevDown)*8)
					prevDown = r.DeliveredBytes
				}
			}
		}
	}, nil)
	if err := g.Run(ctx); err != nil {
		return Measurement{}, err
	}
	d := last.Since(first)
	m := Measurement{Seconds: last.Flows[0].At.Sub(first.Flows[0].At).Seconds(), Up: flowResult(link.FlowReport{Name: "all", Dir: link.Up, FlowStats: d.Up}),
		Down: flowResult(link.FlowReport{Name: "all", Dir: link.Down, FlowStats: d.Down})}
	m.Stacks[0], m.Stacks[1] = tcpNet.Stats()
	for i, f := range flows {
		fc := f.Config()
		dir := dataDir(fc)
		data, _ := d.Flow(fc.Name + " " + dir.String())
		other, _ := d.Flow(fc.Name + " " + (1 - dir).String())
		r := TCPResult{Name: fc.Name, CC: string(fc.CC), GoodputBPS: float64(readEnd[i]-read0[i]) * 8 / m.Seconds, Data: flowResult(data), Other: flowResult(other)}
		if fc.App != nil {
			r.GoodputUpBPS = float64(upEnd[i]-up0[i]) * 8 / m.Seconds
		}
		m.TCP = append(m.TCP, r)
	}
	for _, r := range kernel.results {
		data, _ := d.Flow(r.Config.Name + " data")
		acks, _ := d.Flow(r.Config.Name + " acks")
		m.TCP = append(m.TCP, TCPResult{Name: r.Config.Name, CC: "linux " + r.Congestion, GoodputBPS: r.Goodput * 8, Data: flowResult(data), Other: flowResult(acks)})
	}
	if vr != nil {
		m.Viewer = vr.result(d, perSecond)
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
	mu      sync.Mutex
	ticks   []loopTickStats
}

// addViewer adds the region, the relay, the viewer and the sidecar to g.
func addViewer(g *throttle.Group, b *link.Bottleneck, cfg RigViewer, warmup time.Duration, viewerTap func(lludp.Datagram), log *slog.Logger) (*viewerRig, error) {
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
	activity := cfg.Activity
	if activity == 0 {
		activity = region.Flying
	}
	sim, err := region.New(region.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Activity: activity}, log)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	source := throttle.NewChanSource(tapBuffer)
	// The viewer's datagrams cross b as flows "lludp VIEWER up" and
	// "lludp VIEWER down" (viewerFlow finds them); the tap sees them as
	// the viewer's host does, and its payload is only lent.
	relay, err := link.New(link.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Upstream: sim.Addr(), Shared: b,
		Tap: func(d link.Datagram) {
			ld := lludp.Datagram{At: d.At, Src: d.Src, Dst: d.Dst, Payload: bytes.Clone(d.Payload)}
			source.Push(ld)
			if viewerTap != nil {
				viewerTap(ld)
			}
		}}, log)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	// closeRelay closes the relay's sockets when the run does not start:
	// its Run closes them once its context has ended.
	closeRelay := func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		relay.Run(ctx)
	}
	v, err := viewer.New(viewer.Config{Sim: relay.Addr(), Throttle: cfg.Throttle, FollowViewerRule: true, CircuitCode: 4242}, log)
	if err != nil {
		closeRelay()
		return nil, fmt.Errorf("scenario: %w", err)
	}
	vr := &viewerRig{mode: cfg.Mode, loop: loop, warmEnd: time.Now().Add(warmup)}
	var sender throttle.Sender = discard{}
	if cfg.Mode != Stock {
		sender = relaySender{relay}
	}
	sc, err := throttle.NewSidecar(throttle.SidecarConfig{Loop: loop, Source: source, Sender: sender, Log: log,
		AfterTick: func(now time.Time, _ []throttle.Request) {
			keys := loop.Keys()
			if len(keys) == 0 {
				return
			}
			if _, st, ok := loop.Circuit(keys[0]); ok {
				vr.mu.Lock()
				vr.ticks = append(vr.ticks, loopTickStats{at: now, st: st})
				vr.mu.Unlock()
			}
		}})
	if err != nil {
		closeRelay()
		return nil, fmt.Errorf("scenario: %w", err)
	}
	g.Add(sim.Run, nil)
	g.Add(relay.Run, nil)
	g.Add(v.Run, nil)
	sc.AddTo(g)
	return vr, nil
}

func (vr *viewerRig) result(d link.BottleneckStats, perSecond []float64) *ViewerResult {
	r := &ViewerResult{Mode: vr.mode, PerSecondBPS: perSecond, Requests: vr.loop.Stats().Requests}
	if f, ok := viewerFlow(d, link.Down); ok {
		r.Down = flowResult(f)
	}
	if f, ok := viewerFlow(d, link.Up); ok {
		r.Up = flowResult(f)
	}
	vr.mu.Lock()
	defer vr.mu.Unlock()
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

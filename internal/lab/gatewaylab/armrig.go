package gatewaylab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/internal/lab/tcpflow"
	"github.com/fairgrid/fairgrid/internal/lab/viewer"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim/gateway"
	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/group"
	"github.com/fairgrid/fairgrid/throttle/sidecar"
)

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
// beside whatever else the caller runs (the demo runs it beside its two
// rigs and ends the group at its last row):
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
	v        *viewer.Viewer
	loop     *throttle.Loop // the client side's (the Sidecar arm), or nil
	members  group.Group
	// release closes what NewArmRig acquired, last first (each member's
	// Close, idempotent, whether its Run ran or not).
	release []func() error

	// Written by the measuring member, read after the group returned.
	first, last link.BottleneckStats
	gw0, gw1    gateway.CircuitStats
	samples     []RateSample
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
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("gatewaylab: %w", err)
	}
	cfg = cfg.withDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if obs != nil && (obs.Loop == nil || arm == Sidecar) {
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
	sim, err := region.New(region.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Activity: region.Flying}, log)
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
		r.last = r.b.Stats()
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
			r.first = r.b.Stats()
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
	// The link's one viewer flow.
	down, ok := viewerDown(d)
	if !ok {
		return ArmResult{}, fmt.Errorf("the viewer's circuit never crossed the link (%v)", r.v.Report())
	}
	secs := r.last.Down.At.Sub(r.first.Down.At).Seconds()
	ms := func(x time.Duration) float64 { return float64(x) / float64(time.Millisecond) }
	res := ArmResult{Arm: r.arm, Seconds: secs, ViewerBPS: float64(down.DeliveredBytes) * 8 / secs,
		QueueDelayMeanMs: ms(down.QueueDelay.Mean()), QueueDelayP95Ms: ms(down.QueueDelay.Quantile(0.95)),
		ViewerRequestBPS: r.v.Report().ThrottleBPS}
	if data, ok := d.Flow(downloadFlow().Name + " " + link.Down.String()); ok {
		res.DownloadWireBPS = data.Throughput() * 8
	}
	res.divide()
	if r.gw != nil {
		if !r.gw1.Viewer.IsValid() {
			return ArmResult{}, errors.New("the gateway carried no circuit at the end of the run")
		}
		res.Gateway = gatewayView(r.cfg, r.gw0, r.gw1, r.gw.Counters())
		res.Gateway.PerSecond, res.Gateway.RateCV = r.samples, rateCV(r.samples)
		if r.loop != nil {
			res.Gateway.ClientRequests, res.Gateway.ClientAskedBPS = r.loop.Stats().Requests, r.clientAsked
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

package demand

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

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

// FrontEnd is what stands between the viewer and the region.
type FrontEnd string

// The front-ends.
const (
	Stock   FrontEnd = "stock"
	Sidecar FrontEnd = "sidecar"
	Proxy   FrontEnd = "proxy"
	Gateway FrontEnd = "gateway"
	// GatewaySidecar is both: the gateway in front of the region, the
	// sidecar's loop on the viewer's host.
	GatewaySidecar FrontEnd = "gateway+sidecar"
)

// FrontEnds lists them, the baseline first.
var FrontEnds = []FrontEnd{Stock, Sidecar, Proxy, Gateway}

// Seats lists every front-end a seat takes, the baseline first.
var Seats = []FrontEnd{Stock, Sidecar, Proxy, Gateway, GatewaySidecar}

// Region is the kind of region a seat's viewer is served by.
type Region string

// The regions.
const (
	// OpenSimRegion behaves like OpenSim 0.9.2.2: per-category token
	// buckets that do not lend and the 50-unacked stall (opensim/region's
	// doc). The default.
	OpenSimRegion Region = "opensim"
	// FairgridRegion is fairgrid's own scheduler (an idle category's
	// rate goes to the busy ones) with no stall: the throttle alone sets
	// the rate.
	FairgridRegion Region = "fairgrid"
)

// Regions lists them, the default first.
var Regions = []Region{OpenSimRegion, FairgridRegion}

// regionConfig is the region's configuration of the kind (empty: OpenSimRegion)
// for the workload at position.
func (r Region) regionConfig(a region.Activity, position lludp.Vector3) (region.Config, error) {
	cfg := region.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Activity: a, Position: position}
	switch r {
	case "", OpenSimRegion:
		cfg.Scheduler.ChannelBuckets = true
	case FairgridRegion:
		cfg.AckStall = -1
	default:
		return cfg, fmt.Errorf("region %q: want one of %v", r, Regions)
	}
	return cfg, nil
}

// Config is one run.
type Config struct {
	FrontEnd FrontEnd
	// Region is the kind of region (and of its neighbours): empty is
	// OpenSimRegion.
	Region Region
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
	// WrapSender, if set, wraps the sidecar's sender of AgentThrottles
	// (across the link to the region): a lab can count, hold or drop
	// fairgrid's requests on their way.
	WrapSender func(throttle.Sender) throttle.Sender
	// AfterTick, if set, sees each decision of the seat's loop (the
	// sidecar's or the proxy's) and the requests it sent: the demo's rows.
	AfterTick func(now time.Time, sent []throttle.Request)
	// OnThrottle, if set, sees each AgentThrottle the seat's regions apply
	// (region.Config.OnThrottle).
	OnThrottle func(viewer netip.AddrPort, requestedBPS float64, applied int64, at time.Time)
	// Source, if set, opens the sidecar's source in place of the link's
	// tap, given the address the viewer reaches its root region at: a
	// capture on the viewer's host (the demo's live mode), or a test's.
	Source func(root netip.AddrPort) (sidecar.Source, error)
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
	var tcp *tcpflow.Flow
	var shared *link.Bottleneck
	if cfg.Bottleneck != nil {
		b, err := link.NewBottleneck(*cfg.Bottleneck, log)
		if err != nil {
			return res, fmt.Errorf("demand: %w", err)
		}
		stacks, err := tcpflow.New(b, tcpflow.Config{Seed: cfg.Seed}, log)
		if err != nil {
			return res, fmt.Errorf("demand: %w", err)
		}
		defer stacks.Close()
		if tcp, err = stacks.AddFlow(tcpflow.FlowConfig{Name: "tcp", CC: tcpflow.CUBIC, Dir: tcpflow.Download}); err != nil {
			return res, fmt.Errorf("demand: %w", err)
		}
		g.Add(b.Run, nil)
		g.Add(stacks.Run, nil)
		shared = b
	}
	seat, err := NewSeat(cfg, shared, log)
	if err != nil {
		return res, err
	}
	g.Add(seat.Run, nil)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- g.Run(runCtx) }()
	timer := time.NewTimer(cfg.Warmup)
	defer timer.Stop()
	select {
	case <-timer.C:
	case err := <-done:
		return res, fmt.Errorf("demand: ended in the warm-up: %w", errors.Join(err, ctx.Err()))
	}
	before := seat.Report()
	var tcpBefore uint64
	if tcp != nil {
		tcpBefore = tcp.Read(link.Down)
	}
	seat.Measure(time.Now())
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
			if r, ok := seat.ControllerRate(); ok {
				rates = append(rates, r)
			}
		case err := <-done:
			return res, fmt.Errorf("demand: ended early: %w", errors.Join(err, ctx.Err()))
		}
	}
	for _, r := range rates {
		res.ControllerBPS += r / float64(len(rates))
	}
	after := seat.Report()
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
	res.ReceivedBPS, res.GoodputBPS, res.TotalBPS = Received(before, after, cfg.Duration)
	res.Requests = seat.Requests()
	return res, nil
}

// Received is what a viewer received between two of its reports d
// apart, bits/s of LLUDP payload: on its root circuit, the part of that
// which was new to it (not a duplicate of a reliable datagram it had;
// reckoned by datagrams, since a workload's are of one size), and on all
// its circuits together.
func Received(before, after viewer.Report, d time.Duration) (root, goodput, total float64) {
	secs := d.Seconds()
	if secs <= 0 {
		return 0, 0, 0
	}
	root = float64(after.Bytes-before.Bytes) * 8 / secs
	total = float64(after.TotalBytes-before.TotalBytes) * 8 / secs
	if n := after.Received - before.Received; n > 0 {
		dup := after.ReliableDuplicates - before.ReliableDuplicates
		goodput = root * float64(n-min(dup, n)) / float64(n)
	}
	return root, goodput, total
}

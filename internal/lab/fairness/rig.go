package fairness

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/demand"
	"github.com/fairgrid/fairgrid/internal/lab/kerneltcp"
	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/internal/lab/tcpflow"
	labviewer "github.com/fairgrid/fairgrid/internal/lab/viewer"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/group"
)

// The TCP flows a cell can put beside the viewer: gVisor's userspace
// stacks (no root), or Linux's own through kerneltcp (root).
const (
	GVisorReno  = "reno"
	GVisorCUBIC = "cubic"
	LinuxReno   = "linux-reno"
	LinuxCUBIC  = "linux-cubic"
	LinuxBBR    = "linux-bbr"
)

// TCPKinds lists the names a Cell's TCP takes.
var TCPKinds = []string{GVisorReno, GVisorCUBIC, LinuxReno, LinuxCUBIC, LinuxBBR}

// IsKernel reports whether tcp is Linux's TCP (root only).
func IsKernel(tcp string) bool { return len(tcp) > 6 && tcp[:6] == "linux-" }

// Cell is one point of the grid: a bottleneck and who shares it.
type Cell struct {
	// Controller decides the viewers' rate (throttle's names); empty when
	// Reference is set.
	Controller throttle.ControllerName `json:"controller"`
	// Reference, if set, is a TCP kind (TCPKinds) whose bulk download
	// takes the viewer's seat instead of a viewer: the control, how far
	// one TCP flow's share lies from another's on the same rig, the scale
	// against which a controller's misses are read. The result's viewer
	// figures are then that flow's.
	Reference string `json:"reference,omitempty"`
	// TCP is the kind of the bulk downloads beside the viewers (TCPKinds).
	TCP string `json:"tcp"`
	// Flows is the number of TCP downloads (0: the viewers alone).
	Flows int `json:"tcp_flows"`
	// Viewers is the number of viewers (default 1; none, and none
	// allowed, in a reference cell).
	Viewers int `json:"viewers,omitempty"`
	// Buffer is the downlink's drop-tail FIFO in packets.
	Buffer int `json:"buffer_packets"`
	// Loss is the downlink's random loss, 0–1.
	Loss float64 `json:"loss"`
	// RTT is the base round-trip time (twice the one-way delay), ms.
	RTTms float64 `json:"rtt_ms"`
	// LinkBPS is the downlink's rate in bits/s.
	LinkBPS float64 `json:"link_bps"`
	// Product, if set, is a product front-end in the viewer's seat
	// (demand.Seats: stock, sidecar, proxy, gateway, gateway+sidecar)
	// instead of the rig's own viewer: the product's code over real LLUDP,
	// a region of `fairgrid sim` with OpenSim's non-lending category
	// buckets and the lab viewer (internal/lab/demand's Seat), its
	// circuits crossing the cell's bottleneck. Not with Controller or
	// Reference.
	Product demand.FrontEnd `json:"product,omitempty"`
	// Demand is a product seat's region workload: empty for saturating
	// demand (flying: every category has more to send than the link
	// carries), or an application-limited one (opensim/region's terrain,
	// objects, avatars, textures).
	Demand string `json:"demand,omitempty"`
	// Neighbours is how many child circuits (neighbour regions, each
	// with the same workload) a product seat's viewer opens besides its
	// root: their sum is the viewer's share.
	Neighbours int `json:"neighbours,omitempty"`
	// Region is a product seat's kind of region (demand.Regions): empty
	// is demand.OpenSimRegion, OpenSim's non-lending buckets and its
	// 50-unacked stall; demand.FairgridRegion is fairgrid's own
	// scheduler without the stall.
	Region demand.Region `json:"region,omitempty"`
}

func (c Cell) String() string {
	seat := c.Seat()
	if c.Demand != "" {
		seat += " (" + c.Demand + ")"
	}
	if c.Neighbours > 0 {
		seat += fmt.Sprintf(" with %d neighbours", c.Neighbours)
	}
	if c.Region != "" && c.Region != demand.OpenSimRegion {
		seat += fmt.Sprintf(" (%s region)", c.Region)
	}
	return fmt.Sprintf("%s beside %d %s, %.0f kbit/s, %g ms, %d packets, %g%% loss",
		seat, c.Flows, c.TCP, c.LinkBPS/1000, c.RTTms, c.Buffer, c.Loss*100)
}

// Seat names who sits in the viewer's seat: the controller, a product
// front-end, or "tcp:" and the reference's kind.
func (c Cell) Seat() string {
	switch {
	case c.Reference != "":
		return "tcp:" + c.Reference
	case c.Product != "":
		return string(c.Product)
	}
	return string(c.Controller)
}

// activity is a product seat's workload: flying (saturating) unless
// Demand names an application-limited one.
func (c Cell) activity() (region.Activity, error) {
	if c.Demand == "" {
		return region.Flying, nil
	}
	a, err := region.ParseActivity(c.Demand)
	if err != nil {
		return 0, fmt.Errorf("demand: %w", err)
	}
	if !slices.Contains(Limited, a) {
		return 0, fmt.Errorf("demand %q: want one of %v (or empty: saturating)", c.Demand, Limited)
	}
	return a, nil
}

// Limited are the application-limited workloads a product seat's region
// can send instead of saturating demand.
var Limited = []region.Activity{region.Terrain, region.Objects, region.Avatars, region.Textures}

// BDPPackets is the bandwidth-delay product of the cell's link in
// 1,500-byte packets.
func (c Cell) BDPPackets() float64 { return c.LinkBPS / 8 * c.RTTms / 1000 / 1500 }

// Validate reports every problem that keeps the rig from running c.
func (c Cell) Validate() error {
	var errs []error
	if c.Product != "" {
		if c.Controller != "" || c.Reference != "" {
			errs = append(errs, fmt.Errorf("product %q with controller %q or reference %q: a seat holds one", c.Product, c.Controller, c.Reference))
		}
		if !slices.Contains(demand.Seats, c.Product) {
			errs = append(errs, fmt.Errorf("product %q: want one of %v", c.Product, demand.Seats))
		}
		if c.Viewers > 0 {
			errs = append(errs, fmt.Errorf("product %q and viewers %d: the product's viewer takes the seat", c.Product, c.Viewers))
		}
		if _, err := c.activity(); err != nil {
			errs = append(errs, err)
		}
		if c.Neighbours < 0 || c.Neighbours > len(region.NeighbourOffsets) {
			errs = append(errs, fmt.Errorf("neighbours %d outside [0, %d]", c.Neighbours, len(region.NeighbourOffsets)))
		}
		if c.Region != "" && !slices.Contains(demand.Regions, c.Region) {
			errs = append(errs, fmt.Errorf("region %q: want one of %v", c.Region, demand.Regions))
		}
	} else if c.Demand != "" || c.Neighbours != 0 || c.Region != "" {
		errs = append(errs, fmt.Errorf("demand %q, neighbours %d, region %q: only a product seat has a region, its workload and neighbours", c.Demand, c.Neighbours, c.Region))
	} else if c.Reference == "" {
		var name throttle.ControllerName
		if err := name.UnmarshalText([]byte(c.Controller)); err != nil {
			errs = append(errs, fmt.Errorf("controller %w", err))
		}
	} else {
		if c.Controller != "" {
			errs = append(errs, fmt.Errorf("controller %q and reference %q: a seat holds a viewer or a TCP flow, not both", c.Controller, c.Reference))
		}
		if !slices.Contains(TCPKinds, c.Reference) {
			errs = append(errs, fmt.Errorf("reference %q: want one of %v", c.Reference, TCPKinds))
		}
		if c.Viewers > 0 {
			errs = append(errs, fmt.Errorf("reference %q and viewers %d: the reference takes the viewer's seat", c.Reference, c.Viewers))
		}
	}
	if c.Flows > 0 && !slices.Contains(TCPKinds, c.TCP) {
		errs = append(errs, fmt.Errorf("tcp %q: want one of %v", c.TCP, TCPKinds))
	}
	if c.Flows < 0 || c.Flows > 64 {
		errs = append(errs, fmt.Errorf("tcp flows %d outside [0, 64]", c.Flows))
	}
	if c.Viewers < 0 || c.Viewers > 16 {
		errs = append(errs, fmt.Errorf("viewers %d outside [0, 16]", c.Viewers))
	}
	if c.Buffer < 2 || c.Buffer > 100000 {
		errs = append(errs, fmt.Errorf("buffer %d packets outside [2, 100000]", c.Buffer))
	}
	if !(c.Loss >= 0 && c.Loss < 1) {
		errs = append(errs, fmt.Errorf("loss %v outside [0, 1)", c.Loss))
	}
	if !(c.RTTms >= 1 && c.RTTms <= 10000) {
		errs = append(errs, fmt.Errorf("rtt %v ms outside [1, 10000]", c.RTTms))
	}
	if !(c.LinkBPS >= 64000 && c.LinkBPS <= 1e9) {
		errs = append(errs, fmt.Errorf("link %v bit/s outside [64 kbit/s, 1 Gbit/s]", c.LinkBPS))
	}
	return errors.Join(errs...)
}

// Options are how a cell is run.
type Options struct {
	// Warmup is left out of the measurement; Duration is measured.
	Warmup, Duration time.Duration
	// Interval is the controller's decision interval (default 5 s, the
	// product's).
	Interval time.Duration
	// PingEvery is how often the viewer samples the RTT (default 5 s: the
	// viewer's StartPingCheck, protocol.md §9.4).
	PingEvery time.Duration
	// Seed makes the link's losses, the stacks' choices and the viewer's
	// datagram sizes repeatable.
	Seed uint64
	// Sizes is the viewer's datagram payload mix (default FlyingMix).
	Sizes []SizeWeight
	// TCPStop, if positive, ends the TCP flows this long after the start
	// (responsiveness: the viewer should take the link); TCPStart delays
	// their start (the seat's, a viewer or a reference, should give way).
	// Both need gVisor's TCP, and TCPStop a viewer in the seat
	// (checkTiming).
	TCPStart, TCPStop time.Duration
	// Log receives the rig's errors; nil discards.
	Log *slog.Logger
	// wrapSender, if set, wraps a product seat's sidecar sender (a
	// test's: one that drops fairgrid's AgentThrottles).
	wrapSender func(throttle.Sender) throttle.Sender
	// SeatConfig, if set, adjusts a product seat's configuration before
	// the seat is built (views.go); OnSeat, if set, is given the seat once
	// built, before it runs.
	SeatConfig func(*demand.Config)
	OnSeat     func(*demand.Seat)
}

// SizeWeight is one payload size of the viewer's mix and its share of
// datagrams.
type SizeWeight struct {
	Bytes  int
	Weight float64
}

// FlyingMix is opensim/region's Flying load by datagram count: terse
// avatar updates of 80 B (20 kB/s), object updates of 1,200 B (300 kB/s),
// textures, terrain and assets of 1,000 B (520 kB/s): a mean of about
// 820 B, a quarter of the datagrams small.
var FlyingMix = []SizeWeight{{80, 250}, {1200, 250}, {1000, 520}}

// SmallMix is a thin viewer of small datagrams (mean 300 B): the case
// RFC 4828 was written for.
var SmallMix = []SizeWeight{{80, 600}, {600, 300}, {1000, 100}}

// udpOverhead is what IPv4 and UDP add to each datagram on the wire.
const udpOverhead = 28

// Result is one run of a cell.
type Result struct {
	Cell    Cell    `json:"cell"`
	Seed    uint64  `json:"seed"`
	Seconds float64 `json:"seconds"`
	// ViewerBPS is each viewer's received bits/s on the wire (IP and UDP
	// headers included, as TCP's count its own); in a reference cell the
	// seat's TCP flow's, its data direction on the wire. So are
	// ViewerPerSecond and ViewerDropsPerSecond; the controller's figures
	// (ViewerP to Trace) stay empty there.
	ViewerBPS []float64 `json:"viewer_bps"`
	// TCPBPS is each TCP flow's data direction in bits/s on the wire.
	TCPBPS []float64 `json:"tcp_bps"`
	// TCPQueueMs is the TCP data's mean queueing delay.
	TCPQueueMs float64 `json:"tcp_queue_ms"`
	// ViewerP is the controller's loss event rate, mean over decisions
	// after the warm-up (the first viewer's): per 1,460-byte segment for
	// the virtual TCP, per packet (RFC 5348) for the others.
	ViewerP float64 `json:"viewer_p"`
	// ViewerSegment is the viewer's mean payload.
	ViewerSegment float64 `json:"viewer_segment"`
	// ViewerLossEventsPerSec is how often the viewer's circuit had an RFC
	// 5348 loss event (per packet, grouped per RTT).
	ViewerLossEventsPerSec float64 `json:"viewer_loss_events_per_s"`
	// ViewerPerSecond and TCPPerSecond are received bits in each second
	// of the whole run (warm-up included), the first viewer's and the
	// sum of the TCP flows'.
	ViewerPerSecond []float64 `json:"viewer_per_second_bps"`
	TCPPerSecond    []float64 `json:"tcp_per_second_bps"`
	// AuditTCPBPS is what the audit estimates a TCP flow on the path
	// would get, from the first viewer's counters over the measured part
	// (ratecalc.SegmentLossEventRateOver and ratecalc.TCPShareRate at
	// 1,460 bytes and the viewer's SRTT): to set beside TCPBPS. 0 without
	// loss.
	AuditTCPBPS float64 `json:"audit_tcp_bps"`
	// SenderShortfall is how much less the first viewer's region sent
	// than its throttle allowed over the measured part, 0–1: above a few
	// per cent the run was not saturating (a loaded machine ran the
	// sender late) and says nothing of the controller.
	SenderShortfall float64 `json:"sender_shortfall"`
	// Requests are the first viewer's decisions, bits/s, whole run.
	Requests []float64 `json:"requests_bps"`
	// ViewerDropsPerSecond and TCPDropsPerSecond are the bottleneck's
	// drops (queue and random) in each second of the whole run, the first
	// viewer's and the sum of the TCP flows'.
	ViewerDropsPerSecond []float64 `json:"viewer_drops_per_second"`
	TCPDropsPerSecond    []float64 `json:"tcp_drops_per_second"`
	// TCPInfoPerSecond is the first gVisor TCP flow's sender state
	// sampled each second (empty beside Linux's TCP).
	TCPInfoPerSecond []tcpflow.TCPInfo `json:"-"`
	// Trace is the first viewer's controller state at each decision,
	// whole run: the per-interval series behind the ratio.
	Trace []TracePoint `json:"-"`
	// SeatGoodputBPS is what a product seat's viewer received that was new
	// to it, bits/s of LLUDP payload on its root circuit over the
	// measured part (demand.Received): without the duplicates of reliable
	// datagrams whose ack was late, which the bottleneck's figures count.
	SeatGoodputBPS float64 `json:"seat_goodput_bps,omitempty"`
	// SeatLogins is how many viewers a product seat had log in before one
	// was served (demand.Seat.LoginTries): above 1, the first gave its
	// UseCircuitCode up.
	SeatLogins int `json:"seat_logins,omitempty"`
	// SeatQueueDelayMeanMs and SeatQueueDelayP95Ms are a product seat's
	// root circuit's datagrams' wait in the bottleneck's FIFO towards its
	// viewer over the measured part (views.go).
	SeatQueueDelayMeanMs float64 `json:"seat_queue_delay_mean_ms,omitempty"`
	SeatQueueDelayP95Ms  float64 `json:"seat_queue_delay_p95_ms,omitempty"`
}

// TracePoint is the controller's state at one decision.
type TracePoint struct {
	Seconds float64 // since the viewer started
	Rate    float64 // requested bits/s
	Stats   ratecalc.Stats
}

// MeanTCP is the mean TCP flow's bits/s (0 without flows).
func (r Result) MeanTCP() float64 { return mean(r.TCPBPS) }

// MeanViewer is the mean viewer's bits/s.
func (r Result) MeanViewer() float64 { return mean(r.ViewerBPS) }

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// TCPPEquiv is the loss event rate a Reno flow of 1,460-byte segments
// would need to get the mean TCP flow's rate at its RTT (Mathis,
// inverted): p = (1.22·s/(R·X))², with R the base RTT plus the TCP data's
// mean queueing delay.
func (r Result) TCPPEquiv() float64 {
	x := r.MeanTCP() / 8
	rtt := (r.Cell.RTTms + r.TCPQueueMs) / 1000
	if x <= 0 || rtt <= 0 {
		return 0
	}
	v := math.Sqrt(1.5) * ratecalc.NominalSegmentSize / (rtt * x)
	return min(v*v, 1)
}

// Run runs one cell for opt.Warmup+opt.Duration of real time (gVisor's
// TCP runs on the real clock) and measures the part after the warm-up.
// The bottleneck, the TCP stacks, the kernel's flows, the viewers and the
// measurement run as one group.Group: the measurement's end ends the
// run, and the first failure of any member ends it and is what Run
// returns, joined with the kernel lab's failure to remove its namespaces.
func Run(ctx context.Context, cell Cell, opt Options) (Result, error) {
	return run(ctx, cell, opt, nil)
}

// run is Run; addMembers, if set, adds members of a test's to the run's
// group.
func run(ctx context.Context, cell Cell, opt Options, addMembers func(*group.Group)) (res Result, err error) {
	if cell.Reference == "" && cell.Product == "" {
		cell.Viewers = cmp.Or(cell.Viewers, 1)
	}
	if err := cell.Validate(); err != nil {
		return Result{}, fmt.Errorf("fairness: %w", err)
	}
	if err := checkTiming(cell, opt); err != nil {
		return Result{}, err
	}
	opt.Interval = cmp.Or(opt.Interval, 5*time.Second)
	opt.PingEvery = cmp.Or(opt.PingEvery, 5*time.Second)
	if opt.Sizes == nil {
		opt.Sizes = FlyingMix
	}
	log := opt.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opt.Duration <= 0 || opt.Warmup < 0 {
		return Result{}, fmt.Errorf("fairness: duration %v, warm-up %v: want a positive duration", opt.Duration, opt.Warmup)
	}
	oneWay := time.Duration(cell.RTTms / 2 * float64(time.Millisecond))
	rate := int64(cell.LinkBPS / 8)
	down := link.PipeConfig{Rate: rate, Delay: oneWay, Buffer: cell.Buffer, Loss: cell.Loss}
	// The uplink carries ACKs, pings and requests: ample, so that only the
	// downlink is the bottleneck.
	up := link.PipeConfig{Rate: rate, Delay: oneWay, Buffer: max(cell.Buffer, 1000)}
	b, err := link.NewBottleneck(link.BottleneckConfig{Up: up, Down: down, Seed: opt.Seed}, log)
	if err != nil {
		return Result{}, fmt.Errorf("fairness: %w", err)
	}
	var g group.Group
	g.Add(b.Run, nil)

	// The TCP flows: the cell's downloads and, in a reference cell, the
	// one in the viewer's seat (last), each on gVisor's stacks or Linux's.
	var gvisorFlows, kernelFlows []tcpSpec
	// place names a flow for its stack and adds it to that stack's list;
	// it returns the bottleneck's name for the flow's data.
	place := func(f tcpSpec, id string) string {
		if IsKernel(f.kind) {
			f.name = "linux " + id
			kernelFlows = append(kernelFlows, f)
			return f.name + " data"
		}
		f.name = "tcp " + id
		gvisorFlows = append(gvisorFlows, f)
		return f.name + " down"
	}
	// A product seat's viewer logs in on a quiet link: the lab viewer, as
	// the Second Life viewer, gives up a reliable datagram after three
	// resends, and its UseCircuitCode's ack (behind the gateway, its
	// probe's round trip too) met a queue that gVisor's slow start had
	// filled often enough that a batch of 48 runs lost a viewer in five.
	start := opt.TCPStart
	if cell.Product != "" {
		start += seatLogin
	}
	for i := range cell.Flows {
		place(tcpSpec{kind: cell.TCP, start: start + time.Duration(i)*100*time.Millisecond}, fmt.Sprint(i))
	}
	seatName := viewerDown(0) // the seat's flow at the bottleneck
	if cell.Reference != "" {
		seatName = place(tcpSpec{kind: cell.Reference, seat: true}, "reference")
	}
	var (
		tcpNet   *tcpflow.Net
		flows    []*tcpflow.Flow // the cell's gVisor downloads
		seatFlow *tcpflow.Flow   // a gVisor reference
	)
	if len(gvisorFlows) > 0 {
		if tcpNet, err = tcpflow.New(b, tcpflow.Config{Seed: opt.Seed}, log); err != nil {
			return Result{}, fmt.Errorf("fairness: %w", err)
		}
		defer tcpNet.Close()
		for _, spec := range gvisorFlows {
			cc := tcpflow.CUBIC
			if spec.kind == GVisorReno {
				cc = tcpflow.Reno
			}
			f, err := tcpNet.AddFlow(tcpflow.FlowConfig{Name: spec.name, CC: cc, Dir: tcpflow.Download, Start: spec.start})
			if err != nil {
				return Result{}, fmt.Errorf("fairness: %w", err)
			}
			if spec.seat {
				seatFlow = f
			} else {
				flows = append(flows, f)
			}
		}
		g.Add(func(ctx context.Context) error {
			tcpCtx := ctx
			if opt.TCPStop > 0 {
				var stop context.CancelFunc
				tcpCtx, stop = context.WithTimeout(ctx, opt.TCPStop)
				defer stop()
			}
			if err := tcpNet.Run(tcpCtx); err != nil {
				return err
			}
			// Flows stopped at TCPStop leave the link to the viewers: the
			// run goes on.
			<-ctx.Done()
			return nil
		}, nil)
	}
	viewers := make([]*viewer, cell.Viewers)
	for i := range viewers {
		cfg := throttle.Config{Min: ratecalc.RateFromBits(16_000), Max: ratecalc.Rate(cell.LinkBPS / 8 * 2)}
		ctl, err := cfg.NewController(cell.Controller)
		if err != nil {
			return Result{}, fmt.Errorf("fairness: %w", err)
		}
		if viewers[i], err = newViewer(b, i, ctl, cfg, opt); err != nil {
			return Result{}, err
		}
		g.Add(viewers[i].run, nil)
	}
	var product *demand.Seat
	if cell.Product != "" {
		if product, err = newSeat(b, cell, opt, log); err != nil {
			return Result{}, err
		}
		defer product.Close()
		g.Add(product.Run, nil)
	}
	// The kernel's flows measure themselves over the warm-up and the
	// duration; the measurement waits for them.
	kernelDone := make(chan kernelResult, 1)
	if len(kernelFlows) > 0 {
		var lab *kerneltcp.Lab
		if lab, err = kerneltcp.New(ctx, kerneltcp.Config{Bottleneck: b, Name: "linux"}, log); err != nil {
			return Result{}, fmt.Errorf("fairness: %w", err)
		}
		defer func() {
			// The namespaces go once everything using them has stopped:
			// they would outlive the run.
			if cerr := lab.Close(); cerr != nil {
				res, err = Result{}, errors.Join(err, fmt.Errorf("fairness: %w", cerr))
			}
		}()
		g.Add(lab.Run, nil)
		g.Add(func(ctx context.Context) error {
			k := runKernel(ctx, lab, kernelFlows, opt)
			kernelDone <- k
			if k.err != nil {
				return k.err
			}
			<-ctx.Done()
			return nil
		}, nil)
	} else {
		kernelDone <- kernelResult{}
	}

	isSeat := func(name string) bool { return name == seatName }
	if product != nil {
		isSeat = isSeatCircuit
	}
	m := measurement{b: b, flows: flows, isSeat: isSeat, opt: opt, kernelDone: kernelDone, seat: product}
	g.Add(m.run, nil)
	if addMembers != nil {
		addMembers(&g)
	}
	if err := g.Run(ctx); err != nil {
		return Result{}, fmt.Errorf("fairness: %w", err)
	}
	res = Result{Cell: cell, Seed: opt.Seed, ViewerPerSecond: m.viewerPerSecond, TCPPerSecond: m.tcpPerSecond,
		ViewerDropsPerSecond: m.viewerDropsPerSecond, TCPDropsPerSecond: m.tcpDropsPerSecond, TCPInfoPerSecond: m.tcpInfoPerSecond}
	d := m.last.Since(m.first)
	res.Seconds = m.last.Down.At.Sub(m.first.Down.At).Seconds()
	for i, v := range viewers {
		r, _ := d.Flow(viewerDown(i))
		res.ViewerBPS = append(res.ViewerBPS, r.Throughput()*8)
		if i == 0 {
			res.ViewerP, res.ViewerSegment, res.ViewerLossEventsPerSec, res.AuditTCPBPS, res.Requests = v.summary(m.warmEnd, res.Seconds)
			res.SenderShortfall = v.shortfall
			res.Trace = v.trace()
		}
	}
	var qsum, qn float64
	for _, f := range flows {
		r, _ := d.Flow(f.Name() + " down")
		res.TCPBPS = append(res.TCPBPS, r.Throughput()*8)
		qsum += float64(r.QueueDelay.Mean()) / float64(time.Millisecond)
		qn++
	}
	seat, cellFlows := splitSeat(kernelFlows, m.kernel.results)
	res.ViewerBPS = append(res.ViewerBPS, seat...)
	for _, k := range cellFlows {
		res.TCPBPS = append(res.TCPBPS, k.Data.Throughput()*8)
		qsum += float64(k.Data.QueueDelay.Mean()) / float64(time.Millisecond)
		qn++
	}
	if seatFlow != nil {
		r, _ := d.Flow(seatName)
		res.ViewerBPS = append(res.ViewerBPS, r.Throughput()*8)
	}
	if product != nil {
		res.ViewerBPS = append(res.ViewerBPS, seatThroughput(d)*8)
		res.ViewerP, res.Requests, res.SeatLogins, res.SeatGoodputBPS = m.seatP, m.seatRequests, product.LoginTries(), m.seatGoodput
		res.SeatQueueDelayMeanMs, res.SeatQueueDelayP95Ms = seatQueueDelay(d)
	}
	if qn > 0 {
		res.TCPQueueMs = qsum / qn
	}
	return res, nil
}

// measurement is the run's measuring member: the bottleneck's counters
// every second, at the end of the warm-up and at the end. The fields below
// the inputs are written by run and read once the group has returned.
type measurement struct {
	b          *link.Bottleneck
	flows      []*tcpflow.Flow
	isSeat     func(name string) bool // the bottleneck's names for the seat's data
	seat       *demand.Seat           // a product seat
	opt        Options
	kernelDone <-chan kernelResult
	// A product seat's viewer's loss event rate over the measured part,
	// and its front-end's requests, bits/s.
	seatP        float64
	seatRequests []float64
	seatGoodput  float64

	warmEnd                                 time.Time
	first, last                             link.BottleneckStats
	viewerPerSecond, tcpPerSecond           []float64
	viewerDropsPerSecond, tcpDropsPerSecond []float64
	tcpInfoPerSecond                        []tcpflow.TCPInfo
	kernel                                  kernelResult
}

// run measures until Warmup+Duration, when its return ends the run, or
// until the group stops (the caller's context, another member's failure,
// which the group returns instead): after the warm-up, what was measured
// until then stands, as the kernel's flows' results do, which it waits
// for; before it, the run fails.
func (m *measurement) run(ctx context.Context) error {
	// start before the ticker's: its tick at a whole warm-up is the
	// warm-up's end, not a second later.
	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	m.warmEnd = start.Add(m.opt.Warmup)
	end := time.NewTimer(m.opt.Warmup + m.opt.Duration)
	defer end.Stop()
	var prevV, prevT float64
	warmed := false
	var prevVD, prevTD float64
	var seatBefore labviewer.Report
	snapshot := func(s link.BottleneckStats) (v, t, vd, td float64) {
		for _, r := range s.Flows {
			if m.isSeat(r.Name) {
				v += float64(r.DeliveredBytes)
				vd += float64(r.Dropped())
			}
		}
		for _, f := range m.flows {
			if r, ok := s.Flow(f.Name() + " down"); ok {
				t += float64(r.DeliveredBytes)
				td += float64(r.Dropped())
			}
		}
		return v, t, vd, td
	}
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case <-end.C:
			break wait
		case now := <-tick.C:
			s := m.b.Stats()
			if !warmed && !now.Before(m.warmEnd) {
				m.first, warmed = s, true
				if m.seat != nil {
					m.seat.Measure(now)
					seatBefore = m.seat.Report()
				}
			}
			v, t, vd, td := snapshot(s)
			m.viewerPerSecond = append(m.viewerPerSecond, (v-prevV)*8)
			m.tcpPerSecond = append(m.tcpPerSecond, (t-prevT)*8)
			m.viewerDropsPerSecond = append(m.viewerDropsPerSecond, vd-prevVD)
			m.tcpDropsPerSecond = append(m.tcpDropsPerSecond, td-prevTD)
			prevV, prevT, prevVD, prevTD = v, t, vd, td
			if len(m.flows) > 0 {
				info, _ := m.flows[0].Info(link.Down)
				m.tcpInfoPerSecond = append(m.tcpInfoPerSecond, info)
			}
		}
	}
	m.last = m.b.Stats()
	if m.seat != nil && warmed {
		after := m.seat.Report()
		if !after.LoggedIn {
			return errors.New("the product seat's viewer never logged in")
		}
		m.seatP = after.LossEventRate
		_, m.seatGoodput, _ = demand.Received(seatBefore, after, m.last.Down.At.Sub(m.first.Down.At))
		for _, q := range m.seat.Requests() {
			m.seatRequests = append(m.seatRequests, q.Total.BitsPerSecond())
		}
	}
	if !warmed {
		if m.opt.Warmup == 0 {
			return errors.New("the run ended within a second")
		}
		return fmt.Errorf("%w before the warm-up ended", context.Cause(ctx))
	}
	m.kernel = <-m.kernelDone
	return nil
}

type kernelResult struct {
	results []kerneltcp.FlowResult
	err     error
}

// tcpSpec is one bulk TCP download of a run: one of the cell's, or
// (seat) the reference in the viewer's seat. Linux's flows all start at
// once: start is gVisor's (kerneltcp has no delayed start).
type tcpSpec struct {
	name, kind string
	start      time.Duration
	seat       bool
}

// splitSeat parts Linux's results, in specs' order, into the seat's
// bits/s on the wire (none, or one) and the cell's flows.
func splitSeat(specs []tcpSpec, results []kerneltcp.FlowResult) (seat []float64, cellFlows []kerneltcp.FlowResult) {
	for i, k := range results {
		if specs[i].seat {
			seat = append(seat, k.Data.Throughput()*8)
		} else {
			cellFlows = append(cellFlows, k)
		}
	}
	return seat, cellFlows
}

// runKernel runs Linux's flows, in order, all at once.
func runKernel(ctx context.Context, lab *kerneltcp.Lab, specs []tcpSpec, opt Options) kernelResult {
	out := kernelResult{results: make([]kerneltcp.FlowResult, len(specs))}
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	for i, spec := range specs {
		fc := kerneltcp.FlowConfig{Name: spec.name, Congestion: spec.kind[len("linux-"):], Download: true,
			Warmup: opt.Warmup, Duration: opt.Duration}
		wg.Go(func() { out.results[i], errs[i] = lab.Flow(ctx, fc) })
	}
	wg.Wait()
	out.err = errors.Join(errs...)
	return out
}

// checkTiming refuses a TCPStart or TCPStop the run could not honour,
// rather than measure something else under its name: Linux's flows
// (kerneltcp) all start with the run and end with it, and TCPStop ends
// every gVisor flow, a reference in the seat among them. A gVisor
// reference beside gVisor flows that start late is how a TCP flow in the
// viewer's seat gives way to a newcomer.
func checkTiming(cell Cell, opt Options) error {
	if opt.TCPStart <= 0 && opt.TCPStop <= 0 {
		return nil
	}
	if cell.Flows > 0 && IsKernel(cell.TCP) || cell.Reference != "" && IsKernel(cell.Reference) {
		return fmt.Errorf("fairness: TCPStart %v, TCPStop %v: Linux's flows start and end with the run; the cell's and the seat's TCP must be gVisor's", opt.TCPStart, opt.TCPStop)
	}
	if cell.Reference != "" && opt.TCPStop > 0 {
		return fmt.Errorf("fairness: TCPStop %v with a reference in the seat: it would stop the seat's flow too", opt.TCPStop)
	}
	return nil
}

func viewerDown(i int) string { return fmt.Sprintf("viewer %d down", i) }

// isSeatCircuit reports whether a bottleneck flow is a product seat's
// circuit towards its viewer (link.Config.Shared's "lludp VIEWER down"):
// the root's and each neighbour's.
func isSeatCircuit(name string) bool {
	return strings.HasPrefix(name, "lludp ") && strings.HasSuffix(name, " down")
}

// seatThroughput is a product seat's circuits' bytes/s on the wire over
// d, together.
func seatThroughput(d link.BottleneckStats) float64 {
	var t float64
	for _, r := range d.Flows {
		if isSeatCircuit(r.Name) {
			t += r.Throughput()
		}
	}
	return t
}

// seatLogin is how long the cell's gVisor TCP flows wait for a product
// seat's viewer to log in (Linux's start with the run: kerneltcp has no
// delayed start). Within any warm-up worth measuring after.
const seatLogin = 3 * time.Second

// SeatAsks is what a product seat's viewer asks for: OpenSim's largest
// request, 5,120 kbit/s, so that the viewer's own limit (which fairgrid
// keeps) does not hold it below one share on the grid's faster links.
var SeatAsks = ratecalc.RateFromBits(5_120_000)

// seatPosition is the product seat's agent's place in its region: the
// centre, where OpenSim's factor gives each neighbour 0.85 of the root's
// throttles.
var seatPosition = lludp.Vector3{128, 128, 25}

// newSeat puts the cell's product front-end, its region and neighbours
// and the lab's viewer on b.
func newSeat(b *link.Bottleneck, cell Cell, opt Options, log *slog.Logger) (*demand.Seat, error) {
	a, err := cell.activity()
	if err != nil {
		return nil, fmt.Errorf("fairness: %w", err)
	}
	dc := demand.Config{FrontEnd: cell.Product, Region: cell.Region, Activity: a, Children: cell.Neighbours, Position: seatPosition,
		ViewerAsks: SeatAsks, Interval: opt.Interval, Seed: opt.Seed, WrapSender: opt.wrapSender}
	if opt.SeatConfig != nil {
		opt.SeatConfig(&dc)
	}
	s, err := demand.NewSeat(dc, b, log)
	if err != nil {
		return nil, fmt.Errorf("fairness: %w", err)
	}
	if opt.OnSeat != nil {
		opt.OnSeat(s)
	}
	return s, nil
}

// viewer is a region that sends a viewer datagrams as fast as the
// throttle allows (saturating demand, paced in 10 ms rounds as OpenSim's
// token buckets drip), and the viewer's host, where fairgrid measures the
// circuit and decides: sequence gaps declared lost after three later
// arrivals (NDUPACK, RFC 5348 §5.1) with interpolated times, an RTT
// sample from a ping every PingEvery through both directions of the
// bottleneck, a decision every Interval sent up the bottleneck as a
// request, applied by the region when it arrives.
type viewer struct {
	b                  *link.Bottleneck
	down, up, pingDown link.Flow
	opt                Options
	cfg                throttle.Config
	rng                *rand.Rand
	sizes              []SizeWeight
	total              float64
	mu                 sync.Mutex // guards everything below
	ctl                ratecalc.Controller
	rate               ratecalc.Rate // what the region sends at
	seq                uint32
	highest            uint32
	haveHighest        bool
	lastArrival        time.Time
	gaps               []gap
	pingSent           map[uint32]time.Time
	pingID             uint32
	decisions          []decision
	bytes              float64 // payload bytes received
	allowed, sent      float64 // bytes the throttle allowed the region, and it sent
	shortfall          float64 // 1 − sent/allowed over the measured part
}

type gap struct {
	before, after   uint32
	tBefore, tAfter time.Time
	later           int
}

type decision struct {
	at            time.Time
	rate          ratecalc.Rate
	st            ratecalc.Stats
	bytes         float64 // payload bytes received so far
	allowed, sent float64 // the region's, so far
}

// Message kinds of the rig's datagrams (the first byte).
const (
	kindData byte = iota
	kindPing
	kindPong
	kindRequest
)

func newViewer(b *link.Bottleneck, i int, ctl ratecalc.Controller, cfg throttle.Config, opt Options) (*viewer, error) {
	v := &viewer{b: b, opt: opt, cfg: cfg, ctl: ctl, rng: rand.New(rand.NewPCG(opt.Seed, uint64(i)+0xF00D)),
		sizes: opt.Sizes, pingSent: map[uint32]time.Time{}}
	for _, s := range opt.Sizes {
		if s.Bytes < 8 || s.Bytes > 1472 || !(s.Weight > 0) {
			return nil, fmt.Errorf("fairness: datagram size %d B weight %v: want 8–1472 B and a positive weight", s.Bytes, s.Weight)
		}
		v.total += s.Weight
	}
	var err error
	if v.down, err = b.AddFlow(link.FlowConfig{Name: viewerDown(i), Dir: link.Down, Overhead: udpOverhead, Deliver: v.atViewer}); err != nil {
		return nil, fmt.Errorf("fairness: %w", err)
	}
	if v.up, err = b.AddFlow(link.FlowConfig{Name: fmt.Sprintf("viewer %d up", i), Dir: link.Up, Overhead: udpOverhead, Deliver: v.atRegion}); err != nil {
		return nil, fmt.Errorf("fairness: %w", err)
	}
	v.pingDown = v.down
	return v, nil
}

func (v *viewer) size() int {
	x := v.rng.Float64() * v.total
	for _, s := range v.sizes {
		if x < s.Weight {
			return s.Bytes
		}
		x -= s.Weight
	}
	return v.sizes[len(v.sizes)-1].Bytes
}

// round is how often the region's sender wakes: OpenSim's token buckets
// drip every 10 ms or so. maxCredit bounds what a late wake-up may send at
// once, as a token bucket's depth does; three rounds let a sender that a
// loaded machine runs late still send what it was allowed
// (Result.SenderShortfall says when it did not).
const (
	round     = 10 * time.Millisecond
	maxCredit = 3 * round
)

func (v *viewer) run(ctx context.Context) error {
	// Each region's rounds start at a random phase (and are jittered
	// below): in step, the first viewer's burst would always meet the room
	// a departure made and the last the full queue.
	v.mu.Lock()
	phase := time.Duration(v.rng.Int64N(int64(round)))
	v.mu.Unlock()
	wait := time.NewTimer(phase)
	select {
	case <-ctx.Done():
		wait.Stop()
		return nil
	case <-wait.C:
	}
	start := time.Now()
	v.mu.Lock()
	v.rate = v.cfg.Clamp(v.ctl.Rate(start))
	v.decisions = append(v.decisions, decision{at: start, rate: v.rate, st: v.ctl.Stats()})
	v.mu.Unlock()
	// Each round's wake-up is jittered (0.5–1.5 rounds), so that no
	// viewer's bursts keep meeting the queue at the same point of the
	// others' rounds: a fixed phase gave one viewer of three half the
	// others' share, run after run.
	jitter := func() time.Duration {
		v.mu.Lock()
		defer v.mu.Unlock()
		return round/2 + time.Duration(v.rng.Int64N(int64(round)))
	}
	t := time.NewTimer(jitter())
	defer t.Stop()
	nextDecision := start.Add(v.opt.Interval)
	nextPing := start
	var credit float64
	last := start
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			t.Reset(jitter())
			now := time.Now()
			v.mu.Lock()
			// Credit for the time since the last round, at most maxCredit's
			// worth after a late wake-up (a loaded machine runs the ticker
			// late and drops ticks: without the credit the region would
			// send less than it is allowed, and the viewer would be
			// application-limited, not controlled).
			el := now.Sub(last)
			last = now
			v.allowed += float64(v.rate) * el.Seconds()
			credit += float64(v.rate) * min(el, maxCredit).Seconds()
			for credit > 0 {
				n := v.size()
				credit -= float64(n + udpOverhead)
				v.sent += float64(n + udpOverhead)
				v.seq++
				pkt := make([]byte, n)
				pkt[0] = kindData
				binary.BigEndian.PutUint32(pkt[1:], v.seq)
				v.mu.Unlock()
				v.b.Send(v.down, pkt)
				v.mu.Lock()
			}
			if !now.Before(nextPing) {
				v.pingID++
				v.pingSent[v.pingID] = now
				ping := make([]byte, 16)
				ping[0] = kindPing
				binary.BigEndian.PutUint32(ping[1:], v.pingID)
				nextPing = nextPing.Add(v.opt.PingEvery)
				v.mu.Unlock()
				v.b.Send(v.up, ping)
				v.mu.Lock()
			}
			var req []byte
			if !now.Before(nextDecision) {
				r := v.cfg.Clamp(v.ctl.Rate(now))
				v.decisions = append(v.decisions, decision{at: now, rate: r, st: v.ctl.Stats(), bytes: v.bytes, allowed: v.allowed, sent: v.sent})
				req = make([]byte, 16)
				req[0] = kindRequest
				binary.BigEndian.PutUint64(req[1:], math.Float64bits(float64(r)))
				nextDecision = nextDecision.Add(v.opt.Interval)
			}
			v.mu.Unlock()
			if req != nil {
				v.b.Send(v.up, req)
			}
		}
	}
}

// atRegion handles what the viewer sent up: a ping is answered down the
// same queue as the data (CompletePingCheck), a request is applied.
func (v *viewer) atRegion(pkt []byte) {
	if len(pkt) < 9 {
		return
	}
	switch pkt[0] {
	case kindPing:
		pong := make([]byte, 16)
		copy(pong, pkt)
		pong[0] = kindPong
		v.b.Send(v.pingDown, pong)
	case kindRequest:
		r := math.Float64frombits(binary.BigEndian.Uint64(pkt[1:]))
		v.mu.Lock()
		v.rate = ratecalc.Rate(r)
		v.mu.Unlock()
	}
}

// atViewer is the viewer's host: loss detection and RTT samples.
func (v *viewer) atViewer(pkt []byte) {
	if len(pkt) < 5 {
		return
	}
	now := time.Now()
	v.mu.Lock()
	defer v.mu.Unlock()
	switch pkt[0] {
	case kindPong:
		id := binary.BigEndian.Uint32(pkt[1:])
		if sent, ok := v.pingSent[id]; ok {
			delete(v.pingSent, id)
			v.ctl.OnRTT(now.Sub(sent), now)
		}
		return
	case kindData:
	default:
		return
	}
	seq := binary.BigEndian.Uint32(pkt[1:])
	if v.haveHighest && seq <= v.highest {
		return // the bottleneck keeps order; nothing arrives twice
	}
	if v.haveHighest && seq > v.highest+1 {
		v.gaps = append(v.gaps, gap{before: v.highest, after: seq, tBefore: v.lastArrival, tAfter: now})
	}
	v.ctl.OnPacket(ratecalc.Packet{At: now, Size: len(pkt)})
	v.bytes += float64(len(pkt))
	for i := range v.gaps {
		v.gaps[i].later++
	}
	for len(v.gaps) > 0 && v.gaps[0].later >= 3 {
		g := v.gaps[0]
		v.gaps = v.gaps[1:]
		span := float64(g.after - g.before)
		for s := g.before + 1; s < g.after; s++ {
			frac := float64(s-g.before) / span
			v.ctl.OnPacket(ratecalc.Packet{At: g.tBefore.Add(time.Duration(frac * float64(g.tAfter.Sub(g.tBefore)))), Lost: true})
		}
	}
	v.highest, v.haveHighest, v.lastArrival = seq, true, now
}

// summary is the mean loss event rate and payload over the decisions
// after the warm-up, the loss events per second over them, and every
// decision's rate in bits/s.
func (v *viewer) summary(warmEnd time.Time, seconds float64) (p, seg, eventsPerSec, estimate float64, requests []float64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	var n float64
	var ev0, ev1 uint64
	haveEv0 := false
	var first, last *decision
	for i := range v.decisions {
		if d := &v.decisions[i]; !d.at.Before(warmEnd) {
			if first == nil {
				first = d
			}
			last = d
		}
	}
	if first != nil && last != first && last.allowed > first.allowed {
		v.shortfall = 1 - (last.sent-first.sent)/(last.allowed-first.allowed)
	}
	if first != nil && last != first {
		// The audit's estimate (ratecalc.SegmentLossEventRateOver) from the
		// counters a capture gives, over the measured part.
		ps := ratecalc.SegmentLossEventRateOver(last.bytes-first.bytes, float64(last.st.Lost-first.st.Lost),
			float64(last.st.LossEvents-first.st.LossEvents), last.st.SegmentSize)
		if ps > 0 {
			// On the wire, as TCPBPS: 1,500 bytes per 1,460 of payload.
			estimate = ratecalc.TCPShareRate(ratecalc.NominalSegmentSize, last.st.SRTT, ps).BitsPerSecond() * 1500 / ratecalc.NominalSegmentSize
		}
	}
	for _, d := range v.decisions {
		requests = append(requests, d.rate.BitsPerSecond())
		if d.at.Before(warmEnd) {
			continue
		}
		if !haveEv0 {
			ev0, haveEv0 = d.st.LossEvents, true
		}
		ev1 = d.st.LossEvents
		if d.st.SegmentLossEventRate > 0 {
			p += d.st.SegmentLossEventRate
		} else {
			p += d.st.LossEventRate
		}
		seg += d.st.SegmentSize
		n++
	}
	if n > 0 {
		p /= n
		seg /= n
	}
	if seconds > 0 {
		eventsPerSec = float64(ev1-ev0) / seconds
	}

	return p, seg, eventsPerSec, estimate, requests
}

// trace is the decisions as TracePoints.
func (v *viewer) trace() []TracePoint {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]TracePoint, 0, len(v.decisions))
	for _, d := range v.decisions {
		out = append(out, TracePoint{Seconds: d.at.Sub(v.decisions[0].at).Seconds(), Rate: d.rate.BitsPerSecond(), Stats: d.st})
	}
	return out
}

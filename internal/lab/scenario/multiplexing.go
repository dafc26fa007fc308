package scenario

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/internal/lab/tcm"
	"github.com/fairgrid/fairgrid/internal/lab/tcpflow"
	"github.com/fairgrid/fairgrid/throttle/group"
)

// The multiplexing study (docMultiplexing): an NS2 dumbbell with two
// branches of application-limited TCP game flows, N from node0 (clients)
// to node1 (servers) with a sawtooth delay of period T, M from node6 to
// node7 without it, through one bottleneck (node4–node5). Its parameters
// (lines 53–57): each client sends 1.47 kbit/s and each server 18.13
// kbit/s (WoW's Questing), the bottleneck's one-way delay is 20 ms and
// every other link's 10 ms, 200 s simulated.
const (
	gameUpRate   = 1470.0 / 8  // bytes/s, client→server (line 54): 183.75
	gameDownRate = 18130.0 / 8 // bytes/s, server→client (line 55): 2266.25
	// gameMessage is one update's bytes: the document gives rates only;
	// 100 is tcpflow's default, 1.8 updates a second up.
	gameMessage = 100
	// gameBottleneckDelay is the bottleneck's one-way delay (line 55).
	gameBottleneckDelay = 20 * time.Millisecond
	// gameAccessDelay is the three other 10 ms links of a path (node0–
	// node8, node8–node4 and node5–node1 for the sawtooth branch; node6–
	// node9, node9–node4 and node5–node7 for the plain one, line 56),
	// lumped into one uncongested link per branch between its hosts and
	// the bottleneck, both ways: 50 ms one way in all, as in the document.
	gameAccessDelay = 30 * time.Millisecond
	// gameBuffer is the bottleneck's drop-tail limit in packets: the
	// document does not give it; 50 is NS2's default (Queue/DropTail
	// limit_).
	gameBuffer = 50
	// multiplexPublished is the document's simulated time (line 56).
	multiplexPublished = 200 * time.Second
	multiplexDefault   = 60 * time.Second
	// multiplexWarmup covers the flows' openings (spread over 2 s).
	multiplexWarmup = 5 * time.Second
)

// multiplexCase is one of the document's configurations: N = M flows per
// branch, the bottleneck's rate, and the sawtooth's period T; published
// is each branch's aggregate throughput, the sawtooth branch's ("BW
// node0->node1") then the plain one's ("BW node6->node7"); finding is
// what its conclusions say of the case (lines 83–86); setup is the words
// of the finding that describe the case's link, and scarce whether they
// call it congested.
type multiplexCase struct {
	name      string
	rate      int64 // bits/s, both ways (NS2's duplex link)
	flows     int
	period    time.Duration
	published [2]Figure
	finding   Figure
	setup     string
	scarce    bool
}

// The four cases, lines 61–79: A) N=M=50, 10 Mbit/s, T=50 ms; B) N=M=100,
// 300 kbit/s, T=50 ms; C) N=M=100, 250 kbit/s, T=25 ms; D) N=M=100,
// 250 kbit/s, T=50 ms.
var multiplexCases = []multiplexCase{
	{name: "A", rate: 10_000_000, flows: 50, period: 50 * time.Millisecond,
		published: [2]Figure{cite(docMultiplexing, 63, "BW node0->node1 = 74kbps", 74, "kbit/s"), cite(docMultiplexing, 64, "BW node6->node7 = 75kbps", 75, "kbit/s")},
		finding:   cite(docMultiplexing, 83, "No difference is observed when bandwidth is high enough (A)", 0, ""), setup: "bandwidth is high enough"},
	{name: "B", rate: 300_000, flows: 100, period: 50 * time.Millisecond,
		published: [2]Figure{cite(docMultiplexing, 68, "BW node0->node1 = 144kbps", 144, "kbit/s"), cite(docMultiplexing, 69, "BW node6->node7 = 147kbps", 147, "kbit/s")},
		finding:   cite(docMultiplexing, 84, "Small differences are observed if bandwidth is a bit higher than the sum", 0, ""), setup: "bandwidth is a bit higher than the sum"},
	{name: "C", rate: 250_000, flows: 100, period: 25 * time.Millisecond,
		published: [2]Figure{cite(docMultiplexing, 73, "BW node0->node1 = 117kbps", 117, "kbit/s"), cite(docMultiplexing, 74, "BW node6->node7 = 131kbps", 131, "kbit/s")},
		finding:   cite(docMultiplexing, 86, "The differences become more significant if bandwidth is scarce (C) and (D)", 0, ""), setup: "bandwidth is scarce", scarce: true},
	{name: "D", rate: 250_000, flows: 100, period: 50 * time.Millisecond,
		published: [2]Figure{cite(docMultiplexing, 78, "BW node0->node1 = 115kbps", 115, "kbit/s"), cite(docMultiplexing, 79, "BW node6->node7 = 133kbps", 133, "kbit/s")},
		finding:   cite(docMultiplexing, 86, "The differences become more significant if bandwidth is scarce (C) and (D)", 0, ""), setup: "bandwidth is scarce", scarce: true},
}

// multiplexSimulated is where the document gives its simulated time.
var multiplexSimulated = ref(docMultiplexing, 56, "simulation duration: 200 sec")

// muxVariant is what the delayed branch goes through: the document's
// sawtooth delay, or (ours) TCM.
type muxVariant string

const (
	// variantSawtooth holds the branch's client→server packets until the
	// end of their round of T (0 to T, T/2 on average: lines 31–33), on
	// the way into the bottleneck; nothing else changes.
	variantSawtooth muxVariant = "sawtooth"
	// variantTCM is ours: the branch's packets, both ways, held for the
	// round, their headers compressed and bundled (multiplexer).
	variantTCM muxVariant = "tcm"
)

func multiplexing() Scenario {
	return Scenario{Name: "multiplexing", DefaultDuration: multiplexDefault,
		Summary: "the tcmtf study's cases A–D: N=M=50/100 application-limited game TCP flows each way, one branch with a sawtooth delay; each branch's client→server throughput (and ours: TCM)",
		Run:     runMultiplexing, seeding: multiplexSeeding}
}

// ns2QueueLimit is where NS2 sets its drop-tail default of 50 packets
// (ns-2's tcl/lib/ns-default.tcl: "Queue set limit_ 50"); the document
// does not give its buffer.
const ns2QueueLimit = "NS2's default Queue limit_, tcl/lib/ns-default.tcl"

// gameHeaderBytes is what a gVisor segment adds on the wire: IPv4 20,
// TCP 20, timestamps 12.
const gameHeaderBytes = 52

// upWireKbps is what a case's updates offer the bottleneck client→server
// on the wire, both branches together: each flow's updates of
// gameMessage bytes at gameUpRate, each with its headers; the servers'
// data's ACKs come on top.
func (c multiplexCase) upWireKbps() float64 {
	updates := gameUpRate / gameMessage
	return 2 * float64(c.flows) * updates * (gameMessage + gameHeaderBytes) * 8 / 1000
}

// ackWireKbps is, at most, what the ACKs of the servers' data add
// client→server on the wire, both branches together: one ACK of
// gameHeaderBytes a data segment of gameMessage bytes, for what the
// servers offer or, if less, what the downlink carries.
func (c multiplexCase) ackWireKbps() float64 {
	segments := min(2*float64(c.flows)*gameDownRate/gameMessage, float64(c.rate)/8/(gameMessage+gameHeaderBytes))
	return segments * gameHeaderBytes * 8 / 1000
}

// roundPackets is how many client→server packets one round of the
// sawtooth releases at once: each flow's updates and the ACKs of the
// server's messages (gVisor acknowledges every segment) over T.
func (c multiplexCase) roundPackets() float64 {
	perFlow := (gameUpRate + gameDownRate) / gameMessage
	return float64(c.flows) * perFlow * c.period.Seconds()
}

// offeredKbps is what one branch's flows write client→server, the
// updates' payload: flows × 1.47 kbit/s (line 54). A branch carries at
// most that, but for a backlog from the warm-up.
func (c multiplexCase) offeredKbps() float64 {
	return float64(c.flows) * gameUpRate * 8 / 1000
}

// multiplexDiffers says how a case's runs differ from the document's: the
// choices that are ours, and what they cause, beside the case's own
// set-up as the document's finding describes it.
func multiplexDiffers(c multiplexCase, dur time.Duration) string {
	// A round holds the branch's updates and the ACKs of the servers'
	// data that got through: all of it while the downlink carries what
	// the servers offer, and then about 61 packets in A; on a link the
	// servers' data overwhelms, no count of ours stands for it.
	round := fmt.Sprintf("about %.0f packets (updates and the ACKs of the servers' data) into %d slots", c.roundPackets(), gameBuffer)
	if down := 2 * float64(c.flows) * gameDownRate * 8; down > float64(c.rate) {
		round = fmt.Sprintf("the branch's updates and the ACKs of what server data gets through: the servers offer %.1f Mbit/s down (%d × 18.13 kbit/s), %.0f times the %s downlink (the rate applies both ways, as on NS2's duplex link, if the document's was symmetric)",
			down/1e6, 2*c.flows, down/float64(c.rate), rateText(c.rate))
	}
	d := fmt.Sprintf("%.0f s measured after %.0f s (published: 200 s simulated, %s); gVisor Reno (NS2 FullTCP); ours, none given by the document: 100-byte messages both ways, "+
		"a %d-packet drop-tail bottleneck (%s), the 10 ms links as one 30 ms access link per branch with no rate, so that a round of the sawtooth "+
		"reaches the bottleneck at one instant: %s; sawtooth on the clients' side "+
		"of the bottleneck only (the topology comment's node8→node4)",
		dur.Seconds(), multiplexWarmup.Seconds(), multiplexSimulated, gameBuffer, ns2QueueLimit, round)
	// Like with like: what the flows write against the link, as the
	// document's "BW" figures are set against it; the wire load is ours
	// (our message size), which the document does not give.
	written := 2 * c.offeredKbps()
	congested := written > float64(c.rate)/1000
	side := "under"
	if congested {
		side = "over"
	}
	as := "as in"
	if congested != c.scarce {
		as = "unlike"
	}
	wire, acks := c.upWireKbps(), c.ackWireKbps()
	wireSide := "under"
	if wire+acks > float64(c.rate)/1000 {
		wireSide = "over"
	}
	d += "; a branch's throughput counts all its flows, those that delivered nothing in the measured part (stalled in backoff or never opened: the run does not record which) included, so part of a branch's shortfall is flows that got nothing, as the document's aggregate counts all of its own (the rows \"flows that delivered nothing\" give how many, seed by seed)"
	return d + fmt.Sprintf("; each branch's %d flows write %.1f kbit/s of updates (%d × 1.47 kbit/s, %s), %.0f kbit/s for both branches, %s the %s link, %s the document's case %s (%s: \"%s\"; its \"BW\" figures sum to %.0f kbit/s, %s and :%d); "+
		"ours, the document giving no message size: with our %d-byte messages the updates are about %.0f kbit/s on the wire (%d bytes each with headers), and the ACKs of the servers' data (%d bytes, one a segment) up to about %.0f kbit/s more, %.0f kbit/s together, %s the link",
		c.flows, c.offeredKbps(), c.flows, gameRates, written, side, rateText(c.rate), as, c.name, c.finding.Source(), c.setup,
		c.published[0].Value+c.published[1].Value, c.published[0].Source(), c.published[1].Line,
		gameMessage, wire, gameMessage+gameHeaderBytes, gameHeaderBytes, acks, wire+acks, wireSide)
}

// rateText is a link rate as people write it.
func rateText(bps int64) string {
	if bps >= 1_000_000 {
		return num(float64(bps)/1e6, "Mbit/s")
	}
	return num(float64(bps)/1000, "kbit/s")
}

// multiplexParallel caps how many multiplexing runs go at once, whatever
// Options.Parallel: each is hundreds of flows whose timers wake the
// scheduler thousands of times a second, and 16 at once on this 2-core
// machine starved each other (case A's branches carried 15 of their
// 73 kbit/s).
const multiplexParallel = 4

func runMultiplexing(ctx context.Context, o Options) (Result, error) {
	o.Parallel = min(max(o.Parallel, 1), multiplexParallel)
	return runSeeding(ctx, o, multiplexSeeding(o))
}

func multiplexSeeding(o Options) seeding {
	dur := o.duration(multiplexDefault, multiplexPublished)
	variants := []muxVariant{variantSawtooth, variantTCM}
	return seeding{func(o Options) []job { return multiplexJobs(o.Seed, dur, multiplexCases, variants) },
		func(jobs []job, runs []RunResult) Result {
			return multiplexResult(multiplexCases, variants, dur, runs)
		}}
}

// multiplexJobs are one run per case and variant, in that order.
func multiplexJobs(seed uint64, dur time.Duration, cases []multiplexCase, variants []muxVariant) []job {
	var jobs []job
	for _, c := range cases {
		for _, v := range variants {
			jobs = append(jobs, job{name: fmt.Sprintf("multiplexing case=%s branch=%s rate=%dk flows=%d+%d T=%v", c.name, v, c.rate/1000, c.flows, c.flows, c.period),
				length: multiplexWarmup + dur,
				custom: func(ctx context.Context, tap func(link.Event), log *slog.Logger) (Measurement, error) {
					return runMultiplexCase(ctx, c, v, seed, dur, tap, log)
				}})
		}
	}
	return jobs
}

// gameFlow is flow i of branch b (0 the delayed one, 1 the plain one).
func gameFlow(b, i int) tcpflow.FlowConfig {
	return tcpflow.FlowConfig{Name: fmt.Sprintf("branch%d game%d", b, i), CC: tcpflow.Reno,
		// Spread the openings over 2 s, as players join.
		Start: time.Duration(i*2+b) * 10 * time.Millisecond,
		App:   &tcpflow.AppConfig{UpRate: wholeBytes(gameUpRate, i), DownRate: wholeBytes(gameDownRate, i), Message: gameMessage}}
}

// wholeBytes is flow i's share of a rate of bytes/s that is not a whole
// number (tcpflow paces whole bytes/s): the flows take turns at the
// fraction, so that flows 0 to n-1 together write n × rate to within a
// byte/s (1.47 kbit/s is 183.75 B/s: three flows in four write 184, the
// fourth 183).
func wholeBytes(rate float64, i int) int64 {
	return int64(math.Floor(float64(i+1)*rate)) - int64(math.Floor(float64(i)*rate))
}

// BranchResult is one branch over the measured part of a run.
type BranchResult struct {
	Branch string `json:"branch"`
	// UpKbps is what the branch's servers read (client→server goodput,
	// the document's "BW"); DownKbps what its clients read.
	UpKbps   float64 `json:"up_kbps"`
	DownKbps float64 `json:"down_kbps"`
	// Up is the branch's client→server packets on the shared bottleneck
	// (TCM's: its bundles).
	Up branchResult `json:"up"`
}

// branchResult is one direction of a branch on the shared link: its
// native IP packets' bytes delivered (IPKbps), its packets (bundles for
// TCM), their mean size on the wire, the share the full queue dropped,
// their mean wait in it, and for TCM the header compression's savings.
type branchResult struct {
	GoodputKbps      float64 `json:"goodput_kbps"`
	IPKbps           float64 `json:"ip_kbps"`
	PacketsPerSecond float64 `json:"packets_per_second"`
	MeanPacketBytes  float64 `json:"mean_packet_bytes"`
	DropRate         float64 `json:"drop_rate"`
	QueueDelayMeanMs float64 `json:"queue_delay_mean_ms"`
	// Compression (TCM): the bytes its header compression saved (native
	// packets' bytes less what they took in bundles), per second and as a
	// share of the native bytes; the share of packets sent compressed;
	// and the compressed packets the far end tossed per second (their
	// context lost with a bundle).
	SavedBytesPerSecond float64 `json:"compression_saved_bytes_per_second,omitempty"`
	SavedShare          float64 `json:"compression_saved_share,omitempty"`
	CompressedShare     float64 `json:"compressed_share,omitempty"`
	TossedPerSecond     float64 `json:"tossed_per_second,omitempty"`
}

// withCompression adds the multiplexer's counts over seconds.
func (r branchResult) withCompression(s tcm.Stats, seconds float64) branchResult {
	if s.Packets == 0 || seconds <= 0 {
		return r
	}
	saved := float64(s.NativeBytes) - float64(s.WireBytes)
	r.SavedBytesPerSecond = saved / seconds
	r.SavedShare = saved / float64(s.NativeBytes)
	r.CompressedShare = float64(s.Compressed) / float64(s.Packets)
	r.TossedPerSecond = float64(s.Tossed) / seconds
	return r
}

// branchPackets sums a branch's flows on the shared link.
type branchPackets struct {
	arrived, dropped, bytes uint64
	// delivered is the bytes of native IP packets that reached the far
	// end.
	delivered uint64
	// waited is the queueing delay summed over the forwarded packets.
	waited time.Duration
}

func (c *branchPackets) add(r link.FlowReport) {
	c.arrived += r.Arrived
	c.dropped += r.Dropped()
	c.bytes += r.ArrivedBytes
	c.delivered += r.DeliveredBytes
	c.waited += time.Duration(r.Arrived-r.Dropped()) * r.QueueDelay.Mean()
}

func (c branchPackets) result(goodputKbps, seconds float64) branchResult {
	r := branchResult{GoodputKbps: goodputKbps}
	if c.arrived == 0 || seconds <= 0 {
		return r
	}
	r.IPKbps = float64(c.delivered) * 8 / 1000 / seconds
	r.PacketsPerSecond = float64(c.arrived) / seconds
	r.MeanPacketBytes = float64(c.bytes) / float64(c.arrived)
	r.DropRate = float64(c.dropped) / float64(c.arrived)
	if forwarded := c.arrived - c.dropped; forwarded > 0 {
		r.QueueDelayMeanMs = float64(c.waited/time.Duration(forwarded)) / float64(time.Millisecond)
	}
	return r
}

// branchPath carries a branch's packets from its access link onto the
// shared bottleneck and, at the far end, hands them to their stack.
type branchPath interface {
	via(dir link.Direction, packet []byte)
	Run(ctx context.Context) error
}

// tcmPath is the TCM branch's path: its multiplexer holds every packet.
type tcmPath struct{ *tcm.Multiplexer }

func (p tcmPath) via(dir link.Direction, packet []byte) { p.Hold(dir, packet) }

// sawtoothPath puts a branch's packets on the shared bottleneck as flows
// "NAME up" and "NAME down"; with a period, each client→server packet
// first waits for the end of its round (a packet arriving at the start
// of a round waits T, one at its end nothing: the document's sawtooth,
// lines 31–33). Without one it is the plain branch's straight path.
type sawtoothPath struct {
	period time.Duration
	shared *link.Bottleneck
	flows  [2]link.Flow
	mu     sync.Mutex
	held   [][]byte
}

func newSawtoothPath(shared *link.Bottleneck, name string, period time.Duration, receive func(dir link.Direction, packet []byte)) (*sawtoothPath, error) {
	p := &sawtoothPath{period: period, shared: shared}
	for _, dir := range []link.Direction{link.Up, link.Down} {
		f, err := shared.AddFlow(link.FlowConfig{Name: name + " " + dir.String(), Dir: dir, Deliver: func(packet []byte) { receive(dir, packet) }})
		if err != nil {
			return nil, fmt.Errorf("scenario: %w", err)
		}
		p.flows[dir] = f
	}
	return p, nil
}

func (p *sawtoothPath) via(dir link.Direction, packet []byte) {
	if dir == link.Up && p.period > 0 {
		p.mu.Lock()
		p.held = append(p.held, packet)
		p.mu.Unlock()
		return
	}
	p.shared.Send(p.flows[dir], packet)
}

// Run ends a round every period (none without one) until ctx ends.
func (p *sawtoothPath) Run(ctx context.Context) error {
	if p.period <= 0 {
		<-ctx.Done()
		return nil
	}
	return tcm.Rounds(ctx, p.period, func() {
		p.mu.Lock()
		held := p.held
		p.held = nil
		p.mu.Unlock()
		for _, packet := range held {
			p.shared.Send(p.flows[link.Up], packet)
		}
	})
}

// sharedFlows are the names of a path's flows on the shared bottleneck.
func sharedFlowName(v muxVariant, b int) string {
	switch {
	case b == 1:
		return "plain"
	case v == variantTCM:
		return tcm.FlowName
	}
	return string(variantSawtooth)
}

// runMultiplexCase runs c's two branches, each with its own hosts (a
// tcpflow net on an access link of its own), through one shared
// bottleneck: branch 0 through v (the sawtooth, or TCM), branch 1
// straight. It measures both after the warm-up; Measurement.Branches has
// them in that order. Every part runs in one group.Group: the first
// failure ends the run and is returned.
func runMultiplexCase(ctx context.Context, c multiplexCase, v muxVariant, seed uint64, dur time.Duration, tap func(link.Event), log *slog.Logger) (Measurement, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	pc := link.PipeConfig{Rate: c.rate / 8, Delay: gameBottleneckDelay, Buffer: gameBuffer}
	shared, err := link.NewBottleneck(link.BottleneckConfig{Up: pc, Down: pc, Seed: seed, Tap: tap}, log)
	if err != nil {
		return Measurement{}, fmt.Errorf("scenario: %w", err)
	}
	var g group.Group
	g.Add(shared.Run, nil)
	var nets [2]*tcpflow.Net
	var flows [2][]*tcpflow.Flow
	var mux *tcm.Multiplexer
	for b := range nets {
		access := link.PipeConfig{Delay: gameAccessDelay}
		al, err := link.NewBottleneck(link.BottleneckConfig{Up: access, Down: access, Seed: seed}, log)
		if err != nil {
			return Measurement{}, fmt.Errorf("scenario: %w", err)
		}
		n, err := tcpflow.New(al, tcpflow.Config{Seed: seed + uint64(b)}, log)
		if err != nil {
			return Measurement{}, fmt.Errorf("scenario: %w", err)
		}
		defer n.Close()
		nets[b] = n
		var path branchPath
		switch {
		case b == 0 && v == variantTCM:
			mux, err = tcm.New(shared, c.period, n.Receive, log)
			path = tcmPath{mux}
		case b == 0:
			path, err = newSawtoothPath(shared, sharedFlowName(v, b), c.period, n.Receive)
		default:
			path, err = newSawtoothPath(shared, sharedFlowName(v, b), 0, n.Receive)
		}
		if err != nil {
			return Measurement{}, err
		}
		for i := range c.flows {
			f, err := n.AddFlowVia(gameFlow(b, i), path.via)
			if err != nil {
				return Measurement{}, fmt.Errorf("scenario: %w", err)
			}
			flows[b] = append(flows[b], f)
		}
		g.Add(al.Run, nil)
		g.Add(n.Run, nil)
		g.Add(path.Run, nil)
	}

	var m Measurement
	g.Add(func(ctx context.Context) error {
		read := func() (out [2][2][]uint64) {
			for b := range flows {
				for _, f := range flows[b] {
					out[b][link.Up] = append(out[b][link.Up], f.Read(link.Up))
					out[b][link.Down] = append(out[b][link.Down], f.Read(link.Down))
				}
			}
			return out
		}
		compression := func() tcm.Stats {
			if mux == nil {
				return tcm.Stats{}
			}
			return mux.Compression(link.Up)
		}
		if err := sleep(ctx, multiplexWarmup); err != nil {
			return fmt.Errorf("scenario: %w before the warm-up ended", err)
		}
		first, read0, compressionFirst := shared.Stats(), read(), compression()
		if err := sleep(ctx, dur); err != nil {
			return fmt.Errorf("scenario: %w before the run ended", err)
		}
		last, readEnd, compressionLast := shared.Stats(), read(), compression()
		if mux != nil {
			if n := mux.Malformed(); n > 0 {
				return fmt.Errorf("scenario: %d bundles did not parse", n)
			}
		}
		d := last.Since(first)
		m = Measurement{Seconds: d.Up.At.Sub(d.Up.Start).Seconds(),
			Up: flowResult(link.FlowReport{Name: "all", Dir: link.Up, FlowStats: d.Up}), Down: flowResult(link.FlowReport{Name: "all", Dir: link.Down, FlowStats: d.Down})}
		m.Stacks[0], m.Stacks[1] = nets[1].Stats()
		for b := range flows {
			var kbps [2]float64
			for i, f := range flows[b] {
				fc := f.Config()
				for _, dir := range []link.Direction{link.Up, link.Down} {
					kbps[dir] += float64(readEnd[b][dir][i]-read0[b][dir][i]) * 8 / m.Seconds / 1000
				}
				m.TCP = append(m.TCP, TCPResult{Name: fc.Name, CC: string(fc.CC), GoodputBPS: float64(readEnd[b][link.Up][i]-read0[b][link.Up][i]) * 8 / m.Seconds})
			}
			var packets branchPackets
			if r, ok := d.Flow(sharedFlowName(v, b) + " up"); ok {
				if b == 0 && mux != nil {
					r.DeliveredBytes = compressionLast.Since(compressionFirst).RestoredBytes
				}
				packets.add(r)
			}
			br := BranchResult{Branch: sharedFlowName(v, b), UpKbps: kbps[link.Up], DownKbps: kbps[link.Down], Up: packets.result(kbps[link.Up], m.Seconds)}
			if b == 0 && mux != nil {
				br.Up = br.Up.withCompression(compressionLast.Since(compressionFirst), m.Seconds)
			}
			m.Branches = append(m.Branches, br)
		}
		return nil
	}, nil)
	if err := g.Run(ctx); err != nil {
		return Measurement{}, err
	}
	if len(m.Branches) != 2 {
		return Measurement{}, errors.New("scenario: the run ended before it was measured")
	}
	return m, nil
}

// sleep waits d, or until ctx ends (its cause then).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// multiplexResult builds the scenario's table and comparisons from one
// seed's runs, in multiplexJobs' order.
func multiplexResult(cases []multiplexCase, variants []muxVariant, dur time.Duration, runs []RunResult) Result {
	res := Result{Scenario: "multiplexing", Runs: runs}
	t := Table{Title: "multiplexing: client→server throughput of each branch of application-limited game TCP flows (the document's cases A–D; TCM is ours)",
		Columns: []string{"case", "bottleneck", "flows", "T ms", "delayed by", "delayed kbit/s", "published", "plain kbit/s", "published", "delayed/plain", "published", "source",
			"up packets/s", "bytes/packet", "dropped", "queue ms", "compression saved"},
		Notes: []string{
			"throughput: what the servers read (client→server goodput), summed over a branch: the document's \"BW node0->node1\" (the delayed branch) and \"BW node6->node7\" (the plain one). Each flow sends 1.47 kbit/s up and 18.13 kbit/s down.",
			"sawtooth: the document's set-up: the delayed branch's client→server packets wait for the end of their round of T (0 to T, T/2 on average) before the bottleneck; nothing else changes. We read the topology comment (lines 27–28: \"from node8 to node4, and from node9 to node4\") against its text (lines 46–48: the delay on the node0–node1 branch only) and delay only node8→node4, the clients' side; the ACKs and the server's data go undelayed.",
			"tcm (ours, not in the document): " + muxNote,
			"up packets/s, bytes/packet (on the wire), dropped and queue: each branch's client→server packets on the bottleneck, delayed / plain (TCM's: its bundles).",
			"differs: each case's row of the summary says how our set-up differs from the document's.",
		}}
	i := 0
	for _, c := range cases {
		for _, v := range variants {
			r := runs[i]
			i++
			b := r.Measurement.Branches
			if len(b) != 2 {
				continue
			}
			ratio := 0.0
			if b[1].UpKbps > 0 {
				ratio = b[0].UpKbps / b[1].UpKbps
			}
			published := c.published[0].Value / c.published[1].Value
			saved := "-"
			if v == variantTCM {
				saved = fmt.Sprintf("%.1f kbit/s (%.0f %%), tossed %.1f/s", b[0].Up.SavedBytesPerSecond*8/1000, 100*b[0].Up.SavedShare, b[0].Up.TossedPerSecond)
			}
			t.Rows = append(t.Rows, []string{c.name, fmt.Sprintf("%dk", c.rate/1000), fmt.Sprintf("%d+%d", c.flows, c.flows), fmt.Sprint(c.period.Milliseconds()), string(v),
				fmt.Sprintf("%.0f", b[0].UpKbps), fmt.Sprintf("%.0f", c.published[0].Value), fmt.Sprintf("%.0f", b[1].UpKbps), fmt.Sprintf("%.0f", c.published[1].Value),
				fmt.Sprintf("%.2f", ratio), fmt.Sprintf("%.2f", published), fmt.Sprintf("%s, :%d", c.published[0].Source(), c.published[1].Line),
				fmt.Sprintf("%.0f / %.0f", b[0].Up.PacketsPerSecond, b[1].Up.PacketsPerSecond), fmt.Sprintf("%.0f / %.0f", b[0].Up.MeanPacketBytes, b[1].Up.MeanPacketBytes),
				fmt.Sprintf("%.1f / %.1f %%", 100*b[0].Up.DropRate, 100*b[1].Up.DropRate), fmt.Sprintf("%.0f / %.0f", b[0].Up.QueueDelayMeanMs, b[1].Up.QueueDelayMeanMs), saved})
			res.Comparisons = append(res.Comparisons, multiplexComparisons(c, v, dur, b, ratio)...)
			if v != variantTCM {
				res.Comparisons = append(res.Comparisons, idleFlows(c, dur, r.Measurement.TCP)...)
			}
		}
	}
	res.Tables = append(res.Tables, t)
	return res
}

// idleFlows counts, per branch, the flows that delivered nothing to their
// server in the measured part (stalled in backoff or never opened: the
// run does not record which), which each branch's throughput counts, as
// the document's aggregate counts all its flows; reported.
func idleFlows(c multiplexCase, dur time.Duration, flows []TCPResult) []Comparison {
	var out []Comparison
	for b, name := range []string{"sawtooth branch (node0->node1)", "plain branch (node6->node7)"} {
		n := 0
		for _, f := range flows {
			if strings.HasPrefix(f.Name, fmt.Sprintf("branch%d ", b)) && f.GoodputBPS <= 0 {
				n++
			}
		}
		out = append(out, ours("multiplexing", c.name, name+" flows that delivered nothing in the measured part", "flows",
			fmt.Sprintf("the document gives no per-flow figure; of the branch's %d flows", c.flows), 0, float64(n), multiplexDiffers(c, dur), nil))
	}
	return out
}

// multiplexComparisons are a run's rows of the summary: for the
// sawtooth, each branch beside its published throughput and their ratio
// beside the conclusions' finding, each judged on the document's own
// figures (as printed, to the kbit/s) against the seeds' range; for TCM
// (ours), the ratio and what compression saved, reported.
func multiplexComparisons(c multiplexCase, v muxVariant, dur time.Duration, b []BranchResult, ratio float64) []Comparison {
	differs := multiplexDiffers(c, dur)
	kase := c.name
	if v == variantTCM {
		return []Comparison{
			ours("multiplexing", kase+" TCM", "TCM branch / plain branch, client→server", "×", "TCM (header compression and bundling) is not in the document", 0, ratio, differs, nil),
			ours("multiplexing", kase+" TCM", "client→server bytes header compression saved", "share", "TCM is not in the document", 0, b[0].Up.SavedShare, differs, nil),
		}
	}
	var out []Comparison
	for k, name := range []string{"sawtooth branch (node0->node1)", "plain branch (node6->node7)"} {
		p := c.published[k].Value
		out = append(out, c.published[k].compare("multiplexing", kase, name+" client→server", "kbit/s", b[k].UpKbps, differs,
			atMostOffered(c, p, publishedInRange(p-0.5, p+0.5, "throughput", "as printed, to the kbit/s"))))
	}
	a, p := c.published[0].Value, c.published[1].Value
	lo, hi := (a-0.5)/(p+0.5), (a+0.5)/(p-0.5)
	// A's finding speaks of its ratio ("No difference"); B's, C's and
	// D's print none ("Small differences", "more significant"): their row
	// stands on the throughputs it divides, the finding in its reason.
	stands := c.published[0]
	inRange := publishedInRange(lo, hi, "ratio", "from the throughputs as printed")
	j := func(s []float64) (string, string) {
		judgement, why := inRange(s)
		return judgement, fmt.Sprintf("%s; the document's finding: \"%s\" (%s)", why, c.finding.Quote, c.finding.Source())
	}
	if strings.HasPrefix(c.finding.Quote, "No difference") {
		// "No difference" (line 83): the ratio 1, not merely a central
		// half that meets the printed figures' range.
		stands, j = c.finding, noDifference(lo, hi, "from the throughputs as printed")
	}
	r := stands.compare("multiplexing", kase, "sawtooth / plain, client→server", "×", ratio, differs, j)
	r.Published = a / p
	r.PublishedText = fmt.Sprintf("%.2f (%.0f/%.0f, %s and :%d)", a/p, a, p, c.published[0].Source(), c.published[1].Line)
	return append(out, r)
}

// atMostOffered judges a branch's throughput with j on what the branch
// can carry: at most what its flows write (offeredKbps), a seed over it
// (a backlog from the warm-up delivered in the measured part) counting
// as that. A published figure whose printed range lies wholly over what
// the flows write cannot be met by any run of ours, and one whose range
// starts at it only by a run that delivers all of it: the claim is not
// tested, and the row reports what the branch delivered of it.
func atMostOffered(c multiplexCase, published float64, j judge) judge {
	offered := c.offeredKbps()
	return func(s []float64) (string, string) {
		lo, hi := centralHalf(s)
		delivered := fmt.Sprintf("%s, %s–%s %% of what they write", halfText(s), num(100*lo/offered, ""), num(100*hi/offered, ""))
		switch floor := published - 0.5; {
		case floor > offered+0.05:
			return Reported, fmt.Sprintf("not judged: the published %s kbit/s (%s–%s as printed) lies over the %.1f kbit/s the branch's %d flows write (%s), so no run of ours can meet it; %s",
				num(published, ""), num(floor, ""), num(published+0.5, ""), offered, c.flows, gameRates, delivered)
		case floor > offered-0.05:
			return Reported, fmt.Sprintf("not judged: the published %s kbit/s (%s–%s as printed) starts at the %.1f kbit/s the branch's %d flows write (%s), so only a run that delivers every bit they write could meet it, and any shortfall at all reads as a deficit; %s",
				num(published, ""), num(floor, ""), num(published+0.5, ""), offered, c.flows, gameRates, delivered)
		}
		capped := make([]float64, len(s))
		over := 0
		for i, x := range s {
			capped[i] = min(x, offered)
			if x > offered {
				over++
			}
		}
		judgement, why := j(capped)
		why += fmt.Sprintf("; judged on at most the %.1f kbit/s the branch's %d flows write (%s)", offered, c.flows, gameRates)
		if over > 0 {
			why += fmt.Sprintf(", which %d of %d seeds measured over (a backlog from the warm-up) and count as it", over, len(s))
		}
		return judgement, why
	}
}

// muxNote says what the TCM branch does.
const muxNote = "the branch's packets, both ways, wait in a multiplexer for the end of its round of T (a sawtooth delay of 0 to T), their TCP/IP headers compressed against a per-flow context (52 -> 14 bytes; a flow's first packet, SYN/FIN/RST, a resend and a change in its constant fields in full, RFC 1144-style), and cross the bottleneck together in bundles of up to 1,500 bytes (IPv4 and UDP headers, then each packet behind its 2-byte length); the far end rebuilds the native packets."

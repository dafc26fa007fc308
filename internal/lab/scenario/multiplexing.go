package scenario

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/internal/lab/tcpflow"
)

// The application-limited TCP study's game flows (as issue #14 quotes
// it): each client sends 1.47 kbit/s and its server 18.13 kbit/s, over a
// bottleneck with 20 ms of delay.
const (
	gameUpRate   = 1470 / 8  // bytes/s
	gameDownRate = 18130 / 8 // bytes/s
	gameDelay    = 20 * time.Millisecond
	gameMessage  = 100 // bytes per update, tcpflow's default
	// gameBuffer is the bottleneck's drop-tail limit in packets: the
	// study's is not quoted; 50 is NS2's default (Queue/DropTail limit_),
	// the simulator such studies ran on.
	gameBuffer    = 50
	multiplexSrc  = "application-limited TCP study (issue #14 quoting it; the paper not read)"
	multiplexNote = "configurations as read from the issue's summary: (rate, flows per branch, T) = (10M, 4, 25 ms), (10M, 8, 25 ms), (300k, 8, 25 ms), (250k, 8, 50 ms)"
	muxNote       = "multiplexed: the branch's packets, both ways, wait in a multiplexer for the end of its round of T (a sawtooth delay of 0 to T) and cross the bottleneck together, in bundles of up to 1,500 bytes (IPv4 and UDP headers, then each packet behind its 2-byte length); headers are not compressed."
)

// The multiplexer's bundles, as TCM and Simplemux (Saldana et al.'s
// tunnelling, compressing and multiplexing of game traffic) carry them: a
// tunnel packet of at most an Ethernet MTU (RFC 894) whose payload is the
// multiplexed packets, each behind a separator giving its length.
const (
	// bundleMTU bounds a bundle on the wire, its tunnel headers included;
	// a round's packets that do not fit go in further bundles.
	bundleMTU = 1500
	// bundleTunnel is the tunnel's IPv4 and UDP headers (RFC 791, RFC
	// 768), counted by the bottleneck as a flow's Overhead.
	bundleTunnel = 28
	// bundleSeparator is the length in front of each packet (Simplemux's
	// separator is one to three bytes; two cover an IP packet's length).
	bundleSeparator = 2
)

// multiplexCase is one configuration: a bottleneck rate, N flows in each
// branch, and the multiplexing period T of the second branch; Published
// is each branch's aggregate throughput (kbit/s), plain then multiplexed.
type multiplexCase struct {
	rate      int64 // bits/s
	flows     int
	period    time.Duration
	published [2]float64
}

var multiplexCases = []multiplexCase{
	{10_000_000, 4, 25 * time.Millisecond, [2]float64{74, 75}},
	{10_000_000, 8, 25 * time.Millisecond, [2]float64{144, 147}},
	{300_000, 8, 25 * time.Millisecond, [2]float64{117, 131}},
	{250_000, 8, 50 * time.Millisecond, [2]float64{115, 133}},
}

func multiplexing() Scenario {
	return Scenario{Name: "multiplexing", DefaultDuration: 60 * time.Second,
		Summary: "N plain and N multiplexed application-limited game TCP flows (1.47/18.13 kbit/s) through 10M/300k/250k bottlenecks; each branch's aggregate throughput",
		Run:     runMultiplexing}
}

const multiplexWarmup = 5 * time.Second

// multiplexRun is one configuration's run.
type multiplexRun struct {
	name     string
	c        multiplexCase
	seed     uint64
	duration time.Duration
}

func multiplexRuns(o Options, dur time.Duration, cases []multiplexCase) []multiplexRun {
	var runs []multiplexRun
	for _, c := range cases {
		runs = append(runs, multiplexRun{name: fmt.Sprintf("multiplexing rate=%dk flows=%d+%d T=%v", c.rate/1000, c.flows, c.flows, c.period),
			c: c, seed: o.Seed, duration: dur})
	}
	return runs
}

// gameFlow is flow i of a branch (0 plain, 1 multiplexed).
func gameFlow(branch, i int) tcpflow.FlowConfig {
	return tcpflow.FlowConfig{Name: fmt.Sprintf("branch%d game%d", branch, i), CC: tcpflow.Reno,
		// Spread the openings, as players join.
		Start: time.Duration(i*2+branch) * 50 * time.Millisecond,
		App:   &tcpflow.AppConfig{UpRate: gameUpRate, DownRate: gameDownRate, Message: gameMessage}}
}

// branchResult is one branch's downstream over the measured part of a
// run: what its clients read, and its packets on the shared link (the
// multiplexed branch's are bundles), their mean size on the wire, the
// share the full queue dropped, and their mean wait in it.
type branchResult struct {
	GoodputKbps      float64 `json:"goodput_kbps"`
	PacketsPerSecond float64 `json:"packets_per_second"`
	MeanPacketBytes  float64 `json:"mean_packet_bytes"`
	DropRate         float64 `json:"drop_rate"`
	QueueDelayMeanMs float64 `json:"queue_delay_mean_ms"`
}

// branchPackets sums a branch's flows on the shared link.
type branchPackets struct {
	arrived, dropped, bytes uint64
	// waited is the queueing delay summed over the forwarded packets.
	waited time.Duration
}

func (c *branchPackets) add(r link.FlowReport) {
	c.arrived += r.Arrived
	c.dropped += r.Dropped()
	c.bytes += r.ArrivedBytes
	c.waited += time.Duration(r.Arrived-r.Dropped()) * r.QueueDelay.Mean()
}

func (c branchPackets) result(goodputKbps, seconds float64) branchResult {
	r := branchResult{GoodputKbps: goodputKbps}
	if c.arrived == 0 || seconds <= 0 {
		return r
	}
	r.PacketsPerSecond = float64(c.arrived) / seconds
	r.MeanPacketBytes = float64(c.bytes) / float64(c.arrived)
	r.DropRate = float64(c.dropped) / float64(c.arrived)
	if forwarded := c.arrived - c.dropped; forwarded > 0 {
		r.QueueDelayMeanMs = float64(c.waited/time.Duration(forwarded)) / float64(time.Millisecond)
	}
	return r
}

// runMultiplexCase runs N plain game flows straight into the shared
// bottleneck beside N whose packets go through a multiplexer, and measures
// both branches after the warm-up. The multiplexed flows have stacks of
// their own, whose link (unlimited, no delay) reaches the multiplexer:
// the players' hosts sit beside it, as TCM's optimisers do.
func runMultiplexCase(ctx context.Context, r multiplexRun, tap func(link.Event), log *slog.Logger) (Measurement, [2]branchResult, error) {
	var branches [2]branchResult
	pc := link.PipeConfig{Rate: r.c.rate / 8, Delay: gameDelay, Buffer: gameBuffer}
	shared, err := link.NewBottleneck(link.BottleneckConfig{Up: pc, Down: pc, Seed: r.seed, Tap: tap}, log)
	if err != nil {
		return Measurement{}, branches, fmt.Errorf("scenario: %w", err)
	}
	access, err := link.NewBottleneck(link.BottleneckConfig{Seed: r.seed}, log)
	if err != nil {
		return Measurement{}, branches, fmt.Errorf("scenario: %w", err)
	}
	plainNet, err := tcpflow.New(shared, tcpflow.Config{Seed: r.seed}, log)
	if err != nil {
		return Measurement{}, branches, fmt.Errorf("scenario: %w", err)
	}
	defer plainNet.Close()
	muxNet, err := tcpflow.New(access, tcpflow.Config{Seed: r.seed + 1}, log)
	if err != nil {
		return Measurement{}, branches, fmt.Errorf("scenario: %w", err)
	}
	defer muxNet.Close()
	mux, err := newMultiplexer(shared, r.c.period, muxNet.Receive, log)
	if err != nil {
		return Measurement{}, branches, err
	}
	var flows [2][]*tcpflow.Flow
	for i := range r.c.flows {
		f, err := plainNet.AddFlow(gameFlow(0, i))
		if err != nil {
			return Measurement{}, branches, fmt.Errorf("scenario: %w", err)
		}
		flows[0] = append(flows[0], f)
		if f, err = muxNet.AddFlowVia(gameFlow(1, i), mux.hold); err != nil {
			return Measurement{}, branches, fmt.Errorf("scenario: %w", err)
		}
		flows[1] = append(flows[1], f)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	netErrs := make([]error, 2)
	wg.Go(func() { shared.Run(ctx) })
	wg.Go(func() { access.Run(ctx) })
	wg.Go(func() { mux.Run(ctx) })
	wg.Go(func() { netErrs[0] = plainNet.Run(ctx) })
	wg.Go(func() { netErrs[1] = muxNet.Run(ctx) })

	read := func() (out [2][]uint64) {
		for b := range flows {
			for _, f := range flows[b] {
				out[b] = append(out[b], f.Read(link.Down))
			}
		}
		return out
	}
	warm := time.NewTimer(multiplexWarmup)
	defer warm.Stop()
	select {
	case <-ctx.Done():
		return Measurement{}, branches, fmt.Errorf("scenario: %w before the warm-up ended", context.Cause(ctx))
	case <-warm.C:
	}
	first, accessFirst, read0 := shared.Stats(), access.Stats(), read()
	end := time.NewTimer(r.duration)
	defer end.Stop()
	select {
	case <-ctx.Done():
		return Measurement{}, branches, fmt.Errorf("scenario: %w before the run ended", context.Cause(ctx))
	case <-end.C:
	}
	last, accessLast, readEnd := shared.Stats(), access.Stats(), read()
	cancel()
	wg.Wait()
	if err := errors.Join(netErrs...); err != nil {
		return Measurement{}, branches, err
	}
	if n := mux.malformed.Load(); n > 0 {
		return Measurement{}, branches, fmt.Errorf("scenario: %d bundles did not parse", n)
	}
	d, accessD := last.Since(first), accessLast.Since(accessFirst)
	m := Measurement{Seconds: d.Down.At.Sub(d.Down.Start).Seconds(),
		Up: flowResult(link.FlowReport{Name: "all", Dir: link.Up, FlowStats: d.Up}), Down: flowResult(link.FlowReport{Name: "all", Dir: link.Down, FlowStats: d.Down})}
	m.Stacks[0], m.Stacks[1] = plainNet.Stats()
	var goodput [2]float64 // kbit/s
	var packets [2]branchPackets
	for b := range flows {
		for i, f := range flows[b] {
			fc := f.Config()
			bps := float64(readEnd[b][i]-read0[b][i]) * 8 / m.Seconds
			goodput[b] += bps / 1000
			// The multiplexed flows' own packets are counted on their
			// access link: on the shared one they are inside bundles.
			data, _ := d.Flow(fc.Name + " down")
			if b == 1 {
				data, _ = accessD.Flow(fc.Name + " down")
			} else {
				packets[0].add(data)
			}
			m.TCP = append(m.TCP, TCPResult{Name: fc.Name, CC: string(fc.CC), GoodputBPS: bps, Data: flowResult(data)})
		}
	}
	if bundles, ok := d.Flow(muxFlowName + " down"); ok {
		packets[1].add(bundles)
	}
	for b := range branches {
		branches[b] = packets[b].result(goodput[b], m.Seconds)
	}
	return m, branches, nil
}

// muxFlowName labels the bundles on the shared bottleneck ("multiplexer
// up" and "multiplexer down").
const muxFlowName = "multiplexer"

// The tunnel's endpoints in a capture: the client and server hosts of
// tcpflow's nets, and a port of ours.
var (
	muxClient = netip.MustParseAddrPort("10.77.0.1:5777")
	muxServer = netip.MustParseAddrPort("10.77.0.2:5777")
)

// multiplexer holds the packets of a set of flows, both ways, until the
// end of its current round of period T and then sends them across the
// shared bottleneck in bundles; at the far end it takes the bundles apart
// and hands each packet to its stack. A packet so waits between 0 and T
// (the sawtooth multiplexing delay), and a round's packets of all the
// flows share the bundles' queue slots and tunnel headers.
type multiplexer struct {
	period  time.Duration
	shared  *link.Bottleneck
	receive func(dir link.Direction, packet []byte) // hands a packet to its stack
	bundles [2]link.Flow                            // by direction
	log     *slog.Logger

	mu   sync.Mutex // guards held
	held [2][]byte  // by direction: the bundle being filled, separators and packets

	malformed atomic.Uint64
	reported  sync.Once
}

// newMultiplexer registers the bundles' flows with shared; receive gets
// each packet at the far end (tcpflow.Net.Receive).
func newMultiplexer(shared *link.Bottleneck, period time.Duration, receive func(dir link.Direction, packet []byte), log *slog.Logger) (*multiplexer, error) {
	if period <= 0 {
		return nil, fmt.Errorf("scenario: multiplexing period %v: want a positive one", period)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &multiplexer{period: period, shared: shared, receive: receive, log: log}
	for _, dir := range []link.Direction{link.Up, link.Down} {
		ends := link.UDPEndpoints{Src: muxClient, Dst: muxServer}
		if dir == link.Down {
			ends = link.UDPEndpoints{Src: muxServer, Dst: muxClient}
		}
		f, err := shared.AddFlow(link.FlowConfig{Name: muxFlowName + " " + dir.String(), Dir: dir, Overhead: bundleTunnel, UDP: ends,
			Deliver: func(bundle []byte) { m.unbundle(dir, bundle) }})
		if err != nil {
			return nil, fmt.Errorf("scenario: %w", err)
		}
		m.bundles[dir] = f
	}
	return m, nil
}

// hold takes a packet going dir into the round's bundle; when it would
// overflow the bundle, the bundle leaves first (a packet larger than a
// bundle goes alone).
func (m *multiplexer) hold(dir link.Direction, packet []byte) {
	m.mu.Lock()
	var full []byte
	if len(m.held[dir]) > 0 && bundleTunnel+len(m.held[dir])+bundleSeparator+len(packet) > bundleMTU {
		full, m.held[dir] = m.held[dir], nil
	}
	m.held[dir] = appendBundled(m.held[dir], packet)
	m.mu.Unlock()
	if full != nil {
		m.send(dir, full)
	}
}

// Run ends a round every period until ctx ends.
func (m *multiplexer) Run(ctx context.Context) {
	t := time.NewTicker(m.period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, dir := range []link.Direction{link.Up, link.Down} {
				m.mu.Lock()
				bundle := m.held[dir]
				m.held[dir] = nil
				m.mu.Unlock()
				if bundle != nil {
					m.send(dir, bundle)
				}
			}
		}
	}
}

func (m *multiplexer) send(dir link.Direction, bundle []byte) {
	if _, err := m.shared.Send(m.bundles[dir], bundle); err != nil {
		// Only a flow the bottleneck did not hand out fails.
		m.reported.Do(func() { m.log.Error("multiplexer: the bottleneck refused a bundle", "err", err) })
	}
}

// unbundle hands a bundle's packets, arrived across dir, to their stack.
func (m *multiplexer) unbundle(dir link.Direction, bundle []byte) {
	packets, err := splitBundle(bundle)
	if err != nil {
		// Ours, so a programming error: counted, said once, and failing
		// the run.
		m.malformed.Add(1)
		m.reported.Do(func() { m.log.Error("multiplexer: a bundle did not parse", "err", err) })
		return
	}
	for _, p := range packets {
		m.receive(dir, p)
	}
}

// appendBundled appends packet to a bundle's payload behind its length.
func appendBundled(bundle, packet []byte) []byte {
	bundle = binary.BigEndian.AppendUint16(bundle, uint16(len(packet)))
	return append(bundle, packet...)
}

// Errors of splitBundle.
var (
	errBundleEmpty     = errors.New("empty bundle")
	errBundleTruncated = errors.New("bundle ends inside a packet")
	errBundleZero      = errors.New("zero-length packet in a bundle")
)

// splitBundle returns the packets of a bundle's payload, which alias it.
func splitBundle(bundle []byte) ([][]byte, error) {
	if len(bundle) == 0 {
		return nil, errBundleEmpty
	}
	var packets [][]byte
	for off := 0; off < len(bundle); {
		if len(bundle)-off < bundleSeparator {
			return nil, fmt.Errorf("%w: separator at byte %d", errBundleTruncated, off)
		}
		n := int(binary.BigEndian.Uint16(bundle[off:]))
		off += bundleSeparator
		if n == 0 {
			return nil, fmt.Errorf("%w: at byte %d", errBundleZero, off-bundleSeparator)
		}
		if len(bundle)-off < n {
			return nil, fmt.Errorf("%w: %d bytes announced at byte %d, %d left", errBundleTruncated, n, off-bundleSeparator, len(bundle)-off)
		}
		packets = append(packets, bundle[off:off+n:off+n])
		off += n
	}
	return packets, nil
}

func runMultiplexing(ctx context.Context, o Options) (Result, error) {
	o = o.withDefaults()
	start := time.Now()
	dur := o.Duration
	if dur == 0 {
		dur = 60 * time.Second
	}
	runs, branches, err := runMultiplexRuns(ctx, o, multiplexRuns(o, dur, multiplexCases))
	if err != nil {
		return Result{}, err
	}
	res := multiplexResult(multiplexCases, runs, branches)
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// runMultiplexRuns runs o.Parallel at a time, each writing its capture
// into o.OutDir when set, and returns them in order.
func runMultiplexRuns(ctx context.Context, o Options, runs []multiplexRun) ([]RunResult, [][2]branchResult, error) {
	out := make([]RunResult, len(runs))
	branches := make([][2]branchResult, len(runs))
	errs := make([]error, len(runs))
	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	for i, r := range runs {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			}
			defer func() { <-sem }()
			var tap func(link.Event)
			var capture *pcapFile
			if o.OutDir != "" {
				var err error
				if capture, err = createPcap(o.OutDir, r.name); err != nil {
					errs[i] = err
					return
				}
				tap = capture.tap
			}
			m, b, err := runMultiplexCase(ctx, r, tap, o.Log)
			if capture != nil {
				err = errors.Join(err, capture.close())
			}
			if err != nil {
				errs[i] = fmt.Errorf("run %s: %w", r.name, err)
				return
			}
			o.Log.Info("run done", "run", r.name)
			out[i], branches[i] = RunResult{Name: r.name, Measurement: m}, b
		})
	}
	wg.Wait()
	return out, branches, errors.Join(errs...)
}

func multiplexResult(cases []multiplexCase, runs []RunResult, branches [][2]branchResult) Result {
	res := Result{Scenario: "multiplexing", Runs: runs}
	t := Table{Title: "multiplexing: aggregate throughput of each branch of application-limited game flows (Reno, 20 ms)",
		Columns: []string{"bottleneck", "flows", "T ms", "plain kbit/s", "published", "multiplexed kbit/s", "published", "multiplexed/plain", "published",
			"packets/s", "bytes/packet", "dropped", "queue ms"},
		Notes: []string{"throughput: what the clients read (server→client goodput), summed over a branch.",
			"packets/s, bytes/packet (on the wire) and dropped: each branch's downstream on the bottleneck, plain / multiplexed (its bundles); queue: the mean wait of the downstream packets.",
			muxNote, multiplexNote, "published: " + multiplexSrc}}
	for i, b := range branches {
		c := cases[i]
		got := [2]float64{b[0].GoodputKbps, b[1].GoodputKbps}
		t.Rows = append(t.Rows, []string{fmt.Sprintf("%dk", c.rate/1000), fmt.Sprintf("%d+%d", c.flows, c.flows), fmt.Sprint(c.period.Milliseconds()),
			fmt.Sprintf("%.0f", got[0]), fmt.Sprintf("%.0f", c.published[0]), fmt.Sprintf("%.0f", got[1]), fmt.Sprintf("%.0f", c.published[1]),
			fmt.Sprintf("%.2f", got[1]/got[0]), fmt.Sprintf("%.2f", c.published[1]/c.published[0]),
			fmt.Sprintf("%.0f / %.0f", b[0].PacketsPerSecond, b[1].PacketsPerSecond), fmt.Sprintf("%.0f / %.0f", b[0].MeanPacketBytes, b[1].MeanPacketBytes),
			fmt.Sprintf("%.1f / %.1f %%", 100*b[0].DropRate, 100*b[1].DropRate), fmt.Sprintf("%.0f", runs[i].Measurement.Down.QueueDelayMeanMs)})
		for k, name := range []string{"plain", "multiplexed"} {
			res.Comparisons = append(res.Comparisons, Comparison{Scenario: "multiplexing",
				Metric: fmt.Sprintf("%s branch, %dk, %d flows, T %v", name, c.rate/1000, c.flows, c.period), Unit: "kbit/s",
				Published: c.published[k], Measured: got[k], Source: multiplexSrc})
		}
	}
	res.Tables = append(res.Tables, t)
	return res
}

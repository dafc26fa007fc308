package tcpflow

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
)

// These tests run gVisor's TCP on real time: its stacks park goroutines
// in a way testing/synctest does not count as durably blocked, so a
// bubble's clock would never move (tried: the bubble hangs). Rates are
// small and runs a few seconds; measurements leave out the first second
// (the handshake and slow start), and tolerances are stated where they
// are made. The time.Sleep calls below are the measurement windows
// themselves, not waits for an event. A probe measures how late the host
// runs timers meanwhile; a performance check that fails while the host
// was starved skips and says why (rig.report), while correctness (the
// bytes, the retransmissions, the errors) always counts.

// rig is a bottleneck, a net of two stacks over it, and both running,
// with a probe of how late the host runs timers meanwhile.
type rig struct {
	b      *link.Bottleneck
	n      *Net
	flows  []*Flow
	cancel context.CancelFunc
	errc   chan error
	probe  chan link.DelayHistogram
	// failures are the checks that failed, for report.
	failures []string
}

// probeEvery is how often the rig's probe asks for a timer.
const probeEvery = 2 * time.Millisecond

// lateness measures how late timers fire until ctx ends: on a host too
// busy to run the stacks in real time, the link idles and the RTT grows
// for reasons that are not TCP's.
func lateness(ctx context.Context) link.DelayHistogram {
	var h link.DelayHistogram
	t := time.NewTimer(probeEvery)
	defer t.Stop()
	for {
		asked := time.Now()
		select {
		case <-ctx.Done():
			return h
		case now := <-t.C:
			h.Add(now.Sub(asked) - probeEvery)
			t.Reset(probeEvery)
		}
	}
}

// Beyond these, the host, not TCP, decides what a run measures. A packet
// crosses half a dozen goroutine hand-offs per round trip (the stacks'
// processors, the application, the bottleneck's delivery), each waiting
// as long as this one timer does, so stalls of a few milliseconds each add
// up to a round trip and drain the queue. An idle host (and this one
// running the package alone) keeps timers within about 0.1 ms at p99 and
// 2 ms at worst.
const (
	lateP99 = time.Millisecond
	lateMax = 5 * time.Millisecond
)

// skipUnderRace skips a test that measures only performance when the
// race detector is on (see report).
func skipUnderRace(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector slows gVisor's stacks so much that it, not TCP, would be measured; make test's scale step runs this without it")
	}
}

// errorf notes a failed check; report decides what it means.
func (r *rig) errorf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

// report fails the test with the checks that failed, unless the host ran
// timers too late for a real-time measurement meanwhile, or the race
// detector was on: then it skips, saying so and what would have failed.
// Under the detector, gVisor's stacks take several times the CPU per
// packet and their hand-offs stall for whole round trips (RTTs of 300 ms
// on a 40 ms path, the link idle, timers on time), so the detector is what
// gets measured; make test's scale step runs these checks without it.
// Otherwise every failure stands. The run must have stopped.
func (r *rig) report(t *testing.T) {
	t.Helper()
	h := <-r.probe
	r.probe <- h
	p99 := h.Quantile(0.99)
	t.Logf("timer lateness: p50 %v, p99 %v, max %v", h.Quantile(0.5), p99, h.Max)
	if len(r.failures) == 0 {
		return
	}
	if raceEnabled {
		t.Skipf("the race detector slows gVisor's stacks so much that it, not TCP, is measured (make test's scale step runs this without it): %s", strings.Join(r.failures, "; "))
	}
	if p99 > lateP99 || h.Max > lateMax {
		t.Skipf("the host was too busy to run TCP in real time (timers late by p99 %v, max %v; limits %v, %v), so these are not TCP's: %s", p99, h.Max, lateP99, lateMax, strings.Join(r.failures, "; "))
	}
	for _, f := range r.failures {
		t.Error(f)
	}
}

func newRig(t *testing.T, up, down link.PipeConfig, flows ...FlowConfig) *rig {
	t.Helper()
	b, err := link.NewBottleneck(link.BottleneckConfig{Up: up, Down: down, Seed: 7}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := New(b, Config{Seed: 7}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{b: b, n: n, errc: make(chan error, 2), probe: make(chan link.DelayHistogram, 1)}
	for _, fc := range flows {
		f, err := n.AddFlow(fc)
		if err != nil {
			t.Fatal(err)
		}
		r.flows = append(r.flows, f)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.errc <- b.Run(ctx) }()
	go func() { r.errc <- n.Run(ctx) }()
	go func() { r.probe <- lateness(ctx) }()
	t.Cleanup(func() {
		r.stop(t)
		n.Close()
	})
	return r
}

// stop ends the run (once) and reports the flows' errors.
func (r *rig) stop(t *testing.T) {
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	for range 2 {
		if err := <-r.errc; err != nil {
			t.Error(err)
		}
	}
}

// measure returns the bottleneck's statistics and each flow's bytes read
// per direction over window, after warm-up.
func (r *rig) measure(warmUp, window time.Duration) (link.BottleneckStats, [][2]uint64) {
	time.Sleep(warmUp)
	before := r.b.Stats()
	var read0 [][2]uint64
	for _, f := range r.flows {
		read0 = append(read0, [2]uint64{f.Read(link.Up), f.Read(link.Down)})
	}
	time.Sleep(window)
	st := r.b.Stats().Since(before)
	var read [][2]uint64
	for i, f := range r.flows {
		read = append(read, [2]uint64{f.Read(link.Up) - read0[i][0], f.Read(link.Down) - read0[i][1]})
	}
	return st, read
}

// clean is a 6 Mbit/s, 20 ms, 100-packet link each way.
var clean = link.PipeConfig{Rate: 6_000_000 / 8, Delay: 20 * time.Millisecond, Buffer: 100}

// TestSingleFlowFillsBottleneck: one CUBIC bulk flow, download or upload,
// keeps a clean 6 Mbit/s, 20 ms bottleneck at least 90 % busy once past
// slow start (2 s: HyStart ends it before the 100-packet buffer
// overflows much, RFC 9406), since after a loss its window shrinks to 0.7
// of a value well above the 20-packet bandwidth-delay product, so the
// queue never drains; and the receiving application gets those bytes
// less the 52 bytes of headers per 1,500-byte packet (IPv4, TCP and its
// timestamps option, RFC 7323). Reno is left out: gVisor's grows its
// window in congestion avoidance as fast as in slow start (see the package
// doc), overshoots the buffer every cycle and spends seconds in timeouts,
// which a run of seconds would measure instead; TestRecoveryAtLoss runs
// Reno.
func TestSingleFlowFillsBottleneck(t *testing.T) {
	skipUnderRace(t)
	for _, tc := range []struct {
		cc  CongestionControl
		dir Direction
	}{{CUBIC, Download}, {CUBIC, Upload}} {
		t.Run(string(tc.cc)+" "+tc.dir.String(), func(t *testing.T) {
			t.Parallel()
			r := newRig(t, clean, clean, FlowConfig{Name: "bulk", CC: tc.cc, Dir: tc.dir})
			st, read := r.measure(2*time.Second, 1500*time.Millisecond)
			r.stop(t)
			ld := tc.dir.linkDir()
			data, _ := st.Flow("bulk " + ld.String())
			util := data.Throughput() / float64(clean.Rate)
			goodput := float64(read[0][ld]) / data.At.Sub(data.Start).Seconds()
			info, _ := r.flows[0].Info(ld)
			t.Logf("utilisation %.3f, goodput %.0f B/s, queue delay mean %v p95 %v, %d dropped, %+v", util, goodput, data.QueueDelay.Mean(), data.QueueDelay.Quantile(0.95), data.Dropped(), info)
			// Above 1 by at most the packet in service at the window's
			// edge (a run measured 1.0012 with 0.1 % allowed: one
			// 1,500-byte packet is 0.13 % of this window).
			edge := 1500 / (float64(clean.Rate) * data.At.Sub(data.Start).Seconds())
			if util < 0.9 || util > 1+edge {
				r.errorf("the flow kept the bottleneck %.2f %% busy, want ≥ 90 %% and at most one packet over 100 %%", util*100)
			}
			// What was read lags what crossed by what waits for a
			// retransmission at either end of the window: up to a
			// 100-packet queue's worth, a fifth of 1.5 s at this rate.
			if want := data.Throughput() * 1448 / 1500; goodput < 0.8*want || goodput > 1.2*want {
				r.errorf("goodput %.0f B/s, want %.0f (the link's payload) ± 20 %%", goodput, want)
			}
			r.report(t)
		})
	}
}

// TestReceiveBufferLimitsFlow: with FlowConfig.ReceiveBuffer a bulk
// flow, download or upload, has about half the buffer in flight (what
// gVisor advertises), so on a 6 Mbit/s link with a 200 ms round trip
// (a 150 KB bandwidth-delay product) 64 KiB carries about 32 KiB per
// round trip, a fifth of the link, where the default buffer fills it
// (TestSingleFlowFillsBottleneck); the tolerance is ±30 % (runs measured
// 0.87–1.0 of it).
func TestReceiveBufferLimitsFlow(t *testing.T) {
	skipUnderRace(t)
	const buffer = 64 << 10
	long := clean
	long.Delay = 100 * time.Millisecond
	for _, dir := range []Direction{Download, Upload} {
		t.Run(dir.String(), func(t *testing.T) {
			t.Parallel()
			r := newRig(t, long, long, FlowConfig{Name: "bulk", CC: CUBIC, Dir: dir, ReceiveBuffer: buffer})
			st, _ := r.measure(time.Second, 1500*time.Millisecond)
			r.stop(t)
			data, _ := st.Flow("bulk " + dir.linkDir().String())
			want := buffer / 2 / (2 * long.Delay.Seconds()) * 1500 / 1448 // bytes/s on the wire
			t.Logf("%.0f B/s on the wire, half the buffer per round trip %.0f, the link %d", data.Throughput(), want, long.Rate)
			if got := data.Throughput(); got < 0.7*want || got > 1.3*want {
				r.errorf("%.0f B/s with a 64 KiB receive buffer: want about %.0f (half of it per round trip) ± 30 %%", got, want)
			}
			r.report(t)
		})
	}
}

// jain is Jain's fairness index of the rates.
func jain(rates ...float64) float64 {
	var sum, sq float64
	for _, r := range rates {
		sum += r
		sq += r * r
	}
	return sum * sum / (float64(len(rates)) * sq)
}

// shortPath is the link on which two flows' sharing is asserted: 30
// Mbit/s, 2 ms each way, and a drop-tail buffer of 20 packets, twice the
// bandwidth-delay product (10 packets of 1,500 bytes over the 4 ms round
// trip), so that the queue rather than the host's scheduling delays of a
// millisecond or two keeps the link busy after a flow backs off.
// TestTwoFlowsShare says why it is a fair test.
var shortPath = link.PipeConfig{Rate: 30_000_000 / 8, Delay: 2 * time.Millisecond, Buffer: 20}

// pairRun is one pair of bulk downloads, "a" and "b", on a bottleneck of
// its own.
type pairRun struct {
	r    *rig
	a, b link.FlowReport // the data (down) direction, over the window
}

// measure waits for b to be established, then for warmUp, and measures
// the pair over window.
func (p *pairRun) measure(stagger, warmUp, window time.Duration) {
	// A SYN lost to the full queue, and lost again, is sent anew at 1 s
	// and 3 s (RFC 6298 §2.1, §5.5): a flow not open by then has a
	// problem of its own.
	const handshake = 5 * time.Second
	select {
	case <-p.r.flows[1].Established():
	case <-time.After(stagger + handshake):
		p.r.errorf("flow b not established %v after its start", handshake)
		return
	}
	st, _ := p.r.measure(warmUp, window)
	p.a, _ = st.Flow("a down")
	p.b, _ = st.Flow("b down")
}

// TestTwoFlowsShare: two CUBIC bulk downloads through one drop-tail queue
// share it within Jain's index ≥ 0.95 of equal throughputs, on shortPath,
// asserted per pair.
//
// Why shortPath is a fair test of sharing, not a flattering one. The second
// flow starts 1 s after the first, which by then keeps the link and its
// queue full: the newcomer has to take its share from an established flow
// (and its SYN may be lost to that queue: the warm-up counts from when it is
// established). Nothing but the queue limits either flow (bulk senders, 4
// MiB windows), and the pair is checked for it: each flow loses ≥ 10 packets
// to the queue within the window, so congestion control set the shares, and
// the link stays ≥ 80 % busy (a single flow keeps a link ≥ 90 % busy,
// TestSingleFlowFillsBottleneck; a pair measured 0.88 to 1.00, and 0.86 to
// 0.90 beside a busy loop taking a core). Both flows have the same path, as
// Jain ≥ 0.95 presumes (loss-based TCP favours the shorter round trip, a
// known property and not this one), and the drop-tail queue has no
// randomness of its own to even out who loses. Why it converges in seconds:
// with windows near 15 segments and round trips under 10 ms, CUBIC is in its
// TCP-friendly region (RFC 8312 §4.2; gVisor's cubic.go takes W_est whenever
// it exceeds the cubic curve), which is AIMD with an increase of 0.53
// segment per round trip and a decrease to 0.7: a sawtooth of about
// 0.3·15/0.53 ≈ 9 round trips, so each flow loses packets several times a
// second, while the cubic epoch K = ∛(W_max·(1−β)/C) ≈ 2.2 s plays no part,
// and the newcomer has its share within about a second.
//
// Why the window is 12 s. Over 1 s a pair's shares swing by ±0.1 (fast
// convergence cuts a flow whose window shrank twice in a row to 0.6 of it,
// RFC 8312 §4.6), and a retransmission timeout idles a flow for 200 ms or
// more, with back-off: the flows are in recovery most of the time, and a
// retransmission lost to the full queue waits for the RTO (RACK, which would
// find it, is off: see the package doc; on, it left one flow of 20 pairs at
// 0 for the whole window). Over 8 s, 120 pairs measured 0.976 to 1.000 but
// for two at 0.94 and 0.73, the flow behind losing two to three times as
// many of the packets it sent as the other; over 12 s, 50 pairs (14 of
// this test, 36 run three at a time) measured 0.981 to 1.000, tenth
// percentile 0.993, median 0.999, on this 2-core machine beside others'
// tests and benchmarks (load 1 to 2.6).
//
// Reno is not paired: gVisor's congestion avoidance is not RFC 5681's (see
// the package doc). On this link, of 40 Reno pairs measured over 6 and 10 s,
// one gave 0.56 (one flow at 6 % of the link, 1,054 of its packets dropped
// to the other's 201), one 0.94, one 0.97, the rest ≥ 0.978; at 4 Mbit/s and
// 40 ms its windows reach twice the path (88 segments for 43) and one flow
// sits in timeouts for seconds.
//
// At 4 Mbit/s, 20 ms each way and 30 packets, the lab's access-link regime,
// CUBIC pairs started together are checked for no starvation only (Jain ≥
// 0.6, the lesser flow above a fifth of the pair, the link ≥ 85 % busy): a
// flow there loses a packet every second or two, and single pairs measured
// 0.78 to 1.00 over 8 s, median 0.99, and 0.88 to 1.00 over 12 s (54
// pairs; 0.945 to 0.999 over 20 s).
//
// All pairs run side by side, each on its own bottleneck: about 15 s in all.
func TestTwoFlowsShare(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: a long end-to-end run in real time")
	}
	skipUnderRace(t)
	shares := func(t *testing.T, p pairRun) {
		j := jain(p.a.Throughput(), p.b.Throughput())
		util := (p.a.Throughput() + p.b.Throughput()) / float64(shortPath.Rate)
		t.Logf("a %.0f B/s, b %.0f B/s: Jain %.4f, utilisation %.3f, dropped %d and %d", p.a.Throughput(), p.b.Throughput(), j, util, p.a.DroppedQueue, p.b.DroppedQueue)
		if j < 0.95 {
			p.r.errorf("Jain's index %.4f, want ≥ 0.95", j)
		}
		if util < 0.8 {
			p.r.errorf("utilisation %.3f, want ≥ 0.8", util)
		}
		if min(p.a.DroppedQueue, p.b.DroppedQueue) < 10 {
			p.r.errorf("%d and %d packets dropped by the queue, want ≥ 10 each: something but congestion control limited a flow", p.a.DroppedQueue, p.b.DroppedQueue)
		}
	}
	link4 := link.PipeConfig{Rate: 4_000_000 / 8, Delay: 20 * time.Millisecond, Buffer: 30}
	cases := []struct {
		name           string
		cc             CongestionControl
		pipe           link.PipeConfig
		pairs          int
		stagger        time.Duration // b's start after a's
		warmUp, window time.Duration // from b's establishment
		check          func(*testing.T, pairRun)
		runs           []pairRun
	}{
		{name: "cubic 30 Mbit/s", cc: CUBIC, pipe: shortPath, pairs: 1, stagger: time.Second, warmUp: 2 * time.Second, window: 12 * time.Second, check: shares},
		{name: "cubic 4 Mbit/s", cc: CUBIC, pipe: link4, pairs: 3, warmUp: 2 * time.Second, window: 12 * time.Second, check: func(t *testing.T, p pairRun) {
			a, b := p.a.Throughput(), p.b.Throughput()
			j := jain(a, b)
			util := (a + b) / float64(link4.Rate)
			t.Logf("a %.0f B/s, b %.0f B/s: Jain %.3f, utilisation %.3f, dropped %d and %d", a, b, j, util, p.a.DroppedQueue, p.b.DroppedQueue)
			if j < 0.6 || min(a, b) < (a+b)/5 || util < 0.85 {
				p.r.errorf("Jain's index %.3f (want ≥ 0.6), lesser share %.2f (want ≥ 0.2), utilisation %.3f (want ≥ 0.85)", j, min(a, b)/(a+b), util)
			}
		}},
	}
	for i := range cases {
		c := &cases[i]
		for range c.pairs {
			c.runs = append(c.runs, pairRun{r: newRig(t, c.pipe, c.pipe, FlowConfig{Name: "a", CC: c.cc}, FlowConfig{Name: "b", CC: c.cc, Start: c.stagger})})
		}
	}
	var wg sync.WaitGroup
	for i := range cases {
		c := &cases[i]
		for j := range c.runs {
			wg.Go(func() { c.runs[j].measure(c.stagger, c.warmUp, c.window) })
		}
	}
	wg.Wait()
	for _, c := range cases {
		for _, p := range c.runs {
			p.r.stop(t)
		}
	}
	for _, c := range cases {
		for i, p := range c.runs {
			t.Run(fmt.Sprintf("%s pair %d", c.name, i), func(t *testing.T) {
				c.check(t, p)
				p.r.report(t)
			})
		}
	}
}

// TestRecoveryAtLoss: at 3 % random loss of the data packets (ACKs
// untouched), a Reno and a CUBIC flow side by side on a 6 Mbit/s link
// each retransmit every packet the link lost (but those lost in the last
// round trip, which the run's end may cut short), deliver the stream
// intact (the sink checks every byte), and get a goodput of the order the
// loss allows: Mathis et al.'s 1.22·MSS/(RTT·√p), about 250 kB/s at
// 40 ms, which both fit in the link together. Over a few seconds one flow
// may spend a timeout or two with back-off (0.2 s, then 0.4 s) while the
// other does better than the formula (SACK repairs several losses in one
// event), so the floor is a fifth of it: recovery, not the equation, is
// what is tested here.
func TestRecoveryAtLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: a long end-to-end run in real time")
	}
	lossy := clean
	lossy.Loss = 0.03
	r := newRig(t, clean, lossy, FlowConfig{Name: "reno", CC: Reno}, FlowConfig{Name: "cubic", CC: CUBIC})
	st, read := r.measure(time.Second, 3*time.Second)
	r.stop(t)
	_, server := r.n.Stats()
	all := r.b.Stats()
	mathis := 1.22 * 1448 / (0.040 * math.Sqrt(0.03))
	var lost uint64
	for i, f := range r.flows {
		data, _ := st.Flow(f.Name() + " down")
		whole, _ := all.Flow(f.Name() + " down")
		lost += whole.DroppedRandom
		goodput := float64(read[i][link.Down]) / data.At.Sub(data.Start).Seconds()
		t.Logf("%s: goodput %.0f B/s (Mathis %.0f), %d lost at random of %d", f.Name(), goodput, mathis, whole.DroppedRandom, whole.Arrived)
		if goodput < mathis/5 || goodput > float64(lossy.Rate) {
			r.errorf("%s: goodput %.0f B/s, want %.0f–%d", f.Name(), goodput, mathis/5, lossy.Rate)
		}
	}
	t.Logf("server: %+v", server)
	// At this rate a round trip carries at most about 40 packets: at 3 %,
	// a couple of losses may await their retransmission when the run stops.
	if server.Retransmits+3 < lost || lost == 0 {
		t.Errorf("%d retransmissions for %d packets lost", server.Retransmits, lost)
	}
	r.report(t)
}

// TestApplicationLimited: two game-like flows, one multiplexed in rounds
// of T = 50 ms and one not, each write exactly their rates both ways (the
// multiplexing study's 1.47 kbit/s up and 18.13 kbit/s down), the other
// end reads it all, and the period shapes the packets: with T the
// server's updates leave in one segment per round, 20 a second; without,
// updates leave as written, up to one segment each (57 a second), fewer
// when gVisor sends several queued writes in one segment: in any case
// well over the multiplexed flow's.
func TestApplicationLimited(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: a long end-to-end run in real time")
	}
	const up, down = 1470 / 8, 18130 / 8 // bytes/s
	cases := []struct {
		name   string
		period time.Duration
	}{{"plain", 0}, {"multiplexed", 50 * time.Millisecond}}
	var pkts [2]float64 // packets a second down
	var flows []FlowConfig
	for _, c := range cases {
		flows = append(flows, FlowConfig{Name: c.name, CC: Reno, App: &AppConfig{UpRate: up, DownRate: down, Message: 40, Period: c.period}})
	}
	r := newRig(t, clean, clean, flows...)
	st, read := r.measure(time.Second, 2*time.Second)
	r.stop(t)
	secs := st.Up.At.Sub(st.Up.Start).Seconds()
	for i, tc := range cases {
		// The rate in whole messages, give or take a round and a message
		// at either end of the window, and 5 % for what is in flight.
		for _, d := range []struct {
			dir  link.Direction
			rate float64
		}{{link.Up, up}, {link.Down, down}} {
			got := float64(read[i][d.dir]) / secs
			if math.Abs(got-d.rate) > 0.05*d.rate+(d.rate*tc.period.Seconds()+2*40)/secs {
				r.errorf("%s %v: %.0f B/s read, want %.0f", tc.name, d.dir, got, d.rate)
			}
		}
		// Packets down are the data segments plus ACKs of the client's
		// updates, at most one per update (4.6 a second).
		dn, _ := st.Flow(tc.name + " down")
		pkts[i] = float64(dn.Arrived) / secs
		t.Logf("%s: %.1f packets/s down", tc.name, pkts[i])
	}
	acks := float64(up) / 40
	if pkts[1] < 20*0.9 || pkts[1] > 20*1.1+acks {
		r.errorf("multiplexed: %.1f packets a second down, want 20 data segments and up to %.1f ACKs", pkts[1], acks)
	}
	if pkts[0] > float64(down)/40*1.1+acks || pkts[0] < 1.5*pkts[1] {
		r.errorf("plain: %.1f packets a second down, want up to %.1f and 1.5 times the multiplexed flow's %.1f", pkts[0], float64(down)/40+acks, pkts[1])
	}
	r.report(t)
}

// TestEstablished: a flow's Established closes once its connection is
// open, its ends' state readable from then on (what a measurement that
// counts from it reads), and stays open for a flow whose Start the run
// never reached.
func TestEstablished(t *testing.T) {
	r := newRig(t, clean, clean, FlowConfig{Name: "now"}, FlowConfig{Name: "never", Start: time.Hour})
	select {
	case <-r.flows[0].Established():
	case <-time.After(5 * time.Second):
		t.Fatal("a flow over an idle 20 ms link not established within 5 s")
	}
	for _, dir := range []link.Direction{link.Up, link.Down} {
		if _, ok := r.flows[0].Info(dir); !ok {
			t.Errorf("established, but no TCP state for %v", dir)
		}
	}
	r.stop(t)
	select {
	case <-r.flows[1].Established():
		t.Error("a flow that never started is established")
	default:
	}
	if _, ok := r.flows[1].Info(link.Down); ok {
		t.Error("a flow that never started has TCP state")
	}
}

// TestFlowConfigErrors: a flow the net would have to reinterpret is
// refused with every reason; flows cannot be added while it runs.
func TestFlowConfigErrors(t *testing.T) {
	b, err := link.NewBottleneck(link.BottleneckConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := New(b, Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	for _, tc := range []struct {
		cfg  FlowConfig
		want []string
	}{
		{FlowConfig{}, []string{"no name"}},
		{FlowConfig{Name: "x", CC: "vegas"}, []string{`congestion control "vegas": want reno or cubic`}},
		{FlowConfig{Name: "x", Start: -time.Second, Dir: 3}, []string{"start -1s is negative", "direction 3"}},
		{FlowConfig{Name: "x", App: &AppConfig{}}, []string{"sends nothing either way"}},
		{FlowConfig{Name: "x", App: &AppConfig{UpRate: -1, Message: -1, Period: -1}}, []string{"negative", "message -1 bytes", "period -1ns is negative"}},
		{FlowConfig{Name: "x", ReceiveBuffer: -1}, []string{"receive buffer -1 bytes"}},
		{FlowConfig{Name: "x", ReceiveBuffer: 8 << 20}, []string{"receive buffer 8388608 bytes outside"}},
	} {
		_, err := n.AddFlow(tc.cfg)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: %v, want %q", tc.cfg, err, w)
			}
		}
	}
	if _, err := n.AddFlow(FlowConfig{Name: "ok"}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.AddFlow(FlowConfig{Name: "ok"}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second flow of the same name: %v", err)
	}
	if _, err := New(nil, Config{}, nil); err == nil {
		t.Error("a net without a bottleneck")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := n.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("run cancelled at once: %v", err)
	}
	if _, err := n.AddFlow(FlowConfig{Name: "late"}); err == nil || !strings.Contains(err.Error(), "running") {
		t.Errorf("a flow added after Run: %v", err)
	}
}

// FuzzClientPort: any bytes, read as a packet crossing the bottleneck
// either way, give a port or 0 and never panic; a port comes from the TCP
// header's source (up) or destination (down) field. Seeded with the first
// six packets of one of this package's flows as gVisor sent them (in
// testdata/fuzz/FuzzClientPort, taken with the bottleneck's tap: the
// handshake and the first updates each way), and here with a header
// carrying an option word, a truncated one, IPv6 and UDP.
func FuzzClientPort(f *testing.F) {
	syn := []byte{
		0x45, 0x00, 0x00, 0x3c, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0x00, 0x00, 10, 77, 0, 1, 10, 77, 0, 2,
		0x9c, 0x40, 0x13, 0x88, 0, 0, 0, 1, 0, 0, 0, 0, 0xa0, 0x02, 0xff, 0xff, 0, 0, 0, 0,
		0x02, 0x04, 0x05, 0xb4, 0x04, 0x02, 0x08, 0x0a, 0, 0, 0, 1, 0, 0, 0, 0, 0x01, 0x03, 0x03, 0x07,
	}
	data := append([]byte{0x46, 0, 0, 0x30, 0, 0, 0x40, 0, 0x40, 0x06, 0, 0, 10, 77, 0, 2, 10, 77, 0, 1, 1, 1, 0, 0}, // IHL 6: an option word
		0x13, 0x88, 0x9c, 0x41, 0, 0, 0, 2, 0, 0, 0, 1, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0, 'h', 'i', '!', '\n')
	f.Add(syn, false)
	f.Add(data, true)
	f.Add(syn[:22], false)
	f.Add(append([]byte{0x60}, syn[1:]...), false)
	udp := append([]byte(nil), syn...)
	udp[9] = 17
	f.Add(udp, false)
	f.Fuzz(func(t *testing.T, p []byte, down bool) {
		dir := link.Up
		if down {
			dir = link.Down
		}
		port := clientPort(dir, p)
		if port == 0 {
			return
		}
		ihl := int(p[0]&0xf) * 4
		off := ihl
		if down {
			off += 2
		}
		if p[0]>>4 != 4 || p[9] != 6 || ihl < 20 || port != uint16(p[off])<<8|uint16(p[off+1]) {
			t.Errorf("port %d from % x", port, p)
		}
	})
}

// TestClientPortSeeds: the seeds' ports are the flows' they name.
func TestClientPortSeeds(t *testing.T) {
	syn := []byte{0x45, 0, 0, 40, 0, 0, 0, 0, 64, 6, 0, 0, 10, 77, 0, 1, 10, 77, 0, 2, 0x9c, 0x40, 0x13, 0x88}
	for _, tc := range []struct {
		name string
		dir  link.Direction
		p    []byte
		want uint16
	}{
		{"up: source port", link.Up, syn, 40000},
		{"down: destination port", link.Down, syn, 5000},
		{"truncated", link.Up, syn[:21], 0},
		{"not TCP", link.Up, append(append([]byte(nil), syn[:9]...), append([]byte{17}, syn[10:]...)...), 0},
		{"IPv6", link.Up, append([]byte{0x60}, syn[1:]...), 0},
		{"header length below 20", link.Up, append([]byte{0x44}, syn[1:]...), 0},
	} {
		if got := clientPort(tc.dir, tc.p); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

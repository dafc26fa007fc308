package audit

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/capture/capturetest"
	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/internal/lab/viewer"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
)

// goldenTrace is one viewer's traffic through an emulated link with known
// loss and delay, captured at the viewer's side as a pcap, with what the
// link and the viewer know of it.
type goldenTrace struct {
	loss      float64
	delay     time.Duration // one way
	pcap      []byte
	sim       netip.AddrPort // the relay, as the viewer knows the simulator
	viewer    viewer.Report
	dropped   int // down originals the link dropped
	delivered int // down datagrams delivered
}

// The golden traces' settings. At 0.01 % a few seconds of traffic expect
// about 0.2 losses: that trace holds the audit to the link's count and to
// "unbounded" when nothing was lost, not to a ratio.
var goldenLosses = []float64{0.0001, 0.005, 0.03, 0.10}

const (
	goldenDelay = 20 * time.Millisecond
	goldenRun   = 6 * time.Second
)

var (
	goldenOnce   sync.Once
	goldenTraces []*goldenTrace
	goldenErr    error
)

// golden generates the traces once for every test that wants them: one
// region, and per loss level a link emulator and a viewer, all at once, so
// that the whole costs one run of goldenRun.
func golden(t *testing.T) []*goldenTrace {
	t.Helper()
	if testing.Short() {
		t.Skip("golden traces run a region, links and viewers for 6 s: skipped with -short")
	}
	goldenOnce.Do(func() { goldenTraces, goldenErr = makeGolden() })
	if goldenErr != nil {
		t.Fatal(goldenErr)
	}
	return goldenTraces
}

func makeGolden() ([]*goldenTrace, error) {
	sim, err := region.New(region.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Activity: region.Flying}, nil)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { sim.Run(ctx) })
	defer wg.Wait()
	defer cancel()

	traces := make([]*goldenTrace, len(goldenLosses))
	var runs sync.WaitGroup
	errs := make([]error, len(goldenLosses))
	for i, loss := range goldenLosses {
		tr := &goldenTrace{loss: loss, delay: goldenDelay}
		traces[i] = tr
		var mu sync.Mutex
		var ds []capturetest.Datagram
		cfg := link.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Upstream: sim.Addr(), Seed: uint64(100 + i),
			Down: link.PipeConfig{Loss: loss, Delay: goldenDelay}, Up: link.PipeConfig{Delay: goldenDelay},
			Tap: func(d link.Datagram) {
				mu.Lock()
				ds = append(ds, capturetest.Datagram{At: d.At, Src: d.Src, Dst: d.Dst, Payload: slices.Clone(d.Payload)})
				if !d.Up {
					tr.delivered++
				}
				mu.Unlock()
			},
			OnDrop: func(d link.Datagram, _ link.Cause) {
				h, _, _, err := lludp.ParseHeader(d.Payload)
				if err != nil || d.Up || h.Flags.Resent() || h.Sequence == 0 {
					return
				}
				mu.Lock()
				tr.dropped++
				mu.Unlock()
			}}
		relay, err := link.New(cfg, nil)
		if err != nil {
			return nil, err
		}
		tr.sim = relay.Addr()
		wg.Go(func() { relay.Run(ctx) })
		runs.Go(func() {
			// Pings every 250 ms: RTT samples enough in a short run (the
			// viewer's 5 s default would give one).
			v, err := viewer.New(viewer.Config{Sim: relay.Addr(), CircuitCode: uint32(40 + i), PingInterval: 250 * time.Millisecond}, nil)
			if err != nil {
				errs[i] = err
				return
			}
			vctx, vcancel := context.WithTimeout(ctx, goldenRun)
			defer vcancel()
			v.Run(vctx)
			tr.viewer = v.Report()
			stopped := time.Now()
			mu.Lock()
			defer mu.Unlock()
			// The capture ends where the viewer stopped reading: what the
			// link delivers later (new losses at 10 %) the viewer's report
			// never saw, and the two are compared.
			ds = slices.DeleteFunc(ds, func(d capturetest.Datagram) bool { return d.At.After(stopped) })
			// The tap runs on the relay's goroutines: its datagrams come in
			// delivery order, which is time order per direction only.
			slices.SortStableFunc(ds, func(a, b capturetest.Datagram) int { return a.At.Compare(b.At) })
			var buf bytes.Buffer
			errs[i] = capturetest.Write(&buf, capturetest.Pcap, ds)
			tr.pcap = buf.Bytes()
		})
	}
	runs.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return traces, nil
}

func auditBytes(t testing.TB, cfg Config, name string, b []byte) *Report {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := capture.NewReader(bytes.NewReader(b), cfg.Ports)
	if err != nil {
		t.Fatal(err)
	}
	a.Read([]Input{{Name: name, Reader: r}}, nil)
	return a.Report()
}

func TestGoldenTraces(t *testing.T) {
	for _, tr := range golden(t) {
		t.Run(fmt.Sprintf("loss=%g%%", 100*tr.loss), func(t *testing.T) {
			r := auditBytes(t, Config{Sims: []netip.AddrPort{tr.sim}, Series: true}, "golden", tr.pcap)
			var down *Circuit
			for i := range r.Circuits {
				if r.Circuits[i].Direction == "down" {
					down = &r.Circuits[i]
				}
			}
			if down == nil {
				t.Fatalf("no down circuit: %+v", r.Circuits)
			}
			t.Logf("loss %.3f: audit lost %d (loss rate %.4f, p %.4f, %d events) of %d, RTT %v ms, fair %v, received %.0f, ratio %v; link dropped %d originals; viewer %+v",
				tr.loss, down.Lost, down.LossRate, down.LossEventRate, down.LossEvents, down.Packets, deref(down.RTTMs), deref(down.FairMeanS), down.MeanBitPerS, deref(down.ReceivedOverFair), tr.dropped, tr.viewer)
			checkGolden(t, tr, r, down)
		})
	}
}

// checkGolden holds the audit of a golden trace to the link's settings
// and record and to the viewer's own report.
func checkGolden(t *testing.T, tr *goldenTrace, r *Report, down *Circuit) {
	t.Helper()
	// Every original the link dropped is a loss at the viewer; the last
	// few may lack the three later arrivals that confirm them (NDUPACK).
	if d := int(down.Lost) - tr.dropped; d > 0 || d < -3 {
		t.Errorf("audit lost %d, the link dropped %d originals", down.Lost, tr.dropped)
	}
	if down.SpuriousResends+down.Duplicates > down.Resent+down.Packets/100 {
		t.Errorf("%d spurious and %d duplicates of %d resends", down.SpuriousResends, down.Duplicates, down.Resent)
	}
	// Bernoulli loss: the measured rate is within four standard deviations
	// of the setting.
	n := float64(down.Packets)
	if sd := math.Sqrt(tr.loss * (1 - tr.loss) / n); math.Abs(down.LossRate-tr.loss) > 4*sd {
		t.Errorf("loss rate %.4f, the link's %.4f (±4σ = %.4f)", down.LossRate, tr.loss, 4*sd)
	}
	// RTT: the link's two delays, plus what the region and relay loops add
	// on a loopback shared with other tests (a few ms, more under load);
	// never the ack-based estimate.
	if down.RTTMs == nil {
		t.Fatalf("no RTT from %d ping pairs", down.RTTSamples)
	}
	lo := float64(2*tr.delay) / 1e6
	if rtt := *down.RTTMs; rtt < lo || rtt > lo+25 {
		t.Errorf("RTT %.1f ms, want the link's %.0f ms plus at most 25", rtt, lo)
	}
	// One loss event is every loss within one RTT of its first
	// (congestion.md §3.2): each event absorbs the losses among the k
	// packets of the RTT after it, k·p of them on average, so Bernoulli
	// loss gives lost/(1 + k·p) events. ±25 % and 2 events: the sampling
	// spread of a few dozen events.
	k := n / down.DurationS * *down.RTTMs / 1000
	want := float64(down.Lost) / (1 + k*down.LossRate)
	if got := float64(down.LossEvents); math.Abs(got-want) > 0.25*want+2 {
		t.Errorf("%d loss events, want about %.1f (%d losses, %.1f packets per RTT)", down.LossEvents, want, down.Lost, k)
	}
	if p := down.LossEventRate; math.Abs(p-float64(down.LossEvents)/(n-float64(down.SpuriousResends+down.Duplicates))) > 1e-3 {
		t.Errorf("loss event rate %.4f is not events per counted packet", p)
	}
	// received/fair agrees with the viewer's own report. The viewer measures
	// with the same tracker at its end of the same datagrams, so at the
	// capture's last second the loss event rate (RFC 5348 §5.4 over the
	// last eight intervals) and RTT are its own, give or take the few
	// datagrams the capture holds after the viewer stopped: the fair rate
	// then, against the mean received rate, must be the ratio the viewer's
	// numbers give, within 10 % (and see the RTT below). (The whole connection's ratio uses the
	// whole connection's p instead, which eight intervals estimate only to
	// about 1/√8 = 35 %.)
	if tr.loss < 0.001 {
		switch {
		case down.Lost == 0 && (down.FairState != FairUnbounded || down.FairMeanS != nil || down.ReceivedOverFair != nil):
			t.Errorf("no loss, yet fair %q %v, ratio %v; want %q and no numbers", down.FairState, down.FairMeanS, down.ReceivedOverFair, FairUnbounded)
		case down.Lost > 0 && down.FairState != FairKnown:
			t.Errorf("%d lost, fair %q", down.Lost, down.FairState)
		}
		return
	}
	if down.FairState != FairKnown || down.ReceivedOverFair == nil || tr.viewer.RTTms == nil {
		t.Fatalf("fair %q, ratio %v, viewer RTT %v", down.FairState, down.ReceivedOverFair, tr.viewer.RTTms)
	}
	var last *Second
	for i := range r.Seconds {
		if s := &r.Seconds[i]; s.Direction == "down" {
			last = s
		}
	}
	if last == nil || last.FairBitPerS == nil {
		t.Fatalf("last second %+v", last)
	}
	// Both group losses into events by their own ping RTT, and the viewer's
	// carries its read latency under load: two losses about one RTT apart
	// can be one event at the viewer and two here (a CI run under the race
	// detector: 10 events against 9 of 10 losses). Such a split or merge
	// changes one of the eight intervals RFC 5348 §5.4 averages and shifts
	// the rest, moving p by up to about a third, so each event of
	// difference widens the 10 %, and the ratio below by half of what p
	// moved (the fair rate goes nearly as 1/√p). How many land on the
	// boundary grows with the gap between the two RTTs: runs on a quiet
	// machine measured 50 events against the viewer's 47 at 3 % (and 47
	// against 44, 77 against 73 under load), so more than one event in ten
	// apart is not a boundary case.
	regrouped := math.Abs(float64(down.LossEvents) - float64(tr.viewer.LossEvents))
	if regrouped > max(1, float64(tr.viewer.LossEvents)/10) {
		t.Errorf("%d loss events, the viewer's %d", down.LossEvents, tr.viewer.LossEvents)
	}
	pShift := math.Log(last.LossEventRate / tr.viewer.LossEventRate)
	if math.Abs(pShift) > 0.10+0.35*regrouped {
		t.Errorf("loss event rate %.4f at the end, the viewer's %.4f (%d events, the viewer's %d)", last.LossEventRate, tr.viewer.LossEventRate, down.LossEvents, tr.viewer.LossEvents)
	}
	viewerRTT := time.Duration(*tr.viewer.RTTms * float64(time.Millisecond))
	viewerFair := ratecalc.TFRCRate(down.MeanPayload, viewerRTT, tr.viewer.LossEventRate).BitsPerSecond()
	viewerRatio := tr.viewer.RateBPS / viewerFair
	// The tap sees a datagram when the link delivers it, the viewer when
	// its goroutine reads it: under load (the race detector, a busy CI) the
	// viewer's RTT carries its own read latency, and the fair rate goes as
	// 1/R, so that difference widens the 10 %.
	tol := 0.10
	if last.RTTMs != nil {
		tol += math.Abs(math.Log(*tr.viewer.RTTms / *last.RTTMs))
	}
	if regrouped > 0 {
		tol += math.Abs(pShift) / 2
	}
	if q := down.MeanBitPerS / *last.FairBitPerS / viewerRatio; math.Abs(math.Log(q)) > tol {
		t.Errorf("received/fair %.2f at the end, the viewer's report gives %.2f", down.MeanBitPerS / *last.FairBitPerS, viewerRatio)
	}
	if math.Abs(down.MeanBitPerS/tr.viewer.RateBPS-1) > 0.05 {
		t.Errorf("received %.0f bit/s, the viewer %.0f", down.MeanBitPerS, tr.viewer.RateBPS)
	}
	// The fair rate is linear in s.
	if q := *down.FairNominal / *down.FairMeanS; math.Abs(q-NominalSegmentBytes/down.MeanPayload) > 1e-9*q {
		t.Errorf("fair(1460)/fair(mean) = %v, want 1460/%.1f", q, down.MeanPayload)
	}
	if down.Mathis == nil || *down.Mathis < *down.FairMeanS {
		t.Errorf("Mathis %v below TFRC %v: it ignores timeouts, so it is the larger", down.Mathis, *down.FairMeanS)
	}
	// The verdict's estimate is one TCP share (ratecalc.TCPShareRate) at
	// the loss event rate per segment and the ping RTT: wiring only, at
	// these RTTs and losses Reno's window is the larger (TestTCPEstimate
	// has CUBIC's). The RTT comes back through milliseconds.
	if down.FairTCP == nil || down.SegmentLossEventRate <= 0 || down.RTTMs == nil {
		t.Errorf("TCP estimate %v at p per segment %v", down.FairTCP, down.SegmentLossEventRate)
	} else {
		rtt := time.Duration(math.Round(*down.RTTMs * float64(time.Millisecond)))
		want := ratecalc.TCPShareRate(NominalSegmentBytes, rtt, down.SegmentLossEventRate).BitsPerSecond()
		if math.Abs(*down.FairTCP/want-1) > 1e-6 {
			t.Errorf("TCP estimate %.0f bit/s, want TCPShareRate's %.0f", *down.FairTCP, want)
		}
	}
	if down.RatioMedian == nil || *down.RatioP25 > *down.RatioMedian || *down.RatioMedian > *down.RatioP75 {
		t.Errorf("per-second ratios p25 %v, median %v, p75 %v", down.RatioP25, down.RatioMedian, down.RatioP75)
	}
	// The viewer asked for its 1,500 kbps at login; every controller was
	// replayed at the 5 s decision.
	sources := map[string]int{}
	for _, q := range r.Requests {
		sources[q.Source]++
		if q.Source == SourceCapture && math.Abs(q.TotalBitPerS-viewer.DefaultThrottle.BitsPerSecond()) > 1 {
			t.Errorf("captured request %.0f bit/s, the viewer sends %.0f", q.TotalBitPerS, viewer.DefaultThrottle.BitsPerSecond())
		}
	}
	for _, src := range []string{SourceCapture, SourceReplayVTCP, SourceReplayWindow, SourceReplayTFRC, SourceReplayStock} {
		if sources[src] == 0 {
			t.Errorf("no %s request: %v", src, sources)
		}
	}
	if down.Requests == 0 || down.LastRequestBitPerS == nil || down.RequestedOverFair == nil {
		t.Errorf("requests %d, last %v, requested/fair %v", down.Requests, down.LastRequestBitPerS, down.RequestedOverFair)
	}
}

func deref(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// TestReplaySegment: --segment reaches the replayed controllers: on the
// same trace, TFRC's replayed requests with s = 1460 are larger than with
// the mean payload once losses have been seen.
func TestReplaySegment(t *testing.T) {
	var tr *goldenTrace
	for _, g := range golden(t) {
		if g.loss == 0.03 {
			tr = g
		}
	}
	sum := func(seg throttle.Segment) (total float64, n int) {
		r := auditBytes(t, Config{Sims: []netip.AddrPort{tr.sim}, Series: true, Segment: seg}, "golden", tr.pcap)
		for _, q := range r.Requests {
			if q.Source == SourceReplayTFRC {
				total += q.TotalBitPerS
				n++
			}
		}
		return total, n
	}
	mean, n1 := sum(throttle.SegmentMean)
	nominal, n2 := sum(throttle.SegmentNominal)
	if n1 == 0 || n1 != n2 {
		t.Fatalf("%d and %d replayed TFRC requests", n1, n2)
	}
	if nominal <= mean {
		t.Errorf("replayed TFRC asked %.0f bit/s in all with s = 1460, %.0f with the mean: the segment did not reach the replay", nominal, mean)
	}
}

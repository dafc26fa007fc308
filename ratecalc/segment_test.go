package ratecalc

import (
	"math"
	"testing"
	"time"
)

// traceEvent is one input of a recorded circuit: an RTT sample, a packet,
// or a decision.
type traceEvent struct {
	at     time.Time
	rtt    time.Duration // > 0: an RTT sample
	packet *Packet
	decide bool
}

// circuitTrace describes a circuit of small packets: an RTT sample, then
// one packet of size bytes every gap, n of them, with a decision every
// 5 s. Every lossEvery-th packet sent at lossFrom or later is lost (none if
// 0), and so is every packet from the allLostFrom-th on (if positive).
type circuitTrace struct {
	rtt, gap, lossFrom time.Duration
	size, n, lossEvery int
	allLostFrom        int
}

func (c circuitTrace) events() []traceEvent {
	t0 := time.Unix(1_700_000_000, 0)
	out := []traceEvent{{at: t0, rtt: c.rtt}}
	const interval = 5 * time.Second
	next := t0.Add(interval)
	for i := range c.n {
		at := t0.Add(time.Duration(i) * c.gap)
		for !at.Before(next) {
			out = append(out, traceEvent{at: next, decide: true})
			next = next.Add(interval)
		}
		lost := c.lossEvery > 0 && i%c.lossEvery == 0 && at.Sub(t0) >= c.lossFrom || c.allLostFrom > 0 && i >= c.allLostFrom
		out = append(out, traceEvent{at: at, packet: &Packet{At: at, Size: c.size, Lost: lost}})
	}
	return append(out, traceEvent{at: next, decide: true})
}

func replay(c Controller, ev traceEvent) (Rate, bool) {
	switch {
	case ev.rtt > 0:
		c.OnRTT(ev.rtt, ev.at)
	case ev.packet != nil:
		c.OnPacket(*ev.packet)
	case ev.decide:
		return c.Rate(ev.at), true
	}
	return 0, false
}

// TestNominalSegment replays the same circuit of small packets through a
// controller with s = the mean payload and one with s = 1460 B (RFC 4828),
// decision by decision. Where the rate stands on s — window tracking's
// cwnd·s/SRTT, TFRC's X_calc and its s/t_mbi floor — the nominal one asks
// for exactly 1460/mean times as much; TFRC's start-up, a window of the
// viewer's packets, does not change. What the controllers measure and
// decide besides the rate — p, the window, slow start and above all the
// application-limited test, which measures the window in packets of the
// mean size — is the same.
func TestNominalSegment(t *testing.T) {
	const nominal = NominalSegmentSize
	for _, tc := range []struct {
		name  string
		make  func(Config) (Controller, error)
		trace circuitTrace
		// scaled reports whether a decision of the mean controller, given
		// its stats, stands on s.
		scaled func(mean Stats) bool
		// check, if set, tests the last decision further.
		check func(t *testing.T, mean, nom Stats)
	}{{
		name: "window, application-limited in slow start",
		make: func(c Config) (Controller, error) { return NewWindow(WindowConfig{Config: c}) },
		// 300 B every 5 ms, 60 kB/s, no loss, R = 100 ms: the window
		// stops growing near 2·60 kB/s·100 ms/300 B = 40 packets. Compared
		// with cwnd·1460/R it would stop near 8.
		trace:  circuitTrace{rtt: 100 * time.Millisecond, size: 300, gap: 5 * time.Millisecond, n: 6000},
		scaled: func(Stats) bool { return true },
		check: func(t *testing.T, mean, nom Stats) {
			if !nom.AppLimited || !mean.AppLimited {
				t.Errorf("application-limited: mean %v, nominal %v; want both", mean.AppLimited, nom.AppLimited)
			}
			use := mean.ReceiveRate.BitsPerSecond() / 8 * mean.SRTT.Seconds() / mean.SegmentSize // packets per RTT
			if nom.Window < 1.8*use || nom.Window > 2.5*use {
				t.Errorf("window %.1f packets with %.1f received per RTT: want about twice (RFC 7661)", nom.Window, use)
			}
		},
	}, {
		name: "window, congestion avoidance",
		make: func(c Config) (Controller, error) { return NewWindow(WindowConfig{Config: c}) },
		// 400 B every 2 ms, one in 300 lost: a loss event every 600 ms.
		trace:  circuitTrace{rtt: 80 * time.Millisecond, size: 400, gap: 2 * time.Millisecond, n: 60000, lossEvery: 300},
		scaled: func(Stats) bool { return true },
		check: func(t *testing.T, mean, nom Stats) {
			if mean.LossEvents < 100 || mean.SlowStart {
				t.Errorf("%d loss events, slow start %v: want congestion avoidance", mean.LossEvents, mean.SlowStart)
			}
		},
	}, {
		name: "TFRC, start-up then losses",
		make: func(c Config) (Controller, error) { return NewTFRC(TFRCConfig{Config: c}) },
		// 300 B every ms (300 kB/s, twice which stays above X_calc at
		// 1460 B), one in 200 lost from 20 s on. Before the first loss
		// the start-up rate is a window of the viewer's packets, the same
		// for both. The first loss interval, synthesised from the receive
		// rate, differs (TestNominalSegmentFirstLoss), but 25 loss events
		// later, at the next decision, it has left the history of eight.
		trace:  circuitTrace{rtt: 100 * time.Millisecond, size: 300, gap: time.Millisecond, n: 120000, lossEvery: 200, lossFrom: 20 * time.Second},
		scaled: func(mean Stats) bool { return mean.LossEventRate > 0 },
	}, {
		name: "TFRC, first packet lost",
		make: func(c Config) (Controller, error) { return NewTFRC(TFRCConfig{Config: c}) },
		// The first interval comes from X_target = s/(2R), which gives
		// the same p whatever s.
		trace:  circuitTrace{rtt: 100 * time.Millisecond, size: 300, gap: time.Millisecond, n: 120000, lossEvery: 200},
		scaled: func(mean Stats) bool { return mean.LossEventRate > 0 },
		check: func(t *testing.T, mean, nom Stats) {
			if mean.EquationRate <= 0 || math.Abs(float64(nom.EquationRate/mean.EquationRate)*mean.SegmentSize/nominal-1) > 1e-9 {
				t.Errorf("equation rate %v with the mean, %v nominal: want the ratio 1460/%.1f", mean.EquationRate, nom.EquationRate, mean.SegmentSize)
			}
			if nom.Rate >= 2*nom.ReceiveRate {
				t.Errorf("nominal rate %v is limited by the receive rate %v: the test would not see X_calc", nom.Rate, nom.ReceiveRate)
			}
		},
	}, {
		name: "TFRC, t_mbi floor",
		make: func(c Config) (Controller, error) { return NewTFRC(TFRCConfig{Config: c}) },
		// R = 10 s and everything lost after 100 packets: X_calc and the
		// receive limit fall below s/64 s (RFC 5348 §4.3).
		trace:  circuitTrace{rtt: 10 * time.Second, size: 300, gap: 10 * time.Millisecond, n: 10000, allLostFrom: 100},
		scaled: func(mean Stats) bool { return mean.LossEventRate > 0 },
		check: func(t *testing.T, mean, nom Stats) {
			for _, st := range []Stats{mean, nom} {
				if want := Rate(st.FairSegmentSize / 64); st.Rate != want {
					t.Errorf("rate %v with s = %.1f B: want the floor s/t_mbi = %v", st.Rate, st.FairSegmentSize, want)
				}
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			mc, err := tc.make(Config{})
			if err != nil {
				t.Fatal(err)
			}
			nc, err := tc.make(Config{NominalSegment: nominal})
			if err != nil {
				t.Fatal(err)
			}
			decisions, scaledDecisions := 0, 0
			var mean, nom Stats
			for _, ev := range tc.trace.events() {
				mr, decided := replay(mc, ev)
				nr, _ := replay(nc, ev)
				if !decided {
					continue
				}
				decisions++
				mean, nom = mc.Stats(), nc.Stats()
				want := 1.0
				if tc.scaled(mean) {
					want = nominal / mean.SegmentSize
					scaledDecisions++
				}
				if got := float64(nr / mr); math.Abs(got/want-1) > 1e-9 {
					t.Fatalf("decision %d at %v: %v nominal, %v mean: ratio %.6f, want %.6f", decisions, ev.at, nr, mr, got, want)
				}
				if nom.SegmentSize != mean.SegmentSize || nom.FairSegmentSize != nominal || mean.FairSegmentSize != mean.SegmentSize {
					t.Fatalf("segment sizes: mean run %v/%v, nominal run %v/%v", mean.SegmentSize, mean.FairSegmentSize, nom.SegmentSize, nom.FairSegmentSize)
				}
				if nom.Window != mean.Window || nom.AppLimited != mean.AppLimited || nom.SlowStart != mean.SlowStart ||
					nom.LossEvents != mean.LossEvents || math.Abs(nom.LossEventRate-mean.LossEventRate) > 1e-12*mean.LossEventRate || nom.ReceiveRate != mean.ReceiveRate {
					t.Fatalf("decision %d: the measurements differ:\nmean    %+v\nnominal %+v", decisions, mean, nom)
				}
			}
			t.Logf("%d decisions, %d scaled; last: mean %v, nominal %v (s %.1f B, p %.4f, window %.1f)", decisions, scaledDecisions, mean.Rate, nom.Rate, mean.SegmentSize, mean.LossEventRate, mean.Window)
			if scaledDecisions == 0 || tc.trace.lossFrom > 0 && scaledDecisions == decisions {
				t.Errorf("%d of %d decisions stood on s: the trace does not exercise what it describes", scaledDecisions, decisions)
			}
			if tc.check != nil {
				tc.check(t, mean, nom)
			}
		})
	}
}

// TestNominalSegmentFirstLoss: TFRC synthesises its first loss interval
// from the receive rate (RFC 5348 §6.3.1) with the equation's own s, so
// the first loss continues from the rate received in both settings; with
// the mean s there, the nominal controller's first loss would raise its
// rate towards 1460/mean times what arrived.
func TestNominalSegmentFirstLoss(t *testing.T) {
	// 300 B every ms, 300 kB/s, one loss at 20 s and 50 more packets: the
	// interval open since the loss is still shorter than the first one.
	trace := circuitTrace{rtt: 100 * time.Millisecond, size: 300, gap: time.Millisecond, n: 20050, lossEvery: 20000, lossFrom: 20 * time.Second}
	var last [2]Stats
	for i, cfg := range []Config{{}, {NominalSegment: NominalSegmentSize}} {
		c, err := NewTFRC(TFRCConfig{Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range trace.events() {
			replay(c, ev)
		}
		last[i] = c.Stats()
	}
	mean, nom := last[0], last[1]
	t.Logf("after the first loss: mean s %v (p %.6f), nominal %v (p %.6f), receiving %v", mean.Rate, mean.LossEventRate, nom.Rate, nom.LossEventRate, mean.ReceiveRate)
	if mean.LossEvents != 1 || nom.LossEvents != 1 {
		t.Fatalf("loss events %d and %d, want 1", mean.LossEvents, nom.LossEvents)
	}
	if r := float64(nom.Rate / mean.Rate); r < 0.99 || r > 1.01 {
		t.Errorf("nominal rate %v is %.2f× the mean's %v after the first loss: want both near the receive rate", nom.Rate, r, mean.Rate)
	}
	// Same X_calc from a 1460/mean larger s: f(p) larger by that much.
	if want := tfrcF(mean.LossEventRate) * NominalSegmentSize / mean.SegmentSize; math.Abs(tfrcF(nom.LossEventRate)/want-1) > 0.01 {
		t.Errorf("nominal p %.6f, mean p %.6f: want f(p) larger by 1460/%.0f", nom.LossEventRate, mean.LossEventRate, mean.SegmentSize)
	}
}

package ratecalc

import (
	"math"
	"testing"
	"time"
)

func mustVirtualTCP(t testing.TB, cfg VirtualTCPConfig) *VirtualTCP {
	c, err := NewVirtualTCP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestVirtualTCPConfig(t *testing.T) {
	for _, cfg := range []VirtualTCPConfig{
		{InitialWindow: 1, MinWindow: 2},
		{MinWindow: -1},
		{InitialWindow: 1e7},
		{Config: Config{SegmentSize: -5}},
	} {
		if _, err := NewVirtualTCP(cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
	v := mustVirtualTCP(t, VirtualTCPConfig{})
	if st := v.Stats(); st.Window != defaultVirtualInitialWindow || !st.SlowStart || st.FairSegmentSize != NominalSegmentSize {
		t.Errorf("initial state %+v", st)
	}
}

// TestVirtualTCPLink: alone on the simulated link, the virtual TCP uses
// most of a drop-tail bottleneck of one bandwidth-delay product without
// holding it overfull (a request holds for an interval, so each overshoot
// costs several loss events: well below a TCP flow's utilisation, which
// the lab measures beside TCP, not alone), and at random loss
// requests about what the TFRC equation gives a flow of full segments at
// that loss (the losses are counted by bytes, so the viewer's 300-byte
// datagrams do not make it 1460/300 times more cautious), in every seed.
func TestVirtualTCPLink(t *testing.T) {
	for seed := range uint64(3) {
		// 2 Mbit/s, 30 packets of 300 B, 20 ms one way.
		capacity := Rate(250_000)
		res := runLink(mustVirtualTCP(t, VirtualTCPConfig{}), linkConfig{capacity: capacity, buffer: 30, delay: 20 * time.Millisecond,
			size: 300, interval: time.Second, pingEvery: time.Second, seed: seed}, 300*time.Second, 60*time.Second)
		t.Logf("seed %d: received %.2f of the link", seed, float64(res.meanRecv/capacity))
		if r := float64(res.meanRecv / capacity); r < 0.6 || r > 1.01 {
			t.Errorf("seed %d: received %.2f of the link, want 0.6–1", seed, r)
		}
		for _, loss := range []float64{0.005, 0.03, 0.1} {
			d := 50 * time.Millisecond
			res := runLink(mustVirtualTCP(t, VirtualTCPConfig{}), linkConfig{loss: loss, delay: d, size: 300, seed: seed}, runFor(loss, d, 400), 60*time.Second)
			want := TFRCRate(NominalSegmentSize, res.meanRTT, loss)
			t.Logf("seed %d, loss %g: requested %v, received %v, TFRC at 1460 B %v, RTT %v", seed, loss, res.meanRate, res.meanRecv, want, res.meanRTT)
			if e := relErr(res.meanRecv, want); e < -0.35 || e > 0.25 {
				t.Errorf("seed %d, loss %g: received %v, TFRC(1460 B, p = loss) %v: %+.0f %%, want −35 %% to +25 %%", seed, loss, res.meanRecv, want, 100*e)
			}
		}
	}
}

func TestSegmentLossEventRateOver(t *testing.T) {
	for _, tc := range []struct {
		bytes, lost, events, s, want float64
	}{
		{146000, 10, 5, 1460, 5.0 / 100}, // full segments: events per segment
		{146000, 10, 10, 146, 1.0 / 100}, // ten 146-byte losses are one segment's worth
		{146000, 10, 10, 292, 2.0 / 100}, // or two of 292 bytes
		{146000, 1, 1, 80, 1.0 / 100},    // one event counts, however small its loss
		{0, 1, 1, 80, 0}, {100, 0, 0, 80, 0}, {100, 1, 1, -3, 0},
		{1000, 50, 50, 1460, 1}, // capped at 1
	} {
		if got := SegmentLossEventRateOver(tc.bytes, tc.lost, tc.events, tc.s); got != tc.want {
			t.Errorf("SegmentLossEventRateOver(%v, %v, %v, %v) = %v, want %v", tc.bytes, tc.lost, tc.events, tc.s, got, tc.want)
		}
	}
}

// TestVirtualTCPPathRTT: with a ping every 5 s, the RTT the window runs
// on follows a queue that filled after the first sample within three
// samples, where RFC 6298's SRTT (what Stats.SRTT still reports) keeps
// most of the first; with a sample per round trip the two agree, and the
// requested rate is the window over the path's RTT.
func TestVirtualTCPPathRTT(t *testing.T) {
	t0 := time.Unix(1000, 0)
	v := mustVirtualTCP(t, VirtualTCPConfig{})
	v.OnRTT(40*time.Millisecond, t0)
	for i := 1; i <= 3; i++ {
		v.OnRTT(130*time.Millisecond, t0.Add(time.Duration(i)*5*time.Second))
	}
	st := v.Stats()
	if got := st.PathRTT; got < 115*time.Millisecond || got > 130*time.Millisecond {
		t.Errorf("sparse samples: path RTT %v after three samples of 130 ms, want 115–130 ms", got)
	}
	if st.SRTT > 80*time.Millisecond {
		t.Errorf("sparse samples: SRTT %v, want RFC 6298's (below 80 ms after three samples)", st.SRTT)
	}
	want := Rate(st.Window * NominalSegmentSize / st.PathRTT.Seconds())
	if got := v.Rate(t0.Add(16 * time.Second)); relErr(got, want) > 1e-9 || relErr(got, want) < -1e-9 {
		t.Errorf("rate %v, want window ÷ path RTT %v", got, want)
	}

	dense := mustVirtualTCP(t, VirtualTCPConfig{})
	for i := range 200 {
		sample := time.Duration(60+i%50) * time.Millisecond
		dense.OnRTT(sample, t0.Add(time.Duration(i)*80*time.Millisecond))
	}
	if st := dense.Stats(); relErr(Rate(st.PathRTT), Rate(st.SRTT)) > 0.01 || relErr(Rate(st.PathRTT), Rate(st.SRTT)) < -0.01 {
		t.Errorf("a sample per round trip: path RTT %v, SRTT %v, want within 1 %%", st.PathRTT, st.SRTT)
	}

	for _, tc := range []struct {
		elapsed, rtt time.Duration
		want         float64
	}{
		{0, 100 * time.Millisecond, rttAlpha},
		{100 * time.Millisecond, 100 * time.Millisecond, rttAlpha},
		{200 * time.Millisecond, 100 * time.Millisecond, 1 - (1-rttAlpha)*(1-rttAlpha)},
		{5 * time.Second, 100 * time.Millisecond, maxPathRTTGain},
		{time.Second, 0, rttAlpha},
	} {
		if got := pathRTTGain(tc.elapsed, tc.rtt); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("pathRTTGain(%v, %v) = %v, want %v", tc.elapsed, tc.rtt, got, tc.want)
		}
	}
}

// TestVirtualTCPEquationCapQueue: the heavy-loss cap's RTT is the
// smallest RTT, whatever the queue adds to the path's (equationCap says
// why; counting the queue was tried and taken back).
func TestVirtualTCPEquationCapQueue(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const p = 0.03
	m := PadhyeModel{T0: 320 * time.Millisecond, MaxWindowBytes: math.MaxFloat64} // max(4R, minRTO)
	want := m.Rate(NominalSegmentSize, 80*time.Millisecond, p)
	for _, path := range []time.Duration{80 * time.Millisecond, 120 * time.Millisecond, 900 * time.Millisecond} {
		v := mustVirtualTCP(t, VirtualTCPConfig{})
		v.OnRTT(80*time.Millisecond, t0)
		for i := 1; i <= 12; i++ {
			v.OnRTT(path, t0.Add(time.Duration(i)*5*time.Second))
		}
		if got := v.Stats().PathRTT; relErr(Rate(got), Rate(path)) > 0.01 || relErr(Rate(got), Rate(path)) < -0.01 {
			t.Fatalf("path RTT %v after twelve samples of %v", got, path)
		}
		if got := v.equationCap(p); relErr(got, want) > 1e-9 || relErr(got, want) < -1e-9 {
			t.Errorf("path RTT %v: cap %v, want the equation at the smallest RTT, 80 ms: %v", path, got, want)
		}
	}
}

// TestVirtualTCPGrowthLimitTie: grow holds the window at exactly
// growthLimit times what arrives, and while the interval in progress is
// shorter than an RTT what arrives is the last interval's rate, so the
// next datagrams' application-limited test is a tie: never "limited",
// whatever the rounding.
func TestVirtualTCPGrowthLimitTie(t *testing.T) {
	t0 := time.Unix(1000, 0)
	limited := 0
	for rttMs := 20; rttMs <= 400; rttMs += 7 {
		for size := 500; size <= 1400; size += 37 {
			v := mustVirtualTCP(t, VirtualTCPConfig{})
			rtt := time.Duration(rttMs) * time.Millisecond
			v.OnRTT(rtt, t0)
			at := t0
			leaveSlowStart(t, v, at)
			for round := range 40 {
				for range 50 {
					at = at.Add(time.Millisecond)
					v.OnPacket(Packet{At: at, Size: size})
					if round > 1 && v.Stats().AppLimited {
						limited++
					}
				}
				v.Rate(at)
			}
		}
	}
	if limited > 0 {
		t.Errorf("%d datagrams judged application-limited at a steady arrival rate, the window held at its growth limit", limited)
	}
}

// TestVirtualTCPGrowthLimit: a flow that sends less than its window
// allows (an idle avatar, or a request still on its way) holds the window
// at twice what arrives, RFC 7661's validated phase (pipeACK at least half
// the window) and window tracking's own guard: no more, however long it
// runs, and not less, for the window must run far enough ahead of the
// request to climb back after a cut within the next interval or two.
func TestVirtualTCPGrowthLimit(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct {
		name string
		rtt  time.Duration
		size int
		gap  time.Duration
	}{
		{"60 kB/s of 300-byte datagrams, 100 ms", 100 * time.Millisecond, 300, 5 * time.Millisecond},
		{"240 kB/s of 1,200-byte datagrams, 40 ms", 40 * time.Millisecond, 1200, 5 * time.Millisecond},
		{"800 kB/s of 800-byte datagrams, 250 ms", 250 * time.Millisecond, 800, time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := mustVirtualTCP(t, VirtualTCPConfig{})
			v.OnRTT(tc.rtt, t0)
			at := t0
			// A second of datagrams, then a loss event: the window then
			// grows as CUBIC's, not in slow start.
			for at.Sub(t0) < time.Second {
				at = at.Add(tc.gap)
				v.OnPacket(Packet{At: at, Size: tc.size})
			}
			leaveSlowStart(t, v, at)
			for i := 1; at.Sub(t0) < 60*time.Second; i++ {
				at = at.Add(tc.gap)
				v.OnPacket(Packet{At: at, Size: tc.size})
				if i%1000 == 0 {
					v.Rate(at)
				}
			}
			st := v.Stats()
			if st.SlowStart || st.LossEvents == 0 {
				t.Fatalf("slow start %v with %d loss events: the window must grow as CUBIC's here", st.SlowStart, st.LossEvents)
			}
			arriving := float64(tc.size) / tc.gap.Seconds() // bytes/s
			use := arriving * tc.rtt.Seconds() / NominalSegmentSize
			if got := st.Window / use; got < 1.95 || got > 2.01 {
				t.Errorf("window %.1f segments with %.1f arriving per RTT: %.3f times, want 2 (RFC 7661)", st.Window, use, got)
			}
		})
	}
}

// leaveSlowStart loses datagrams at at until the first loss event ends
// slow start (a datagram counts for its share of a 1,460-byte segment).
func leaveSlowStart(t *testing.T, v *VirtualTCP, at time.Time) {
	t.Helper()
	for range 20 {
		if !v.Stats().SlowStart {
			return
		}
		v.OnPacket(Packet{At: at, Lost: true})
	}
	t.Fatalf("still in slow start after 20 lost datagrams: %+v", v.Stats())
}

// TestVirtualTCPOwnShareOfLosses: a lost datagram counts for the part of
// what arrives that the virtual flow would have sent — half when the
// window's rate is half the arriving rate, as after a cut the request
// has yet to follow — and never for more than itself when the window is
// ahead of what arrives.
func TestVirtualTCPOwnShareOfLosses(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	const size = 730 // half a segment
	for _, tc := range []struct {
		name        string
		windowRatio float64 // the window's rate ÷ the arriving rate
		want        float64 // segments lost per lost datagram
	}{
		{"the window at half what arrives", 0.5, 0.25},
		{"the window at what arrives", 1, 0.5},
		{"the window ahead of what arrives", 1.5, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := mustVirtualTCP(t, VirtualTCPConfig{})
			v.OnRTT(100*time.Millisecond, t0)
			// 2 s of 730-byte datagrams at 100 kB/s: the interval's rate.
			at := t0
			for range 274 {
				at = at.Add(7300 * time.Microsecond)
				v.OnPacket(Packet{At: at, Size: size})
			}
			arriving := float64(v.partialRate())
			v.cwnd = tc.windowRatio * arriving * v.rttSec / NominalSegmentSize
			v.lostMass = 0
			v.OnPacket(Packet{At: at, Lost: true})
			if got := v.lostMass; math.Abs(got-tc.want) > 0.01 {
				t.Errorf("a lost datagram counted %.3f segments, want %.3f (s = %.0f B)", got, tc.want, v.s)
			}
		})
	}
	// Nothing has arrived yet: no rate to share, the loss counts whole.
	v := mustVirtualTCP(t, VirtualTCPConfig{})
	v.OnPacket(Packet{At: t0, Lost: true})
	if want := v.s / NominalSegmentSize; v.lostMass != want {
		t.Errorf("before any arrival a lost datagram counted %.3f segments, want %.3f", v.lostMass, want)
	}
}

// TestVirtualTCPEquationCapCUBIC: the heavy-loss cap is Padhye's model
// with the window between timeouts the larger of Reno's and CUBIC's (RFC
// 8312 Eq. 7): Reno's equation at heavy loss and on short paths, CUBIC's
// window on long paths at low loss, and never CUBIC's response without
// timeouts, which at p 0.3 lies above the equation.
func TestVirtualTCPEquationCapCUBIC(t *testing.T) {
	for _, tc := range []windowCase{
		{80 * time.Millisecond, 0.3, false},
		{80 * time.Millisecond, 0.1, false},
		{80 * time.Millisecond, 0.03, false},
		{200 * time.Millisecond, 0.001, true},
		{80 * time.Millisecond, 0.0002, true},
	} {
		v := mustVirtualTCP(t, VirtualTCPConfig{})
		v.OnRTT(tc.rtt, time.Unix(1000, 0))
		r, wCubic, wReno := tc.windows(t)
		t0 := max(4*r, minRTO.Seconds())
		want := Rate(NominalSegmentSize / (r/max(wCubic, wReno) + t0*min(1, 3*math.Sqrt(3*tc.p/8))*tc.p*(1+32*tc.p*tc.p)))
		if got := v.equationCap(tc.p); relErr(got, want) > 1e-3 || relErr(got, want) < -1e-3 {
			t.Errorf("R %v, p %v: cap %v, want %v", tc.rtt, tc.p, got, want)
		}
	}
}

// TestVirtualTCPApplicationLimitedNoCollapse: a region that sends less
// than one share (issue 33: terrain patches resent every 2 s, a smooth
// trickle) over a path with random loss. Every request stays at or above
// what arrived over its interval, and what arrives is the demand less the
// path's losses: the controller never throttles a stream the link carries.
func TestVirtualTCPApplicationLimitedNoCollapse(t *testing.T) {
	const delay = 40 * time.Millisecond
	for _, c := range []struct {
		name     string
		loss     float64
		link     linkConfig
		shareDiv float64 // demand = one share / shareDiv (smooth) ...
	}{
		{name: "terrain every 2 s, 3 %", loss: 0.03, link: linkConfig{appBurst: 32_000, appPeriod: 2 * time.Second, size: 1000}},
		{name: "terrain every 2 s, 1 %", loss: 0.01, link: linkConfig{appBurst: 32_000, appPeriod: 2 * time.Second, size: 1000}},
		{name: "terrain every 2 s, 10 %", loss: 0.10, link: linkConfig{appBurst: 8_000, appPeriod: 2 * time.Second, size: 1000}},
		{name: "trickle at a fifth of a share, 3 %", loss: 0.03, shareDiv: 5, link: linkConfig{size: 300}},
		{name: "trickle at half a share, 3 %", loss: 0.03, shareDiv: 2, link: linkConfig{size: 1200}},
	} {
		t.Run(c.name, func(t *testing.T) {
			share := TCPShareRate(NominalSegmentSize, 2*delay, c.loss)
			for seed := uint64(1); seed <= 3; seed++ {
				cfg := c.link
				cfg.delay, cfg.loss, cfg.seed = delay, c.loss, seed
				demand := Rate(float64(cfg.appBurst) / cfg.appPeriod.Seconds())
				if c.shareDiv > 0 {
					cfg.appRate = Rate(float64(share) / c.shareDiv)
					demand = cfg.appRate
				}
				if demand >= share {
					t.Fatalf("demand %v is not below one share %v: the case tests nothing", demand, share)
				}
				r := runLink(mustVirtualTCP(t, VirtualTCPConfig{}), cfg, 300*time.Second, 60*time.Second)
				below := 0
				for i := 2; i < len(r.received); i++ {
					// requested[i+1] is the decision at the end of interval i.
					if r.requested[i+1] < r.received[i] {
						below++
						if below <= 3 {
							t.Errorf("seed %d, interval %d: asked %v after %v arrived", seed, i, r.requested[i+1], r.received[i])
						}
					}
				}
				want := Rate(float64(demand) * (1 - c.loss) * 0.95)
				t.Logf("seed %d: demand %v (%.2f of one share, %v), received %v, mean request %v", seed, demand, float64(demand)/float64(share), share, r.meanRecv, r.meanRate)
				if r.meanRecv < want {
					t.Errorf("seed %d: received %v, under 0.95 of the demand less the path's loss (%v)", seed, r.meanRecv, want)
				}
			}
		})
	}
}

// TestVirtualTCPDataLimitedFloor: after an interval in which the region
// sent less than half of what the request allowed, the request is at
// least twice what arrived, however many loss events the interval held
// (RFC 7661 §4.4, RFC 5348 §8.2); a saturated interval's window is left
// as its losses made it.
func TestVirtualTCPDataLimitedFloor(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	const rtt = 80 * time.Millisecond
	for _, tc := range []struct {
		name      string
		gap       time.Duration // between 1,000-byte datagrams in the second interval
		wantFloor bool
	}{
		{"data-limited: 20 kB/s under a 100 kB/s request", 50 * time.Millisecond, true},
		{"saturated: 100 kB/s at a 100 kB/s request", 10 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := mustVirtualTCP(t, VirtualTCPConfig{})
			v.OnRTT(rtt, t0)
			at := t0
			// A first interval at 100 kB/s sets the request near it.
			for at.Sub(t0) < 5*time.Second {
				at = at.Add(10 * time.Millisecond)
				v.OnPacket(Packet{At: at, Size: 1000})
			}
			leaveSlowStart(t, v, at)
			v.cwnd = 100_000 * v.rttSec / NominalSegmentSize
			first := v.Rate(at)
			// The second interval: a loss event every 900 ms.
			start, events := at, v.Stats().LossEvents
			for i := 1; at.Sub(start) < 5*time.Second; i++ {
				at = at.Add(tc.gap)
				v.OnPacket(Packet{At: at, Size: 1000})
				if at.Sub(start)%(900*time.Millisecond) < tc.gap {
					for range 2 {
						v.OnPacket(Packet{At: at, Lost: true})
					}
				}
			}
			recv := v.partialRate()
			// As a longer run of loss events leaves it: the smallest window.
			v.cwnd = v.cfg.MinWindow
			before := v.cwnd
			got := v.Rate(at)
			cut := v.Stats().LossEvents - events
			t.Logf("first request %v; %v arrived with %d loss events; window %.1f segments, request %v", first, recv, cut, before, got)
			if cut < 5 {
				t.Fatalf("only %d loss events: the case tests nothing", cut)
			}
			floor := Rate(growthLimit * float64(recv) * 0.999)
			switch {
			case tc.wantFloor && v.equationCap(v.segmentLossEventRate()) < floor:
				t.Fatalf("the cap lies below the floor %v: the case tests the cap", floor)
			case tc.wantFloor && got < floor:
				t.Errorf("request %v after a data-limited interval at %v: want at least %v", got, recv, floor)
			case !tc.wantFloor && v.cwnd != before:
				t.Errorf("a saturated interval moved the window from %.2f to %.2f segments: only a data-limited one may", before, v.cwnd)
			}
		})
	}
}

// TestVirtualTCPRecoveryCarry: the datagrams lost in an event's recovery
// count towards the next event: they hasten it, never make it alone (the
// first loss after the recovery starts it), and a recovery makes at most
// one more event, however much it lost.
func TestVirtualTCPRecoveryCarry(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	const size = 400 // 0.27 of a segment
	for _, tc := range []struct {
		name       string
		inRecovery int    // datagrams lost within the first event's RTT
		after      int    // datagrams lost after it, each 300 ms apart
		wantEvents uint64 // virtual events in all
	}{
		{"no loss in the recovery: a whole segment after it", 0, 4, 2},
		{"no loss in the recovery: less than a segment after it", 0, 3, 1},
		{"two datagrams in the recovery hasten the next event", 2, 2, 2},
		{"a recovery's losses never make an event alone", 12, 0, 1},
		{"a recovery's losses make one more event at most", 12, 3, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := mustVirtualTCP(t, VirtualTCPConfig{})
			v.OnRTT(100*time.Millisecond, t0)
			at := t0
			arrive := func(n int) {
				for range n {
					at = at.Add(4 * time.Millisecond) // 100 kB/s
					v.OnPacket(Packet{At: at, Size: size})
				}
			}
			arrive(500) // 2 s: the mean payload and the rate settle
			// The window ahead of what arrives: every loss counts whole
			// (ownShare), 0.27 of a segment.
			v.cwnd = 2 * float64(v.partialRate()) * v.rttSec / NominalSegmentSize
			lose := func() { v.OnPacket(Packet{At: at, Lost: true}) }
			for range 4 { // the first event: a whole segment lost
				lose()
			}
			if v.events != 1 {
				t.Fatalf("a segment's worth lost made %d events, want 1", v.events)
			}
			for range tc.inRecovery {
				arrive(1)
				lose()
			}
			for range tc.after {
				arrive(75) // 300 ms: past the recovery
				lose()
			}
			if v.events != tc.wantEvents {
				t.Errorf("%d events, want %d (carried %.3f segments)", v.events, tc.wantEvents, v.lostMass)
			}
		})
	}
}

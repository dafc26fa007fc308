package ratecalc

import (
	"math"
	"testing"
	"time"
)

func kbit(r Rate) float64 { return r.BitsPerSecond() / 1000 }

// round1 rounds to 0.1 kbit/s, the precision of congestion.md's tables.
func round1(x float64) float64 { return math.Round(x*10) / 10 }

// TestTFRCReferenceValues: congestion.md §5.1 and §5.3 (s = 1460 B unless
// stated), to the 0.1 kbit/s the tables print.
func TestTFRCReferenceValues(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		s    float64
		rtt  time.Duration
		p    float64
		want float64 // kbit/s
	}{
		{1460, 100 * ms, 0.0001, 14292.2}, {1460, 100 * ms, 0.005, 1935.9}, {1460, 100 * ms, 0.03, 646.4}, {1460, 100 * ms, 0.1, 206.7},
		{1460, 20 * ms, 0.0001, 71460.8}, {1460, 20 * ms, 0.1, 1033.7},
		{1460, 50 * ms, 0.005, 3871.7}, {1460, 200 * ms, 0.03, 323.2}, {1460, 300 * ms, 0.0001, 4764.1},
		{1000, 100 * ms, 0.005, 1325.9}, {576, 100 * ms, 0.1, 81.6},
	} {
		if got := round1(kbit(TFRCRate(tc.s, tc.rtt, tc.p))); got != tc.want {
			t.Errorf("TFRC(s=%v, R=%v, p=%v) = %v kbit/s, want %v", tc.s, tc.rtt, tc.p, got, tc.want)
		}
	}
	// The vectors, in whole kbit/s.
	for p, want := range map[float64]float64{0.0001: 14292, 0.005: 1936, 0.03: 646, 0.1: 207} {
		if got := math.Round(kbit(TFRCRate(1460, 100*ms, p))); got != want {
			t.Errorf("p=%v: %v kbit/s, want %v", p, got, want)
		}
	}
}

// TestPadhyeAndMathis: congestion.md §5.1 (Mathis) and §5.2 (Padhye with a
// 64 KiB window, T0 = 4R).
func TestPadhyeAndMathis(t *testing.T) {
	rtt := 100 * time.Millisecond
	for p, want := range map[float64]float64{0.0001: 14305.0, 0.005: 2023.0, 0.03: 825.9, 0.1: 452.4} {
		if got := round1(kbit(MathisRate(1460, rtt, p))); got != want {
			t.Errorf("Mathis p=%v: %v, want %v", p, got, want)
		}
	}
	for p, want := range map[float64]float64{0.0001: 5139.2, 0.005: 1935.9, 0.03: 646.4, 0.1: 206.7} {
		if got := round1(kbit((PadhyeModel{}).Rate(1460, rtt, p))); got != want {
			t.Errorf("Padhye p=%v: %v, want %v", p, got, want)
		}
	}
	// Above p = 8/27 Padhye's min(1, ·) makes it faster than the RFC form.
	if (PadhyeModel{MaxWindowBytes: 1e9}).Rate(1460, rtt, 0.5) <= TFRCRate(1460, rtt, 0.5) {
		t.Error("Padhye should exceed TFRC above p = 8/27")
	}
}

// TestLossEventRateFor inverts the equation (RFC 5348 §6.3.1).
func TestLossEventRateFor(t *testing.T) {
	rtt := 100 * time.Millisecond
	for _, p := range []float64{1e-6, 0.0001, 0.005, 0.03, 0.1, 0.5} {
		x := TFRCRate(1460, rtt, p)
		if got := LossEventRateFor(1460, rtt, x); math.Abs(got-p) > 1e-6*p {
			t.Errorf("p=%v: inverted %v", p, got)
		}
	}
	// congestion.md §5.7: X_target = s/(2R) gives f(p) = 2, p ≈ 0.2064.
	if got := LossEventRateFor(1460, rtt, Rate(1460/(2*rtt.Seconds()))); math.Abs(got-0.2064) > 1e-4 {
		t.Errorf("first-loss p = %v, want 0.2064", got)
	}
	for _, x := range []Rate{0, -1, Rate(math.NaN()), Rate(math.Inf(1))} {
		if got := LossEventRateFor(1460, rtt, x); !(got >= MinLossEventRate && got <= 1) {
			t.Errorf("LossEventRateFor(%v) = %v", x, got)
		}
	}
}

// TestEquationBadInputs: no input yields NaN, Inf, a negative rate or a panic.
func TestEquationBadInputs(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, s := range []float64{nan, -1, 0, 1460, inf} {
		for _, rtt := range []time.Duration{-time.Second, 0, 1, time.Millisecond, math.MaxInt64} {
			for _, p := range []float64{nan, -1, 0, 1e-12, 0.03, 1, 2, inf, -inf} {
				for name, r := range map[string]Rate{
					"tfrc": TFRCRate(s, rtt, p), "mathis": MathisRate(s, rtt, p), "padhye": PadhyeModel{}.Rate(s, rtt, p),
				} {
					if math.IsNaN(float64(r)) || math.IsInf(float64(r), 0) || r <= 0 {
						if math.IsInf(s, 1) {
							continue // an infinite segment size is the one input that stays infinite
						}
						t.Errorf("%s(s=%v, R=%v, p=%v) = %v", name, s, rtt, p, r)
					}
				}
			}
		}
	}
}

// windowCase is an RTT and a loss event rate, and whether CUBIC's
// average window is the larger there.
type windowCase struct {
	rtt   time.Duration
	p     float64
	cubic bool
}

// windows are the case's RTT in seconds and the two mean windows in
// segments, CUBIC's by RFC 8312 Eq. 7 (its constant rounded to 1.054) and
// Reno's sqrt(3/(2p)); the test stops if the case is not the one named.
func (tc windowCase) windows(t *testing.T) (r, wCubic, wReno float64) {
	t.Helper()
	r = tc.rtt.Seconds()
	wCubic, wReno = 1.054*math.Pow(r/tc.p, 0.75), math.Sqrt(3/(2*tc.p))
	if (wCubic > wReno) != tc.cubic {
		t.Fatalf("R %v, p %v: CUBIC's window %.2f against Reno's %.2f: the case is not the one named", tc.rtt, tc.p, wCubic, wReno)
	}
	return r, wCubic, wReno
}

// TestCUBICRate: RFC 8312 Eq. 7 (1.054·(R/p)^¾ segments per R, the
// constant rounded there); TCPShareRate is the TFRC equation with the
// larger of Reno's and CUBIC's windows between timeouts: CUBIC's on long
// paths at low loss, Reno's (TFRCRate exactly) at heavy loss, where
// CUBIC's response alone, without timeouts, would lie above the equation.
func TestCUBICRate(t *testing.T) {
	for _, tc := range []windowCase{
		{100 * time.Millisecond, 0.0001, true},
		{100 * time.Millisecond, 0.0003, true},
		{100 * time.Millisecond, 0.001, false},
		{100 * time.Millisecond, 0.03, false},
		{200 * time.Millisecond, 0.001, true},
		{20 * time.Millisecond, 0.0001, false},
		{80 * time.Millisecond, 0.3, false},
		{300 * time.Millisecond, 0.5, false},
	} {
		r, wCubic, wReno := tc.windows(t)
		if got, want := CUBICRate(1460, tc.rtt, tc.p), Rate(wCubic*1460/r); math.Abs(float64(got/want)-1) > 1e-3 {
			t.Errorf("CUBICRate(R %v, p %v) = %v, want %v", tc.rtt, tc.p, got, want)
		}
		timeouts := 12 * r * math.Sqrt(3*tc.p/8) * tc.p * (1 + 32*tc.p*tc.p)
		want := Rate(1460 / (r/max(wCubic, wReno) + timeouts))
		got := TCPShareRate(1460, tc.rtt, tc.p)
		if math.Abs(float64(got/want)-1) > 1e-3 {
			t.Errorf("TCPShareRate(R %v, p %v) = %v, want %v", tc.rtt, tc.p, got, want)
		}
		reno := TFRCRate(1460, tc.rtt, tc.p)
		switch {
		case tc.cubic && !(got > reno):
			t.Errorf("R %v, p %v: TCPShareRate %v not above the TFRC equation %v", tc.rtt, tc.p, got, reno)
		case !tc.cubic && math.Abs(float64(got/reno)-1) > 1e-12:
			t.Errorf("R %v, p %v: TCPShareRate %v, want the TFRC equation %v", tc.rtt, tc.p, got, reno)
		}
	}
	// At heavy loss CUBIC's response, which counts no timeouts, lies above
	// the equation: the reason TCPShareRate keeps them.
	if c, r := CUBICRate(1460, 80*time.Millisecond, 0.3), TFRCRate(1460, 80*time.Millisecond, 0.3); !(c > r) {
		t.Errorf("at p 0.3, 80 ms: CUBIC's response %v, the equation %v: want the response above", c, r)
	}
	// The clamps are TFRCRate's: no division by zero, no infinite rate.
	for _, in := range []struct {
		rtt time.Duration
		p   float64
	}{{0, 0.01}, {time.Second, 0}, {time.Second, math.NaN()}, {-time.Second, 2}} {
		for name, f := range map[string]func(float64, time.Duration, float64) Rate{"CUBICRate": CUBICRate, "TCPShareRate": TCPShareRate} {
			if got := f(1460, in.rtt, in.p); !(got > 0) || math.IsInf(float64(got), 0) {
				t.Errorf("%s(%v, %v) = %v, want a finite positive rate", name, in.rtt, in.p, got)
			}
		}
	}
}

package audit

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/circuit"
)

// TestJain: the examples of congestion.md §10.2.
func TestJain(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64 // NaN: no index
	}{
		{[]float64{1936, 1936}, 1},
		{[]float64{1536, 646}, 0.857},
		{[]float64{1536, 207}, 0.632},
		{[]float64{1, 0, 0, 0}, 0.25}, // one of four gets everything: 1/n
		{[]float64{3}, math.NaN()},
		{nil, math.NaN()},
		{[]float64{0, 0}, math.NaN()},
	} {
		got := Jain(tc.xs)
		switch {
		case math.IsNaN(tc.want) && got != nil:
			t.Errorf("Jain(%v) = %v, want none", tc.xs, *got)
		case !math.IsNaN(tc.want) && (got == nil || math.Abs(*got-tc.want) > 5e-4):
			t.Errorf("Jain(%v) = %v, want %.3f", tc.xs, got, tc.want)
		}
	}
}

// TestQuantile: R-7, as DuckDB's quantile_cont and numpy's default.
func TestQuantile(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 10}
	for _, tc := range []struct{ q, want float64 }{{0, 1}, {0.25, 2}, {0.5, 3}, {0.75, 4}, {0.9, 7.6}, {1, 10}} {
		if got := quantile(xs, tc.q); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if got := quantile([]float64{5}, 0.5); got != 5 {
		t.Errorf("quantile of one value = %v", got)
	}
}

func TestVerdict(t *testing.T) {
	for _, tc := range []struct {
		state string
		ratio float64 // NaN: nil
		want  string
	}{
		{FairKnown, 3.14, "3.1× its TCP-fair rate"},
		{FairKnown, 1.09, "within ±10 %"},
		{FairKnown, 0.905, "within ±10 %"},
		{FairKnown, 0.5, "0.5× its TCP-fair rate"},
		{FairKnown, 23.4, "23× its TCP-fair rate"},
		{FairKnown, 0.034, "0.034× its TCP-fair rate"},
		{FairUnbounded, math.NaN(), "no loss: fair rate unbounded"},
		{FairNoRTT, math.NaN(), "unknown: no RTT"},
		{FairNoData, math.NaN(), "unknown: too little traffic"},
	} {
		var r *float64
		if !math.IsNaN(tc.ratio) {
			r = &tc.ratio
		}
		if got := verdict(tc.state, r); got != tc.want {
			t.Errorf("verdict(%q, %v) = %q, want %q", tc.state, tc.ratio, got, tc.want)
		}
	}
}

// TestFair: the states, and the equation's reference values
// (congestion.md §5.1: s = 1460 B, R = 100 ms).
func TestFair(t *testing.T) {
	a, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	rtt := 100 * time.Millisecond
	for _, tc := range []struct {
		name  string
		st    circuit.DirStats
		rtt   *time.Duration
		p     float64
		state string
		kbit  float64
	}{
		{"p=0.005", circuit.DirStats{Packets: 10, LossEvents: 1}, &rtt, 0.005, FairKnown, 1936},
		{"p=0.03", circuit.DirStats{Packets: 10, LossEvents: 1}, &rtt, 0.03, FairKnown, 646},
		{"p=0.1", circuit.DirStats{Packets: 10, LossEvents: 1}, &rtt, 0.1, FairKnown, 207},
		{"no loss", circuit.DirStats{Packets: 10}, &rtt, 0, FairUnbounded, 0},
		{"no loss, no RTT", circuit.DirStats{Packets: 10}, nil, 0, FairUnbounded, 0},
		{"no RTT", circuit.DirStats{Packets: 10, LossEvents: 2}, nil, 0.03, FairNoRTT, 0},
		{"nothing", circuit.DirStats{}, &rtt, 0.03, FairNoData, 0},
	} {
		state, v := a.fair(tc.st, NominalSegmentBytes, tc.rtt, tc.p)
		if state != tc.state || (v == nil) != (tc.kbit == 0) {
			t.Errorf("%s: %q %v, want %q", tc.name, state, v, tc.state)
			continue
		}
		if v != nil && math.Abs(*v/1000-tc.kbit) > 1 {
			t.Errorf("%s: %.1f kbit/s, want %.0f", tc.name, *v/1000, tc.kbit)
		}
	}
}

func TestNewRefuses(t *testing.T) {
	if _, err := New(Config{Segment: "mss"}); err == nil {
		t.Error("segment mss accepted")
	}
}

// TestDist: exact percentiles up to exactLimit values, within 1 % of the
// exact ones beyond, in bounded memory.
func TestDist(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{1, 10, exactLimit, exactLimit + 1, 200_000} {
		var d dist
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = math.Exp(rng.NormFloat64()*2 + 10) // rates over several decades
			if i%50 == 0 {
				xs[i] = 0 // a second with nothing received
			}
			d.add(xs[i])
		}
		slices.Sort(xs)
		tol := 0.0
		if n > exactLimit {
			tol = 0.01
			if len(d.exact) != 0 || len(d.hist) > 3000 {
				t.Errorf("n=%d: %d exact values and %d buckets kept", n, len(d.exact), len(d.hist))
			}
		}
		for _, q := range []float64{0, 0.25, 0.5, 0.75, 1} {
			want := quantile(xs, q)
			if n > exactLimit {
				// The histogram answers with a value of the rank's
				// neighbourhood: compare with the nearest rank.
				want = xs[int(math.Round(q*float64(n-1)))]
			}
			if got := d.quantile(q); math.Abs(got-want) > tol*want {
				t.Errorf("n=%d q=%v: %v, want %v", n, q, got, want)
			}
		}
	}
}

// TestReplayDefaultFirst: the replay's first controller, whose Rate and
// Stats the tracker sees, is the live loop's default, so that the audit
// replays what `fairgrid run` would have done; every controller name is
// replayed once.
func TestReplayDefaultFirst(t *testing.T) {
	if replayed[0] != throttle.DefaultController {
		t.Errorf("first replayed controller %q, want the default %q", replayed[0], throttle.DefaultController)
	}
	seen := map[throttle.ControllerName]bool{}
	for i, name := range replayed {
		if seen[name] || replaySources[i] == "" {
			t.Errorf("replayed[%d] = %q: repeated or without a source", i, name)
		}
		seen[name] = true
	}
	for _, name := range []throttle.ControllerName{throttle.VirtualTCP, throttle.Window, throttle.TFRC, throttle.ViewerRule} {
		if !seen[name] {
			t.Errorf("%q is not replayed", name)
		}
	}
}

// TestTCPEstimate: the verdict's estimate is the TFRC equation at the
// loss event rate per segment with the larger of Reno's and CUBIC's
// windows between timeouts, so on a long path at low loss it is CUBIC's
// (a viewer beside a CUBIC download there had been judged against half
// the download's rate), and Reno's equation at heavy loss; nothing
// without loss.
func TestTCPEstimate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		st    circuit.DirStats
		rtt   time.Duration
		cubic bool
	}{
		// 10,000 datagrams of 1,000 B, 20 lost in 4 events: p per
		// segment 4 ÷ 6,849 segments, about 0.0006; 200 ms.
		{"long path, low loss", circuit.DirStats{Packets: 10000, Bytes: 10_000_000, Lost: 20, LossEvents: 4}, 200 * time.Millisecond, true},
		// 300 of 10,000 lost in 200 events: p about 0.03.
		{"heavy loss", circuit.DirStats{Packets: 10000, Bytes: 10_000_000, Lost: 300, LossEvents: 200}, 80 * time.Millisecond, false},
	} {
		p, got := tcpEstimate(tc.st, tc.rtt)
		if got == nil || !(p > 0) {
			t.Fatalf("%s: estimate %v at p %v", tc.name, got, p)
		}
		reno := ratecalc.TFRCRate(NominalSegmentBytes, tc.rtt, p).BitsPerSecond()
		cubic := ratecalc.CUBICRate(NominalSegmentBytes, tc.rtt, p).BitsPerSecond()
		if want := ratecalc.TCPShareRate(NominalSegmentBytes, tc.rtt, p).BitsPerSecond(); *got != want {
			t.Errorf("%s: estimate %.0f bit/s, want TCPShareRate's %.0f", tc.name, *got, want)
		}
		// CUBIC's window: above Reno's equation, near CUBIC's response
		// (its timeouts are a few per cent at this p); Reno's: the equation.
		if tc.cubic && !(*got > reno*1.2 && *got > cubic*0.95) || !tc.cubic && math.Abs(*got/reno-1) > 1e-12 {
			t.Errorf("%s: estimate %.0f bit/s, Reno's %.0f, CUBIC's response %.0f", tc.name, *got, reno, cubic)
		}
	}
	if p, got := tcpEstimate(circuit.DirStats{Packets: 100, Bytes: 100_000}, time.Second); got != nil || p != 0 {
		t.Errorf("no loss: estimate %v at p %v, want none", got, p)
	}
}

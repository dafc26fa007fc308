package throttle

import (
	"errors"
	"math"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/ratecalc"
)

// TestSegmentText: both names parse back to themselves, anything else is
// refused with the names listed, and New applies the same check.
func TestSegmentText(t *testing.T) {
	for _, s := range []Segment{SegmentMean, SegmentNominal} {
		b, err := s.MarshalText()
		var back Segment
		if err != nil || back.UnmarshalText(b) != nil || back != s || string(b) != s.String() {
			t.Errorf("%v: marshalled %q (%v), back %v", s, b, err, back)
		}
	}
	if c, err := (Config{}).withDefaults(); err != nil || c.Segment != defaultSegment {
		t.Errorf("the zero Segment became %q (%v), want the default %q", c.Segment, err, defaultSegment)
	}
	for _, bad := range []string{"", "Mean", "1460", "nominal ", "tcp"} {
		var s Segment
		if err := s.UnmarshalText([]byte(bad)); err == nil || !strings.Contains(err.Error(), "want mean or nominal") {
			t.Errorf("%q: %v", bad, err)
		}
		if bad == "" {
			continue // the zero value is the default
		}
		if _, err := New(Config{Segment: Segment(bad)}, nil); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "segment") {
			t.Errorf("New with segment %q: %v", bad, err)
		}
	}
}

// TestNewController: each name gives its controller, built with the
// configuration's segment size and clamps; an unknown name or a bad
// configuration is an error.
func TestNewController(t *testing.T) {
	for _, tc := range []struct {
		name    ControllerName
		segment Segment
		// wantS is the s the new controller's rate stands on: the
		// initial mean (ratecalc's default 1200 B) or 1460.
		wantS float64
	}{
		{Window, SegmentMean, 1200},
		{Window, SegmentNominal, ratecalc.NominalSegmentSize},
		{TFRC, SegmentMean, 1200},
		{TFRC, SegmentNominal, ratecalc.NominalSegmentSize},
		{ViewerRule, SegmentNominal, ratecalc.NominalSegmentSize},
	} {
		t.Run(string(tc.name)+"/"+string(tc.segment), func(t *testing.T) {
			// The configuration's own Controller is not the one built.
			c, err := Config{Controller: ViewerRule, Segment: tc.segment}.NewController(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			var ok bool
			switch tc.name {
			case Window:
				_, ok = c.(*ratecalc.Window)
			case TFRC:
				_, ok = c.(*ratecalc.TFRC)
			case ViewerRule:
				_, ok = c.(*ratecalc.Viewer)
			}
			if !ok {
				t.Errorf("controller %T", c)
			}
			if got := c.Stats().FairSegmentSize; got != tc.wantS {
				t.Errorf("s %v, want %v", got, tc.wantS)
			}
			// The clamps are the controller's own: a window that would ask
			// for more asks for Max.
			if r := c.Rate(t0); r < defaultMin || r > defaultMax {
				t.Errorf("first decision %v outside the default clamps", r)
			}
		})
	}
	for _, bad := range []struct {
		name ControllerName
		cfg  Config
	}{
		{"cubic", Config{}},
		{"", Config{}},
		{Window, Config{Segment: "1460"}},
		{TFRC, Config{Min: 10, Max: 5}},
	} {
		if c, err := bad.cfg.NewController(bad.name); !errors.Is(err, ErrConfig) || c != nil {
			t.Errorf("%q with %+v: %v, %v", bad.name, bad.cfg, c, err)
		}
	}
}

// TestClamp: min(max(r, Min, Floor), Max), with the defaults for zero Min
// and Max, and NaN at the lower bound.
func TestClamp(t *testing.T) {
	cfg := Config{Min: 10_000, Max: 100_000}
	floored := Config{Min: 10_000, Max: 100_000, Floor: 40_000}
	for _, tc := range []struct {
		name string
		cfg  Config
		in   ratecalc.Rate
		want ratecalc.Rate
	}{
		{"inside", cfg, 50_000, 50_000},
		{"below min", cfg, 5_000, 10_000},
		{"above max", cfg, 1e9, 100_000},
		{"below the floor", floored, 20_000, 40_000},
		{"above the floor", floored, 60_000, 60_000},
		{"above max with a floor", floored, 2e5, 100_000},
		{"NaN", floored, ratecalc.Rate(math.NaN()), 40_000},
		{"zero config, low", Config{}, 1, defaultMin},
		{"zero config, high", Config{}, 1e12, defaultMax},
		{"zero config, inside", Config{}, 200_000, 200_000},
	} {
		if got := tc.cfg.Clamp(tc.in); got != tc.want {
			t.Errorf("%s: Clamp(%v) = %v, want %v", tc.name, tc.in, got, tc.want)
		}
	}
}

// TestLoopSegment: the same circuit through two loops, one with s = the
// mean payload and one with the nominal 1460 B: window tracking's request
// is 1460/mean times as large, and a reload switches a running loop at
// once.
func TestLoopSegment(t *testing.T) {
	requests := func(segment Segment) (*Loop, *feed, Request, ratecalc.Stats) {
		// A high Max so that no request is clamped.
		l, err := New(Config{Controller: Window, Sims: []netip.AddrPort{simEP}, Segment: segment, Max: ratecalc.RateFromBits(1e9)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		f := &feed{t: t, l: l}
		f.agentUpdates(0, IdentityDatagrams)
		f.stream(0, 300)
		rs := l.Tick(t0.Add(5 * time.Second))
		if len(rs) != 1 {
			t.Fatalf("%s: %d requests", segment, len(rs))
		}
		_, st, _ := l.Circuit(rs[0].Circuit)
		return l, f, rs[0], st
	}
	_, _, mean, meanStats := requests(SegmentMean)
	l, f, nominal, nominalStats := requests(SegmentNominal)
	want := ratecalc.NominalSegmentSize / meanStats.SegmentSize
	if got := float64(nominal.Total / mean.Total); math.Abs(got/want-1) > 1e-9 {
		t.Errorf("nominal request %v, mean %v: ratio %.4f, want 1460/%.1f = %.4f", nominal.Total, mean.Total, got, meanStats.SegmentSize, want)
	}
	if nominalStats.SegmentSize != meanStats.SegmentSize || nominalStats.Window != meanStats.Window {
		t.Errorf("the measurements differ: mean %+v, nominal %+v", meanStats, nominalStats)
	}

	// Back to the mean by a reload: applied at once, no restart.
	cfg := l.Config()
	cfg.Segment = SegmentMean
	restart, err := l.Reconfigure(cfg)
	if err != nil || len(restart) != 0 {
		t.Fatalf("reconfigure: restart %v, %v", restart, err)
	}
	f.stream(5*time.Second, 10)
	if _, st, _ := l.Circuit(nominal.Circuit); st.FairSegmentSize != st.SegmentSize {
		t.Errorf("after the reload the controller's s is %v, its mean payload %v", st.FairSegmentSize, st.SegmentSize)
	}
	if l.Config().Segment != SegmentMean {
		t.Errorf("segment in force %q", l.Config().Segment)
	}
}

package ratecalc

import (
	"errors"
	"math"
	"testing"
	"time"
)

func allControllers(t testing.TB) map[string]Controller {
	v, err := NewViewer(ViewerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]Controller{
		"tfrc":   mustTFRC(t, TFRCConfig{}),
		"window": mustWindow(t, WindowConfig{}),
		"viewer": v,
		"qos":    &QoS{Controller: mustTFRC(t, TFRCConfig{}), Floor: 1000},
	}
}

func finiteRate(r Rate) bool { return !math.IsNaN(float64(r)) && !math.IsInf(float64(r), 0) && r >= 0 }

// TestBadInputs: time going backwards, huge gaps, zero and negative RTTs,
// negative sizes and a decision before any input never give a panic, NaN,
// an infinite or a negative rate; clamped inputs are counted.
func TestBadInputs(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	for name, c := range allControllers(t) {
		t.Run(name, func(t *testing.T) {
			if r := c.Rate(t0); !finiteRate(r) {
				t.Fatalf("rate before any input: %v", r)
			}
			c.OnRTT(0, t0)
			c.OnRTT(-time.Second, t0)
			c.OnRTT(time.Duration(math.MaxInt64), t0)
			c.OnPacket(Packet{At: t0.Add(time.Second), Size: 1000})
			c.OnPacket(Packet{At: t0, Size: 1000})                // backwards
			c.OnPacket(Packet{At: t0.Add(time.Second), Size: -5}) // negative size
			c.OnPacket(Packet{At: t0.Add(-time.Hour), Lost: true})
			c.OnPacket(Packet{At: t0.Add(1000 * time.Hour), Size: 1}) // a huge gap
			for i := range 100 {
				c.OnPacket(Packet{At: t0.Add(1000*time.Hour + time.Duration(i)*time.Millisecond), Lost: i%2 == 0, Size: 1200})
			}
			for _, at := range []time.Time{t0, t0.Add(1000 * time.Hour), t0.Add(2000 * time.Hour), {}} {
				if r := c.Rate(at); !finiteRate(r) {
					t.Errorf("rate at %v: %v", at, r)
				}
			}
			st := c.Stats()
			if st.BadInputs < 3 {
				t.Errorf("bad inputs counted %d, want at least 3 (two RTT samples, one step back)", st.BadInputs)
			}
			if !finiteRate(st.Rate) || !finiteRate(st.EquationRate) || math.IsNaN(st.LossEventRate) || st.LossEventRate > 1 {
				t.Errorf("stats: %+v", st)
			}
		})
	}
}

func TestConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"negative RTT", func() error { _, err := NewTFRC(TFRCConfig{Config: Config{InitialRTT: -1}}); return err }()},
		{"NaN min", func() error { _, err := NewTFRC(TFRCConfig{Config: Config{Min: Rate(math.NaN())}}); return err }()},
		{"max below min", func() error { _, err := NewWindow(WindowConfig{Config: Config{Min: 10, Max: 5}}); return err }()},
		{"segment size", func() error { _, err := NewWindow(WindowConfig{Config: Config{SegmentSize: 1e6}}); return err }()},
		{"nominal segment negative", func() error {
			_, err := NewTFRC(TFRCConfig{Config: Config{NominalSegment: -1460}})
			return err
		}()},
		{"nominal segment too large", func() error {
			_, err := NewWindow(WindowConfig{Config: Config{NominalSegment: 1e6}})
			return err
		}()},
		{"nominal segment NaN", func() error {
			_, err := NewWindow(WindowConfig{Config: Config{NominalSegment: math.NaN()}})
			return err
		}()},
		{"min window", func() error { _, err := NewWindow(WindowConfig{MinWindow: 0.5}); return err }()},
		{"initial below min", func() error { _, err := NewWindow(WindowConfig{InitialWindow: 2, MinWindow: 3}); return err }()},
		{"viewer setting", func() error { _, err := NewViewer(ViewerConfig{Setting: -1}); return err }()},
	} {
		if !errors.Is(tc.err, ErrConfig) {
			t.Errorf("%s: got %v, want ErrConfig", tc.name, tc.err)
		}
	}
}

// TestClamps: every decision lies in [Min, Max].
func TestClamps(t *testing.T) {
	t0 := time.Unix(0, 0)
	w := mustWindow(t, WindowConfig{Config: Config{Min: 50_000, Max: 60_000}})
	if r := w.Rate(t0); r != 50_000 {
		t.Errorf("floor: %v", float64(r))
	}
	for i := range 100000 {
		w.OnPacket(Packet{At: t0.Add(time.Duration(i) * time.Millisecond), Size: 1200})
	}
	if r := w.Rate(t0.Add(100 * time.Second)); r != 60_000 {
		t.Errorf("ceiling: %v", float64(r))
	}
	if st := w.Stats(); st.Window > 60_000*0.1/1200+1 {
		t.Errorf("window %v grew past what Max allows", st.Window)
	}
}

// TestQoS: the floor holds under heavy loss; the target holds while loss
// events stay under the limit and yields to the controller above it.
func TestQoS(t *testing.T) {
	t0 := time.Unix(0, 0)
	q := &QoS{Controller: mustTFRC(t, TFRCConfig{}), Floor: 40_000, Target: 100_000, MaxLossEventRate: 0.01}
	if r := q.Rate(t0); r != 100_000 {
		t.Errorf("no loss: %v, want the target", float64(r))
	}
	for i := range 2000 {
		q.OnPacket(Packet{At: t0.Add(time.Duration(i) * 10 * time.Millisecond), Size: 1200, Lost: i%5 == 0})
	}
	if r := q.Rate(t0.Add(20 * time.Second)); r != 40_000 {
		t.Errorf("20 %% loss: %v, want the floor (TFRC asks for %v)", float64(r), q.Controller.Stats().Rate)
	}
	if st := q.Stats(); st.Rate != 40_000 || st.LossEventRate < 0.01 {
		t.Errorf("stats %+v", st)
	}
}

func TestTFRCSlowStart(t *testing.T) {
	t0 := time.Unix(0, 0)
	c := mustTFRC(t, TFRCConfig{Config: Config{SegmentSize: 1460}})
	c.OnRTT(100*time.Millisecond, t0)
	// RFC 5348 §4.2: W_init = min(4s, max(2s, 4380)) = 4380 B for s = 1460,
	// so 350.4 kbit/s at R = 100 ms (congestion.md §5.7).
	if r := c.Rate(t0); math.Abs(kbit(r)-350.4) > 1e-9 {
		t.Errorf("initial rate %v, want 350.4 kbit/s", r)
	}
	// Receiving at the allowed rate, it doubles per interval, never past
	// twice what arrives.
	prev := c.Stats().Rate
	for k := 1; k <= 4; k++ {
		for i := range 100 {
			c.OnPacket(Packet{At: t0.Add(time.Duration(k-1)*5*time.Second + time.Duration(i)*50*time.Millisecond), Size: int(float64(prev) * 0.05)})
		}
		r := c.Rate(t0.Add(time.Duration(k) * 5 * time.Second))
		if math.Abs(float64(r/prev)-2) > 0.01 {
			t.Errorf("interval %d: %v after %v, want double", k, r, prev)
		}
		prev = r
	}
}

// TestSince: since is Sub for any two times less than a Duration apart,
// wherever they lie, Unix nanoseconds that overflow int64 included (the
// zero Time, year 3000), and it ignores monotonic readings as a replay
// has none.
func TestSince(t *testing.T) {
	zero := time.Time{}
	unix := time.Unix(1_700_000_000, 123)
	far := time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		t, u time.Time
	}{
		{"a capture's datagrams", unix.Add(1500 * time.Microsecond), unix},
		{"backwards", unix, unix.Add(time.Second)},
		{"the same instant", unix, unix},
		{"from the zero Time", zero.Add(90 * time.Minute), zero},
		{"year 3000", far.Add(time.Nanosecond), far},
		{"a century", unix.AddDate(100, 0, 0), unix},
	} {
		if got, want := since(tc.t, tc.u), tc.t.Sub(tc.u); got != want {
			t.Errorf("%s: since %v, Sub %v", tc.name, got, want)
		}
	}
	// A time from the monotonic clock: its wall reading, as a replay's.
	now := time.Now()
	later := now.Add(time.Millisecond)
	if got, want := since(later, now), later.Round(0).Sub(now.Round(0)); got != want {
		t.Errorf("monotonic readings: since %v, wall %v", got, want)
	}
}

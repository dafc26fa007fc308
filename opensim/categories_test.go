package opensim

import (
	"math"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
)

// TestChannelBucketsRates: under ChannelBuckets a client's busy categories
// get their own rates and no more, whatever the others leave idle, and
// with every category busy the rates are OpenSim's arithmetic, as in the
// default mode (openSimRates, compat_test.go). Avatar and Task share the
// Task category's bucket.
func TestChannelBucketsRates(t *testing.T) {
	req := viewerSplit(1500)
	req[lludp.Resend] = 0
	os := openSimRates(req, 640000)
	inf := math.Inf(1)
	for _, tc := range []struct {
		name   string
		demand [NumChannels]float64
		want   [NumChannels]float64 // B/s; 0: nothing sent
	}{
		{"every category busy", [NumChannels]float64{inf, inf, inf, inf, inf},
			[NumChannels]float64{os[lludp.Task] * 0.8, os[lludp.Task] * 0.2, os[lludp.Texture], os[lludp.Land] + os[lludp.Wind] + os[lludp.Cloud], os[lludp.Asset]}},
		{"only Texture busy", [NumChannels]float64{Texture: inf},
			[NumChannels]float64{Texture: os[lludp.Texture]}},
		{"only Layer busy", [NumChannels]float64{Layer: inf},
			[NumChannels]float64{Layer: os[lludp.Land] + os[lludp.Wind] + os[lludp.Cloud]}},
		{"only Avatar busy takes the whole Task bucket", [NumChannels]float64{Avatar: inf},
			[NumChannels]float64{Avatar: os[lludp.Task]}},
		{"Texture idle", [NumChannels]float64{inf, inf, 0, inf, inf},
			[NumChannels]float64{os[lludp.Task] * 0.8, os[lludp.Task] * 0.2, 0, os[lludp.Land] + os[lludp.Wind] + os[lludp.Cloud], os[lludp.Asset]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New[int](Config{ChannelBuckets: true})
			if err != nil {
				t.Fatal(err)
			}
			ids, specs := setup(t, s, [][lludp.NumCategories]float32{req}, func(int) [NumChannels]float64 { return tc.demand })
			got := simulate(t, s, ids, specs, 500, 20*time.Second, 2*time.Second)[0]
			t.Logf("got %s", fmtRates(got))
			for ch := range NumChannels {
				if tc.want[ch] == 0 {
					if got[ch] != 0 {
						t.Errorf("%v: %.0f B/s, want none", Channel(ch), got[ch])
					}
					continue
				}
				if e := got[ch]/tc.want[ch] - 1; math.Abs(e) > 0.02 {
					t.Errorf("%v: %.0f B/s, OpenSim %.0f (%+.1f%%)", Channel(ch), got[ch], tc.want[ch], 100*e)
				}
			}
		})
	}
}

// TestChannelBucketsLends is the same Texture-idle client in both modes:
// the default lends Texture's share to the busy channels, ChannelBuckets
// loses it, so the mode is what decides.
func TestChannelBucketsLends(t *testing.T) {
	req := viewerSplit(1500)
	req[lludp.Resend] = 0
	total := func(cfg Config) float64 {
		s, err := New[int](cfg)
		if err != nil {
			t.Fatal(err)
		}
		inf := math.Inf(1)
		ids, specs := setup(t, s, [][lludp.NumCategories]float32{req}, func(int) [NumChannels]float64 {
			return [NumChannels]float64{inf, inf, 0, inf, inf}
		})
		var sum float64
		for _, r := range simulate(t, s, ids, specs, 500, 10*time.Second, time.Second)[0] {
			sum += r
		}
		return sum
	}
	lending, opensim := total(Config{}), total(Config{ChannelBuckets: true})
	if lending < 1.3*opensim {
		t.Errorf("with Texture idle: %.0f B/s lending, %.0f B/s with ChannelBuckets; want the first well above", lending, opensim)
	}
}

// TestChannelBucketsBurst: a category bucket is rate × BurstTime deep, at
// most OpenSim's MAXBURST of 7,500 bytes, at least MinBurst.
func TestChannelBucketsBurst(t *testing.T) {
	for _, tc := range []struct {
		name      string
		burstTime time.Duration
		minBurst  int64
		rate      int64
		want      int64
	}{
		{"10 ms of 200 kB/s", 10 * time.Millisecond, 1, 200_000, 2000},
		{"MAXBURST", time.Second, 1, 100_000, 7500},
		{"MAXBURST at the largest rate and burst time", 10 * time.Second, 1, 1 << 33, 7500},
		{"MinBurst", 10 * time.Millisecond, 1500, 10_000, 1500},
		{"MinBurst above MAXBURST", time.Second, 9000, 100_000, 9000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New[int](Config{ChannelBuckets: true, BurstTime: tc.burstTime, MinBurst: tc.minBurst})
			if err != nil {
				t.Fatal(err)
			}
			if got := s.channelBurstFor(tc.rate); got != tc.want {
				t.Errorf("depth at %d B/s = %d bytes, want %d", tc.rate, got, tc.want)
			}
		})
	}
}

// TestChannelBucketsOtherCategorySendsAtOnce: 5 ms after a 3,000-byte
// Texture packet left the Texture bucket 1,500 bytes in debt (150 ms to
// repay at 10,000 B/s), the client's own bucket (at 440,000 B/s) has
// repaid its debt. The default mode
// sends the next Texture packet then; ChannelBuckets holds it back, yet
// sends a Layer packet the moment it is queued, since Layer's bucket is
// full.
func TestChannelBucketsOtherCategorySendsAtOnce(t *testing.T) {
	for _, channelBuckets := range []bool{false, true} {
		s, err := New[int](Config{ChannelBuckets: channelBuckets})
		if err != nil {
			t.Fatal(err)
		}
		c := s.AddClient(epoch)
		if _, err := s.SetThrottleValues(c, [lludp.NumCategories]float32{0, 8 * 10_000, 0, 0, 8 * 20_000, 8 * 10_000, 8 * 400_000}, epoch); err != nil {
			t.Fatal(err)
		}
		for p := range 2 {
			if err := s.Enqueue(c, Texture, 3000, p, false, epoch); err != nil {
				t.Fatal(err)
			}
		}
		if it, _, ok := s.Next(epoch); !ok || it.Packet != 0 {
			t.Fatalf("first Texture packet: %+v, %v", it, ok)
		}
		now := epoch.Add(5 * time.Millisecond)
		it, wait, ok := s.Next(now)
		if !channelBuckets {
			if !ok || it.Packet != 1 {
				t.Errorf("lending: the second Texture packet did not leave after 5 ms (wait %v)", wait)
			}
			continue
		}
		if ok || wait < 140*time.Millisecond {
			t.Fatalf("ChannelBuckets: the second Texture packet left (%v) or wait %v: Texture's bucket should need 145 ms more", ok, wait)
		}
		if err := s.Enqueue(c, Layer, 200, 7, false, now); err != nil {
			t.Fatal(err)
		}
		if it, wait, ok := s.Next(now); !ok || it.Packet != 7 || it.Channel != Layer {
			t.Fatalf("ChannelBuckets: the Layer packet did not leave at once: %+v, %v, wait %v", it, ok, wait)
		}
	}
}

package opensim

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
)

var epoch = time.Unix(1_700_000_000, 0)

// flow feeds one channel of one client: backlogged (rate Inf: at least
// four packets always queued) or at a steady offered rate.
type flow struct {
	client int
	ch     Channel
	rate   float64
	next   time.Duration
	queued int
}

// simulate runs the scheduler on virtual time, serving every packet it
// allows as soon as it allows it, and returns each client's channel
// throughputs in bytes/s after warmup.
func simulate(t testing.TB, s *Scheduler[int], ids []ClientID, specs []spec, size int, duration, warmup time.Duration) [][NumChannels]float64 {
	t.Helper()
	index := map[ClientID]int{}
	var flows []*flow
	byKey := map[[2]int]*flow{}
	for i, id := range ids {
		index[id] = i
		for ch := range NumChannels {
			if d := specs[i].demand[ch]; d > 0 {
				f := &flow{client: i, ch: Channel(ch), rate: d}
				flows = append(flows, f)
				byKey[[2]int{i, ch}] = f
			}
		}
	}
	enqueue := func(f *flow, now time.Duration) {
		if err := s.Enqueue(ids[f.client], f.ch, size, 0, false, epoch.Add(now)); err != nil {
			t.Fatalf("enqueue: %v", err)
		}
		f.queued++
	}
	for _, f := range flows {
		if math.IsInf(f.rate, 1) {
			for f.queued < 4 {
				enqueue(f, 0)
			}
		}
	}
	sent := make([][NumChannels]float64, len(ids))
	var now time.Duration
	for now < duration {
		nextArrival := duration
		for _, f := range flows {
			if math.IsInf(f.rate, 1) {
				continue
			}
			for f.next <= now {
				enqueue(f, now)
				f.next += time.Duration(float64(size) / f.rate * float64(time.Second))
			}
			nextArrival = min(nextArrival, f.next)
		}
		it, wait, ok := s.Next(epoch.Add(now))
		if ok {
			i := index[it.Client]
			if now >= warmup {
				sent[i][it.Channel] += float64(it.Size)
			}
			f := byKey[[2]int{i, int(it.Channel)}]
			f.queued--
			if math.IsInf(f.rate, 1) {
				enqueue(f, now)
			}
			continue
		}
		step := nextArrival - now
		if wait >= 0 && wait < step {
			step = wait
		}
		now += max(step, 1)
	}
	secs := (duration - warmup).Seconds()
	for i := range sent {
		for ch := range sent[i] {
			sent[i][ch] /= secs
		}
	}
	return sent
}

// setup adds clients with the given AgentThrottle categories (bits/s)
// and returns their IDs and specs (rates read back after clamping).
func setup(t testing.TB, s *Scheduler[int], throttles [][lludp.NumCategories]float32, demand func(i int) [NumChannels]float64) ([]ClientID, []spec) {
	t.Helper()
	var ids []ClientID
	var specs []spec
	for i, th := range throttles {
		id := s.AddClient(epoch)
		if _, err := s.SetThrottleValues(id, th, epoch); err != nil {
			t.Fatal(err)
		}
		rates, _, _ := s.Rates(id)
		var sp spec
		for ch := range NumChannels {
			sp.rates[ch] = float64(rates[ch])
		}
		sp.demand = demand(i)
		ids, specs = append(ids, id), append(specs, sp)
	}
	return ids, specs
}

// viewerSplit is the viewer's split of a total in kbit/s (1024 bit/s units)
// above 1000: 1000 + steps of 500 (protocol.md §7.2).
func viewerSplit(kbps float64) [lludp.NumCategories]float32 {
	base := [lludp.NumCategories]float64{100, 100, 20, 20, 310, 310, 140}
	step := [lludp.NumCategories]float64{50, 30, 6, 6, 174, 174, 60}
	var out [lludp.NumCategories]float32
	for i := range out {
		out[i] = float32((base[i] + step[i]*(kbps-1000)/500) * 1024)
	}
	return out
}

func backlogged(int) [NumChannels]float64 {
	inf := math.Inf(1)
	return [NumChannels]float64{inf, inf, inf, inf, inf}
}

func checkShares(t *testing.T, got, want [][NumChannels]float64, tolerance float64) {
	t.Helper()
	for i := range want {
		var g, w float64
		for ch := range NumChannels {
			g += got[i][ch]
			w += want[i][ch]
			if want[i][ch] == 0 {
				if got[i][ch] > 0 {
					t.Errorf("client %d %v: %.0f B/s, want none", i, Channel(ch), got[i][ch])
				}
				continue
			}
			if e := got[i][ch]/want[i][ch] - 1; math.Abs(e) > tolerance {
				t.Errorf("client %d %v: %.0f B/s, oracle %.0f (%+.1f%%)", i, Channel(ch), got[i][ch], want[i][ch], 100*e)
			}
		}
		if e := g/w - 1; math.Abs(e) > tolerance {
			t.Errorf("client %d: %.0f B/s, oracle %.0f (%+.1f%%)", i, g, w, 100*e)
		}
	}
}

// TestScenarios runs clients with different throttles and loads and
// checks every client's and channel's share within 2 % of the oracle.
func TestScenarios(t *testing.T) {
	inf := math.Inf(1)
	for _, tc := range []struct {
		name      string
		cfg       Config
		throttles [][lludp.NumCategories]float32
		demand    func(i int) [NumChannels]float64
		unfair    bool // strict Avatar priority: shares must differ from plain proportional ones
	}{
		{
			name:      "one client, all channels backlogged",
			throttles: [][lludp.NumCategories]float32{viewerSplit(1500)},
			demand:    backlogged,
		},
		{
			name:      "an idle channel's share goes to the busy ones",
			throttles: [][lludp.NumCategories]float32{viewerSplit(1500)},
			demand:    func(int) [NumChannels]float64 { return [NumChannels]float64{inf, inf, 0, inf, inf} },
		},
		{
			name:      "a light channel keeps what it uses",
			throttles: [][lludp.NumCategories]float32{viewerSplit(1500)},
			demand:    func(int) [NumChannels]float64 { return [NumChannels]float64{inf, 5000, inf, 2000, inf} },
		},
		{
			name:      "strict avatar priority is unfair by design",
			cfg:       Config{AvatarPriority: true},
			throttles: [][lludp.NumCategories]float32{viewerSplit(1500)},
			demand:    backlogged,
			unfair:    true,
		},
		{
			name: "the scene cap is shared in proportion to rates",
			cfg:  Config{SceneMax: 600_000},
			throttles: func() (out [][lludp.NumCategories]float32) {
				for i := range 12 {
					out = append(out, viewerSplit(float64(1000+500*(i%5))))
				}
				return out
			}(),
			demand: backlogged,
		},
		{
			name: "light clients keep their load, heavy ones share the rest",
			cfg:  Config{SceneMax: 500_000},
			throttles: func() (out [][lludp.NumCategories]float32) {
				for i := range 10 {
					out = append(out, viewerSplit(float64(1500+1000*(i%3))))
				}
				return out
			}(),
			demand: func(i int) [NumChannels]float64 {
				if i%4 == 0 {
					return [NumChannels]float64{4000, 6000, 0, 2000, 0} // intermittent, light
				}
				return backlogged(i)
			},
		},
		{
			// Enough clients that the calendar spreads them over many
			// slots, with rates a factor of five apart.
			name: "a hundred clients share the scene cap in proportion to rates",
			cfg:  Config{SceneMax: 10_000_000},
			throttles: func() (out [][lludp.NumCategories]float32) {
				for i := range 100 {
					out = append(out, viewerSplit(float64(1000+40*i)))
				}
				return out
			}(),
			demand: backlogged,
		},
		{
			name:      "under the scene cap every client gets its own rate",
			cfg:       Config{SceneMax: 6_250_000},
			throttles: [][lludp.NumCategories]float32{viewerSplit(1000), viewerSplit(2000), viewerSplit(4000)},
			demand:    backlogged,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New[int](tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			ids, specs := setup(t, s, tc.throttles, tc.demand)
			got := simulate(t, s, ids, specs, 500, 40*time.Second, 5*time.Second)
			want := oracle(float64(s.Config().SceneMax), specs, s.Config().AvatarPriority)
			checkShares(t, got, want, 0.02)
			if tc.unfair {
				plain := oracle(float64(s.Config().SceneMax), specs, false)
				if got[0][Avatar] < 1.1*plain[0][Avatar] {
					t.Errorf("with priority Avatar gets %.0f B/s, its proportional share is %.0f: priority should show", got[0][Avatar], plain[0][Avatar])
				}
			}
			if testing.Verbose() {
				for i := range min(len(got), 3) {
					t.Logf("client %d: got %s, oracle %s", i, fmtRates(got[i]), fmtRates(want[i]))
				}
			}
		})
	}
}

func fmtRates(r [NumChannels]float64) string {
	s := ""
	for ch, v := range r {
		s += fmt.Sprintf(" %v=%.0f", Channel(ch), v)
	}
	return s
}

package viewer

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// StressResult summarises a stress run: the delay from each movement to
// its echo, over every viewer.
type StressResult struct {
	Viewers  int           `json:"viewers"`
	LoggedIn int           `json:"logged_in"`
	Echoes   int           `json:"echoes"`
	Moves    uint64        `json:"moves"`
	Mean     time.Duration `json:"-"`
	P99      time.Duration `json:"-"`
	MeanMs   float64       `json:"mean_ms"`
	P99Ms    float64       `json:"p99_ms"`
}

// stressWarmup is left out of the delays: logging thousands of viewers in
// at once is a storm of its own, not the steady state being measured.
const stressWarmup = 3 * time.Second

// Stress runs n viewers in stress mode against a region in stress mode for
// d, with circuit codes from firstCode on, and gathers the echo delays of
// the movements made after the first 3 s.
func Stress(ctx context.Context, sim netip.AddrPort, n int, d time.Duration, firstCode uint32) (StressResult, error) {
	vs := make([]*Viewer, n)
	for i := range vs {
		v, err := New(Config{Sim: sim, CircuitCode: firstCode + uint32(i), Stress: true}, nil)
		if err != nil {
			for _, o := range vs[:i] {
				o.conn.Close()
			}
			return StressResult{}, err
		}
		vs[i] = v
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	warm := time.Now().Add(stressWarmup)
	for _, v := range vs {
		v.stressFrom = warm
	}
	var wg sync.WaitGroup
	for _, v := range vs {
		wg.Add(1)
		go func() { defer wg.Done(); v.Run(ctx) }()
	}
	wg.Wait()
	res := StressResult{Viewers: n}
	var all []time.Duration
	for _, v := range vs {
		v.mu.Lock()
		if v.loggedIn {
			res.LoggedIn++
		}
		res.Moves += uint64(v.moves)
		all = append(all, v.echoes...)
		v.mu.Unlock()
	}
	res.Echoes = len(all)
	if len(all) > 0 {
		slices.Sort(all)
		var sum time.Duration
		for _, x := range all {
			sum += x
		}
		res.Mean = sum / time.Duration(len(all))
		res.P99 = all[min(len(all)-1, len(all)*99/100)]
		res.MeanMs = float64(res.Mean) / float64(time.Millisecond)
		res.P99Ms = float64(res.P99) / float64(time.Millisecond)
	}
	return res, nil
}

package opensim

import (
	"math"
	"testing"
)

// fairAlloc is weighted max-min fair sharing by water-filling: capacity is
// shared in proportion to weight, no flow gets more than its demand, and
// what a satisfied flow leaves is shared again among the rest.
func fairAlloc(capacity float64, demand, weight []float64) []float64 {
	alloc := make([]float64, len(demand))
	active := make([]bool, len(demand))
	for i := range demand {
		active[i] = demand[i] > 0 && weight[i] > 0
	}
	for left := capacity; left > 1e-9; {
		var wsum float64
		for i, a := range active {
			if a {
				wsum += weight[i]
			}
		}
		if wsum == 0 {
			break
		}
		// The smallest level at which some active flow is satisfied.
		level := left / wsum
		for i, a := range active {
			if a {
				level = math.Min(level, (demand[i]-alloc[i])/weight[i])
			}
		}
		for i, a := range active {
			if a {
				alloc[i] += level * weight[i]
				left -= level * weight[i]
				if demand[i]-alloc[i] <= 1e-9 {
					active[i] = false
				}
			}
		}
	}
	return alloc
}

func TestFairAlloc(t *testing.T) {
	inf := math.Inf(1)
	for _, tc := range []struct {
		name     string
		capacity float64
		demand   []float64
		weight   []float64
		want     []float64
	}{
		{"equal", 90, []float64{inf, inf, inf}, []float64{1, 1, 1}, []float64{30, 30, 30}},
		{"proportional", 100, []float64{inf, inf}, []float64{1, 3}, []float64{25, 75}},
		{"a small demand leaves its share", 100, []float64{10, inf, inf}, []float64{1, 1, 1}, []float64{10, 45, 45}},
		{"weighted water-filling", 100, []float64{20, inf, inf}, []float64{2, 1, 1}, []float64{20, 40, 40}},
		{"spare capacity", 100, []float64{10, 20}, []float64{1, 1}, []float64{10, 20}},
		{"no demand", 100, []float64{0, inf}, []float64{5, 1}, []float64{0, 100}},
		{"cascade", 60, []float64{5, 15, inf}, []float64{1, 1, 1}, []float64{5, 15, 40}},
	} {
		got := fairAlloc(tc.capacity, tc.demand, tc.weight)
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-6 {
				t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
				break
			}
		}
	}
}

// spec is one client of a scenario: its channel rates (weights) and each
// channel's offered load in bytes/s (Inf: always backlogged).
type spec struct {
	rates  [NumChannels]float64
	demand [NumChannels]float64
}

// oracle computes every client's and channel's fair throughput: clients
// share the scene cap in proportion to their rates (never above their rate
// or their demand); within a client, Avatar first takes up to its rate if
// it has priority, and the channels share the rest in proportion to their
// rates, work-conserving.
func oracle(sceneMax float64, clients []spec, avatarPriority bool) [][NumChannels]float64 {
	demand := make([]float64, len(clients))
	weight := make([]float64, len(clients))
	for i, c := range clients {
		var rate, d float64
		for ch := range NumChannels {
			rate += c.rates[ch]
			d += c.demand[ch]
		}
		demand[i], weight[i] = math.Min(rate, d), rate
	}
	perClient := fairAlloc(sceneMax, demand, weight)
	out := make([][NumChannels]float64, len(clients))
	for i, c := range clients {
		left := perClient[i]
		d := c.demand
		if avatarPriority {
			g := math.Min(math.Min(d[0], c.rates[0]), left)
			out[i][0] = g
			left -= g
			d[0] -= g
		}
		share := fairAlloc(left, d[:], c.rates[:])
		for ch := range NumChannels {
			out[i][ch] += share[ch]
		}
	}
	return out
}

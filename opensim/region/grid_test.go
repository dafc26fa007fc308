package region

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestGridNear: after random moves, logouts and returns, near finds
// exactly the avatars a scan of all of them finds within the distance,
// for several views and world sizes (seeded, so the same every run).
func TestGridNear(t *testing.T) {
	tests := []struct {
		view, world float32
		avatars     int
	}{
		{32, 256, 200},
		{8, 256, 400},
		{32, 2000, 300},
		{32, 40, 50}, // everyone in a few cells
	}
	for _, tt := range tests {
		rng := rand.New(rand.NewPCG(uint64(tt.avatars), uint64(tt.world)))
		g := newGrid(tt.view)
		clients := make([]*client, tt.avatars)
		pos := make([][2]float32, tt.avatars)
		in := make([]bool, tt.avatars)
		for i := range clients {
			clients[i] = &client{}
		}
		for step := range 20 * tt.avatars {
			i := rng.IntN(tt.avatars)
			switch {
			case in[i] && rng.IntN(10) == 0:
				g.remove(clients[i])
				in[i] = false
			case in[i] && rng.IntN(2) == 0: // a short walk, usually in the same cell
				x := min(max(pos[i][0]+rng.Float32()*4-2, 0), tt.world)
				y := min(max(pos[i][1]+rng.Float32()*4-2, 0), tt.world)
				g.move(clients[i], x, y)
				pos[i] = [2]float32{x, y}
			default:
				x, y := rng.Float32()*tt.world, rng.Float32()*tt.world
				g.move(clients[i], x, y)
				pos[i], in[i] = [2]float32{x, y}, true
			}
			if step%7 != 0 {
				continue
			}
			x, y := rng.Float32()*tt.world, rng.Float32()*tt.world
			var got, want []int
			g.near(x, y, tt.view, func(c *client) { got = append(got, slices.Index(clients, c)) })
			for j, p := range pos {
				if dx, dy := p[0]-x, p[1]-y; in[j] && dx*dx+dy*dy <= tt.view*tt.view {
					want = append(want, j)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("view %v, world %v, step %d: near (%.1f, %.1f) found %v, want %v", tt.view, tt.world, step, x, y, got, want)
			}
		}
	}
}

// BenchmarkGridNear: one movement's lookup at the density of the stress
// goal (5,530 avatars, 8 neighbours per move within 32 m: a 1,477 m
// square), clients allocated as the region does, several KB apart.
func BenchmarkGridNear(b *testing.B) {
	const n, view, world = 5530, 32, 1477
	rng := rand.New(rand.NewPCG(1, 2))
	g := newGrid(view)
	clients := make([]*client, n)
	for i := range clients {
		clients[i] = &client{unacked: map[uint32]*outPacket{}}
		g.move(clients[i], rng.Float32()*world, rng.Float32()*world)
	}
	found := 0
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		c := clients[rng.IntN(n)]
		x, y := rng.Float32()*world, rng.Float32()*world
		g.move(c, x, y)
		g.near(x, y, view, func(*client) { found++ })
	}
	b.ReportMetric(float64(found)/float64(b.N), "avatars/op")
}

package opensim

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// loaded returns a scheduler with n clients at the viewer's 1,500 kbit/s
// split, each channel holding a few packets.
func loaded(b testing.TB, n int) (*Scheduler[int], []ClientID) {
	s, err := New[int](Config{SceneMax: 1 << 33, ClientMax: 1_000_000})
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]ClientID, n)
	for i := range ids {
		ids[i] = s.AddClient(epoch)
		s.SetThrottleValues(ids[i], viewerSplit(1500), epoch)
		for ch := range NumChannels {
			for range 2 {
				s.Enqueue(ids[i], Channel(ch), 1000, 0, false, epoch)
			}
		}
	}
	return s, ids
}

// BenchmarkEnqueueNext: one packet in and one out, for a random client and
// a channel drawn in proportion to the channel rates (each channel's load
// follows its rate, as a server's producers do); every channel starts
// backlogged, and virtual time advances so that packets arrive at 80 % of
// what the clients' rates let out.
func BenchmarkEnqueueNext(b *testing.B) {
	const size = 1000
	for _, n := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("clients=%d", n), func(b *testing.B) {
			s, ids := loaded(b, n)
			rates, perClient, _ := s.Rates(ids[0])
			step := time.Duration(float64(time.Second) * size / (0.8 * float64(perClient) * float64(n)))
			var cum [NumChannels]int64
			for ch, r := range rates {
				cum[ch] = r
				if ch > 0 {
					cum[ch] += cum[ch-1]
				}
			}
			pick := func(x int64) Channel {
				for ch, c := range cum {
					if x < c {
						return Channel(ch)
					}
				}
				return NumChannels - 1
			}
			rng := rand.New(rand.NewPCG(1, 2))
			now := epoch
			b.ReportAllocs()
			for b.Loop() {
				id := ids[rng.IntN(len(ids))]
				s.Enqueue(id, pick(rng.Int64N(perClient)), size, 0, false, now)
				if _, wait, ok := s.Next(now); !ok && wait > 0 {
					now = now.Add(wait)
					s.Next(now)
				}
				now = now.Add(step)
			}
		})
	}
}

// BenchmarkClientLifecycle: adding, removing and re-throttling a client
// cost the same with 1,000 clients as with 100,000.
func BenchmarkClientLifecycle(b *testing.B) {
	th := viewerSplit(3000)
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("add+remove/clients=%d", n), func(b *testing.B) {
			s, _ := loaded(b, n)
			b.ReportAllocs()
			for b.Loop() {
				s.RemoveClient(s.AddClient(epoch), epoch)
			}
		})
		b.Run(fmt.Sprintf("rethrottle/clients=%d", n), func(b *testing.B) {
			s, ids := loaded(b, n)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				s.SetThrottleValues(ids[i%len(ids)], th, epoch)
				i++
			}
		})
	}
}

// TestIdleClientMemory: an idle client costs at most 2 KiB.
func TestIdleClientMemory(t *testing.T) {
	const n = 50_000
	s, _ := New[int](Config{})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		id := s.AddClient(epoch)
		s.SetThrottleValues(id, viewerSplit(1500), epoch)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("idle client: %.0f bytes", per)
	if per > 2048 {
		t.Errorf("an idle client takes %.0f bytes, more than 2 KiB", per)
	}
	runtime.KeepAlive(s)
}

// TestSteadyStateAllocs: once queues and heaps have grown, enqueueing and
// sending allocate nothing.
func TestSteadyStateAllocs(t *testing.T) {
	s, ids := loaded(t, 1000)
	now := epoch
	i := 0
	step := func() {
		s.Enqueue(ids[i%len(ids)], Channel(i%NumChannels), 1000, 0, false, now)
		if _, wait, ok := s.Next(now); !ok && wait > 0 {
			now = now.Add(wait)
			s.Next(now)
		}
		now = now.Add(time.Microsecond)
		i++
	}
	for range 20000 {
		step()
	}
	if n := testing.AllocsPerRun(5000, step); n != 0 {
		t.Errorf("%v allocations per packet in steady state", n)
	}
}

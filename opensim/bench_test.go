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
	return loadedWith(b, n, Config{})
}

// loadedWith is loaded with cfg's mode (ChannelBuckets, AvatarPriority).
func loadedWith(b testing.TB, n int, cfg Config) (*Scheduler[int], []ClientID) {
	cfg.SceneMax, cfg.ClientMax = 1<<33, 1_000_000
	s, err := New[int](cfg)
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

// workload is a benchmark's packet sequence, drawn before the clock
// starts so that the benchmark times the scheduler, not the random number
// generator. Clients come in rounds, each a new random order of all of
// them, as a server's update loop visits every client once a frame: every
// packet goes to a client far away in memory from the last, yet each
// client gets the same load. (Independent draws for every packet would
// not do: replayed in a loop, the clients drawn most often would be
// overloaded for good.) A packet's channel is drawn in proportion to the
// channel rates, as a server's producers load each channel by its rate.
// step advances virtual time so that packets arrive at 80 % of what the
// clients' rates let out.
type workload struct {
	pkts []Outgoing[int]
	step time.Duration
}

const packetSize = 1000

func newWorkload(s *Scheduler[int], ids []ClientID) workload {
	rates, perClient, _ := s.Rates(ids[0])
	var cum [NumChannels]int64
	for ch, r := range rates {
		cum[ch] = r
		if ch > 0 {
			cum[ch] += cum[ch-1]
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rounds := (1<<16 + len(ids) - 1) / len(ids)
	pkts := make([]Outgoing[int], 0, rounds*len(ids))
	for range rounds {
		for _, k := range rng.Perm(len(ids)) {
			x, ch := rng.Int64N(perClient), Channel(0)
			for ch < NumChannels-1 && x >= cum[ch] {
				ch++
			}
			pkts = append(pkts, Outgoing[int]{Client: ids[k], Channel: ch, Size: packetSize})
		}
	}
	return workload{pkts: pkts, step: time.Duration(float64(time.Second) * packetSize / (0.8 * float64(perClient) * float64(len(ids))))}
}

// BenchmarkEnqueueNext: packets arrive at 80 % of the clients' rates
// and the sender takes out whatever may leave, as a server's send loop
// does. single calls Enqueue per packet, then Next until nothing may
// leave; batch=64 queues 64 packets with EnqueueBatch, then calls
// NextBatch, as a sender using sendmmsg would, and reports the time per
// packet.
func BenchmarkEnqueueNext(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("clients=%d/single", n), func(b *testing.B) {
			s, ids := loaded(b, n)
			enqueueNextSingle(b, s, ids)
			checkThroughput(b, s, b.N)
		})
		b.Run(fmt.Sprintf("clients=%d/batch=64", n), func(b *testing.B) {
			const batch = 64
			s, ids := loaded(b, n)
			w := newWorkload(s, ids)
			out := make([]Item[int], batch)
			now := epoch
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				s.EnqueueBatch(w.pkts[i:i+batch], nil, now)
				for {
					if k, _ := s.NextBatch(out, now); k < len(out) {
						break
					}
				}
				now = now.Add(batch * w.step)
				if i += batch; i+batch > len(w.pkts) {
					i = 0
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/packet")
			checkThroughput(b, s, b.N*batch)
		})
	}
}

// enqueueNextSingle is the single-packet loop of BenchmarkEnqueueNext:
// a packet in, everything the scheduler lets out, time on by one step.
func enqueueNextSingle(b *testing.B, s *Scheduler[int], ids []ClientID) {
	w := newWorkload(s, ids)
	now := epoch
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		pk := &w.pkts[i]
		s.Enqueue(pk.Client, pk.Channel, pk.Size, 0, false, now)
		for {
			if _, _, ok := s.Next(now); !ok {
				break
			}
		}
		now = now.Add(w.step)
		if i++; i == len(w.pkts) {
			i = 0
		}
	}
}

// BenchmarkEnqueueNextChannelBuckets is BenchmarkEnqueueNext's single
// case under ChannelBuckets: what OpenSim's per-category buckets cost.
func BenchmarkEnqueueNextChannelBuckets(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("clients=%d/single", n), func(b *testing.B) {
			s, ids := loadedWith(b, n, Config{ChannelBuckets: true})
			enqueueNextSingle(b, s, ids)
			// Without lending a category's random surplus waits for its
			// own bucket, so more stays queued at the end than with it.
			if st := s.Stats(); st.RefusedBytes > 0 || int(st.SentBytes/packetSize) < b.N*9/10 {
				b.Fatalf("%d packets in, %d sent, %d bytes refused", b.N, st.SentBytes/packetSize, st.RefusedBytes)
			}
		})
	}
}

// checkThroughput fails a benchmark whose scheduler did not send about a
// packet for each one it took in: a benchmark that timed refusals or idle
// calls would flatter the scheduler.
func checkThroughput(b *testing.B, s *Scheduler[int], packets int) {
	st := s.Stats()
	sent := int(st.SentBytes / packetSize)
	if st.RefusedBytes > 0 || sent < packets*99/100 {
		b.Fatalf("%d packets in, %d sent, %d bytes refused", packets, sent, st.RefusedBytes)
	}
}

// BenchmarkMemoryLatency is the baseline for the figures above: one
// dependent load from a random cache line of a 64 MiB array, the cost of a
// miss to memory on this machine, measured in the same run.
func BenchmarkMemoryLatency(b *testing.B) {
	const lines = 64 << 20 / 64
	type line struct {
		next int
		_    [56]byte
	}
	a := make([]line, lines)
	perm := rand.New(rand.NewPCG(3, 4)).Perm(lines)
	for i := range lines {
		a[perm[i]].next = perm[(i+1)%lines]
	}
	p := 0
	for b.Loop() {
		p = a[p].next
	}
	runtime.KeepAlive(p)
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

package link

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// deliveryLog records what a bottleneck delivers, when (on the bubble's
// clock), per flow.
type deliveryLog struct {
	mu    sync.Mutex
	start time.Time
	got   map[string][]time.Duration
}

func (l *deliveryLog) deliver(name string) func([]byte) {
	return func([]byte) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.got[name] = append(l.got[name], time.Since(l.start))
	}
}

func (l *deliveryLog) of(name string) []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Duration(nil), l.got[name]...)
}

// runBottleneck starts b's Run in the bubble and stops it at the test's
// end.
func runBottleneck(t *testing.T, b *Bottleneck) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { b.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func addFlows(t *testing.T, b *Bottleneck, l *deliveryLog, flows ...FlowConfig) map[string]Flow {
	ids := map[string]Flow{}
	for _, fc := range flows {
		fc.Deliver = l.deliver(fc.Name)
		f, err := b.AddFlow(fc)
		if err != nil {
			t.Fatal(err)
		}
		ids[fc.Name] = f
	}
	return ids
}

func ms(v ...float64) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x * float64(time.Millisecond))
	}
	return out
}

// TestBottleneckExact: on virtual time, two flows sharing a 1,000 B/s
// down direction with a 3-packet drop-tail buffer and 50 ms of delay get
// exactly the departures, drops and deliveries the model gives, in
// arrival order; the up direction's flow is unaffected by the queue down;
// levels and per-flow counters are exact at every instant.
func TestBottleneckExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := NewBottleneck(BottleneckConfig{
			Down: PipeConfig{Rate: 1000, Delay: 50 * time.Millisecond, Buffer: 3},
			Up:   PipeConfig{Delay: 10 * time.Millisecond},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		l := &deliveryLog{start: time.Now(), got: map[string][]time.Duration{}}
		id := addFlows(t, b, l, FlowConfig{Name: "a", Dir: Down}, FlowConfig{Name: "b", Dir: Down}, FlowConfig{Name: "c", Dir: Up, Overhead: 28})
		runBottleneck(t, b)
		send := func(name string, size int, want Cause) {
			t.Helper()
			if c, err := b.Send(id[name], make([]byte, size)); err != nil || c != want {
				t.Fatalf("%s %d B at %v: %v, %v; want %v", name, size, time.Since(l.start), c, err, want)
			}
		}
		// At 0: a, b, a fill the buffer (serialised in 100 ms each), b is
		// dropped; c goes up, unlimited, in 10 ms.
		send("a", 100, Forwarded)
		send("b", 100, Forwarded)
		send("a", 100, Forwarded)
		send("b", 100, DroppedQueue)
		send("c", 50, Forwarded)
		// At 101 ms the first a has left: room for one more b, which
		// departs after the second a, at 400 ms.
		time.Sleep(101 * time.Millisecond)
		send("b", 100, Forwarded)
		time.Sleep(99 * time.Millisecond) // 200 ms
		synctest.Wait()
		st := b.Stats()
		levels := map[string][4]uint64{ // delivered, in flight, queued, dropped
			"a": {1, 0, 1, 0}, // delivered at 150; the second departs at 300
			"b": {0, 1, 1, 1}, // departed at 200, delivered at 250; one queued
			"c": {1, 0, 0, 0},
		}
		for name, want := range levels {
			f, _ := st.Flow(name)
			if got := [4]uint64{f.Delivered, f.InFlight, f.Queued, f.Dropped()}; got != want || !f.Conserved() {
				t.Errorf("at 200 ms %s: delivered, in flight, queued, dropped %v, want %v (conserved %v)", name, got, want, f.Conserved())
			}
		}
		time.Sleep(time.Second)
		synctest.Wait()
		for name, want := range map[string][]time.Duration{"a": ms(150, 350), "b": ms(250, 450), "c": ms(10)} {
			if got := l.of(name); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s delivered at %v, want %v", name, got, want)
			}
		}
		st = b.Stats()
		a, _ := st.Flow("a")
		bf, _ := st.Flow("b")
		c, _ := st.Flow("c")
		if a.Arrived != 2 || a.ArrivedBytes != 200 || a.DeliveredBytes != 200 || bf.Arrived != 3 || bf.DroppedQueue != 1 || bf.DeliveredBytes != 200 {
			t.Errorf("a %+v\nb %+v", a, bf)
		}
		// Bytes are on the wire: c's 50 plus its 28 of headers.
		if c.ArrivedBytes != 78 || st.Up.ArrivedBytes != 78 || st.Down.ArrivedBytes != 500 {
			t.Errorf("bytes: c %d, up %d, down %d; want 78, 78, 500", c.ArrivedBytes, st.Up.ArrivedBytes, st.Down.ArrivedBytes)
		}
		// Queueing delays: a waited 100 and 300 ms, b 200 and 299 ms.
		for _, tc := range []struct {
			name           string
			h              DelayHistogram
			mean, p50, max time.Duration
		}{
			{"a", a.QueueDelay, 200 * time.Millisecond, 100 * time.Millisecond, 300 * time.Millisecond},
			{"b", bf.QueueDelay, 249500 * time.Microsecond, 200 * time.Millisecond, 299 * time.Millisecond},
		} {
			if tc.h.Mean() != tc.mean || tc.h.Max != tc.max || !within(tc.h.Quantile(0.5), tc.p50, 1.0/64) {
				t.Errorf("%s queue delay mean %v p50 %v max %v, want %v, %v (±1.6 %%), %v", tc.name, tc.h.Mean(), tc.h.Quantile(0.5), tc.h.Max, tc.mean, tc.p50, tc.max)
			}
		}
		if !st.Up.Conserved() || !st.Down.Conserved() || st.Down.Delivered != 4 || st.Down.Queued+st.Down.InFlight != 0 {
			t.Errorf("totals: up %+v, down %+v", st.Up, st.Down)
		}
	})
}

func within(got, want time.Duration, rel float64) bool {
	d := float64(got - want)
	return d <= rel*float64(want) && -d <= rel*float64(want)
}

// TestPipeDropTail: the buffer's limit in datagrams, in bytes, or both,
// decides exactly which of a burst of arrivals at one instant is dropped;
// the packet being serialised counts towards it.
func TestPipeDropTail(t *testing.T) {
	F, Q := Forwarded, DroppedQueue
	for _, tc := range []struct {
		name  string
		cfg   PipeConfig
		sizes []int
		want  []Cause
	}{
		{"20 packets", PipeConfig{Rate: 64_000, Buffer: 20}, repeat(1500, 22), append(causes(F, 20), Q, Q)},
		{"packets, whatever their size", PipeConfig{Rate: 64_000, Buffer: 2}, []int{1500, 40, 40}, []Cause{F, F, Q}},
		{"bytes", PipeConfig{Rate: 1000, BufferBytes: 250}, []int{100, 100, 100, 50, 1}, []Cause{F, F, Q, F, Q}},
		{"bytes: one packet larger than the buffer", PipeConfig{Rate: 1000, BufferBytes: 250}, []int{300, 250}, []Cause{Q, F}},
		{"both: packets bind", PipeConfig{Rate: 1000, Buffer: 2, BufferBytes: 1000}, []int{10, 10, 10}, []Cause{F, F, Q}},
		{"both: bytes bind", PipeConfig{Rate: 1000, Buffer: 10, BufferBytes: 100}, []int{60, 60, 40}, []Cause{F, Q, F}},
		{"no limit in packets with a byte limit", PipeConfig{Rate: 1000, BufferBytes: 2000}, repeat(1, 1500), causes(F, 1500)},
		{"unlimited rate queues nothing", PipeConfig{Buffer: 1}, repeat(1500, 5), causes(F, 5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPipe(tc.cfg, 1)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tc.sizes {
				if _, c := p.Offer(s, t0); c != tc.want[i] {
					t.Fatalf("arrival %d (%d B): %v, want %v", i, s, c, tc.want[i])
				}
			}
			total, _ := p.FlowStats(t0)
			if !total.Conserved() {
				t.Errorf("not conserved: %+v", total)
			}
		})
	}
}

func repeat(size, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = size
	}
	return out
}

func causes(c Cause, n int) []Cause {
	out := make([]Cause, n)
	for i := range out {
		out[i] = c
	}
	return out
}

// TestPipeRateAndDelayExact: back-to-back packets leave one serialisation
// time apart, in integer nanoseconds per packet, and arrive Delay later,
// at the literature's rates: the seed study's 512 kbit/s uplink and
// 6 Mbit/s downlink with 80 ms, the multiplexing study's 300 kbit/s with
// 20 ms.
func TestPipeRateAndDelayExact(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   PipeConfig
		size  int
		first time.Duration // the first packet's delivery
		gap   time.Duration // between deliveries
	}{
		{"512 kbit/s, 1500 B, 80 ms", PipeConfig{Rate: 512_000 / 8, Delay: 80 * time.Millisecond, Buffer: 200}, 1500, 80*time.Millisecond + 23437500*time.Nanosecond, 23437500 * time.Nanosecond},
		{"6 Mbit/s, 1500 B, 80 ms", PipeConfig{Rate: 6_000_000 / 8, Delay: 80 * time.Millisecond, Buffer: 200}, 1500, 82 * time.Millisecond, 2 * time.Millisecond},
		{"300 kbit/s, 40 B, 20 ms", PipeConfig{Rate: 300_000 / 8, Delay: 20 * time.Millisecond, Buffer: 200}, 40, 20*time.Millisecond + 1066666*time.Nanosecond, 1066666 * time.Nanosecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPipe(tc.cfg, 1)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 150 {
				at, c := p.Offer(tc.size, t0)
				want := t0.Add(tc.first + time.Duration(i)*tc.gap)
				if c != Forwarded || !at.Equal(want) {
					t.Fatalf("packet %d: %v at %v, want forwarded at %v", i, c, at.Sub(t0), want.Sub(t0))
				}
			}
			// A packet arriving to an empty queue waits for nothing.
			later := t0.Add(time.Hour)
			if at, _ := p.Offer(tc.size, later); !at.Equal(later.Add(tc.first)) {
				t.Errorf("into an empty queue: delivered after %v, want %v", at.Sub(later), tc.first)
			}
		})
	}
}

// TestPipeConservation: under random arrivals of four flows with random
// sizes, loss and a small buffer, at any instant every packet is
// delivered, in flight, queued or dropped, per flow and in total; the
// levels agree with the delivery times Offer returned.
func TestPipeConservation(t *testing.T) {
	for _, cfg := range []PipeConfig{
		{Rate: 100_000, Delay: 30 * time.Millisecond, Loss: 0.05, Buffer: 20},
		{Rate: 100_000, Delay: 30 * time.Millisecond, Loss: 0.02, BurstLen: 3, BufferBytes: 15_000},
		{Delay: 5 * time.Millisecond, Loss: 0.1},
	} {
		t.Run(cfg.String(), func(t *testing.T) {
			p, err := NewPipe(cfg, 9)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(4, 2))
			type fate struct {
				flow              Flow
				depart, deliver   time.Time
				forwarded, random bool
			}
			var fates []fate
			now := t0
			for i := range 20_000 {
				now = now.Add(time.Duration(rng.ExpFloat64() * float64(8*time.Millisecond)))
				f := Flow(rng.IntN(4))
				at, c := p.OfferFlow(f, 40+rng.IntN(1461), now)
				fates = append(fates, fate{flow: f, deliver: at, depart: at.Add(-cfg.Delay), forwarded: c == Forwarded, random: c == DroppedRandom})
				if i%997 != 0 {
					continue
				}
				check := now.Add(time.Duration(rng.IntN(int(50 * time.Millisecond))))
				total, flows := p.FlowStats(check)
				var want [4][5]uint64 // delivered, in flight, queued, random, queue
				for _, x := range fates {
					w := &want[x.flow]
					switch {
					case x.random:
						w[3]++
					case !x.forwarded:
						w[4]++
					case !x.deliver.After(check):
						w[0]++
					case !x.depart.After(check):
						w[1]++
					default:
						w[2]++
					}
				}
				var sum FlowStats
				for f := range flows {
					s := flows[f]
					got := [5]uint64{s.Delivered, s.InFlight, s.Queued, s.DroppedRandom, s.DroppedQueue}
					if got != want[f] || !s.Conserved() {
						t.Fatalf("after %d arrivals, flow %d: %v, want %v (conserved %v)", i+1, f, got, want[f], s.Conserved())
					}
					sum.add(&s)
				}
				if !total.Conserved() || total.Arrived != uint64(i+1) || total.Delivered != sum.Delivered || total.QueueDelay.Count != sum.QueueDelay.Count {
					t.Fatalf("total %+v", total)
				}
				now = check // the pipe's time does not go back
			}
		})
	}
}

// TestBottleneckFlowSeparation: three flows with their own rates and
// sizes through one 100 kB/s direction on virtual time each get their own
// throughput and counters; the flow that arrives with bursts waits longer
// than the smooth ones; the totals are the flows' sums.
func TestBottleneckFlowSeparation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := NewBottleneck(BottleneckConfig{Down: PipeConfig{Rate: 100_000, Delay: 20 * time.Millisecond, Buffer: 50}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		l := &deliveryLog{start: time.Now(), got: map[string][]time.Duration{}}
		id := addFlows(t, b, l, FlowConfig{Name: "smooth 60 kB/s", Dir: Down}, FlowConfig{Name: "smooth 20 kB/s", Dir: Down, Overhead: 28}, FlowConfig{Name: "bursts 10 kB/s", Dir: Down})
		runBottleneck(t, b)
		start := time.Now()
		pace := func(name string, size int, every time.Duration, burst int) {
			for time.Since(start) < 10*time.Second {
				for range burst {
					b.Send(id[name], make([]byte, size))
				}
				time.Sleep(every)
			}
		}
		var wg sync.WaitGroup
		wg.Go(func() { pace("smooth 60 kB/s", 1200, 20*time.Millisecond, 1) })
		wg.Go(func() { pace("smooth 20 kB/s", 172, 10*time.Millisecond, 1) }) // 200 B on the wire
		wg.Go(func() { pace("bursts 10 kB/s", 1000, 500*time.Millisecond, 5) })
		time.Sleep(time.Second)
		synctest.Wait()
		warm := b.Stats()
		time.Sleep(9 * time.Second)
		synctest.Wait()
		st := b.Stats().Since(warm)
		wg.Wait()
		for _, tc := range []struct {
			name string
			rate float64
		}{{"smooth 60 kB/s", 60_000}, {"smooth 20 kB/s", 20_000}, {"bursts 10 kB/s", 10_000}} {
			f, _ := st.Flow(tc.name)
			// Over about 9 s, a packet more or less at either end: ±2 %.
			if got := f.Throughput(); got < tc.rate*0.98 || got > tc.rate*1.02 || f.Dropped() != 0 {
				t.Errorf("%s: %.0f B/s, %d dropped; want %.0f ±2 %%, none", tc.name, got, f.Dropped(), tc.rate)
			}
			if got := uint64(len(l.of(tc.name))); got != b.Stats().Flows[id[tc.name]].Delivered {
				t.Errorf("%s: %d deliveries, counted %d", tc.name, got, b.Stats().Flows[id[tc.name]].Delivered)
			}
		}
		smooth, _ := st.Flow("smooth 60 kB/s")
		bursts, _ := st.Flow("bursts 10 kB/s")
		// A burst of five 1,000-byte packets queues for up to 40 ms behind
		// itself; the smooth flow's packets mostly find the queue short.
		// The last of a burst waits for the four before it and its own
		// 10 ms: a fifth of the bursts' packets wait 50 ms or more. A smooth
		// packet mostly waits for its own 12 ms and little else.
		if p95, p50 := bursts.QueueDelay.Quantile(0.95), smooth.QueueDelay.Quantile(0.5); p95 < 50*time.Millisecond || p50 < 12*time.Millisecond || p50 > 20*time.Millisecond {
			t.Errorf("queue delay p95 of the bursts %v (want ≥ 50 ms), p50 of the smooth flow %v (want 12–20 ms)", p95, p50)
		}
		var sum FlowStats
		for _, f := range st.Flows {
			sum.add(&f.FlowStats)
		}
		if sum.Delivered != st.Down.Delivered || sum.DeliveredBytes != st.Down.DeliveredBytes || sum.QueueDelay.Sum != st.Down.QueueDelay.Sum {
			t.Errorf("flows sum to %d packets, %d B; the direction has %d, %d B", sum.Delivered, sum.DeliveredBytes, st.Down.Delivered, st.Down.DeliveredBytes)
		}
	})
}

// TestBottleneckFlowErrors: a flow without a way to deliver, in no
// direction, with a negative overhead or a taken name is refused, and a
// label the bottleneck did not hand out is an error, not a panic.
func TestBottleneckFlowErrors(t *testing.T) {
	b, err := NewBottleneck(BottleneckConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	deliver := func([]byte) {}
	if _, err := b.AddFlow(FlowConfig{Name: "x", Deliver: deliver}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cfg  FlowConfig
		want string
	}{
		{FlowConfig{Name: "no deliver"}, "has no Deliver"},
		{FlowConfig{Name: "sideways", Dir: 7, Deliver: deliver}, "direction 7 is neither"},
		{FlowConfig{Name: "negative", Overhead: -1, Deliver: deliver}, "overhead -1 is negative"},
		{FlowConfig{Name: "x", Deliver: deliver}, `flow "x" already exists`},
	} {
		if _, err := b.AddFlow(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := b.Send(5, []byte{1}); err != ErrUnknownFlow {
		t.Errorf("unknown flow: %v", err)
	}
	if _, err := NewBottleneck(BottleneckConfig{Up: PipeConfig{BufferBytes: -1}}, nil); err == nil || !strings.Contains(err.Error(), "up: buffer -1 bytes is negative") {
		t.Errorf("negative byte buffer: %v", err)
	}
}

// BenchmarkPipeOffer is the bottleneck's decision per packet: 1,500-byte
// packets into a 6 Mbit/s pipe arriving slightly faster than it drains,
// so the queue stays full and both fates occur.
func BenchmarkPipeOffer(b *testing.B) {
	p, err := NewPipe(PipeConfig{Rate: 6_000_000 / 8, Delay: 20 * time.Millisecond, Buffer: 100, Loss: 0.01}, 1)
	if err != nil {
		b.Fatal(err)
	}
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(1900 * time.Microsecond)
		p.OfferFlow(3, 1500, now)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/packet")
}

// BenchmarkBottleneck is the whole path a packet takes on real time:
// Send, the Run goroutine's wake-up and the delivery, through an
// unlimited, undelayed direction so that the machinery alone is measured;
// BenchmarkBaselineChannel is the least such a hand-off costs, a buffered
// channel to a goroutine that calls a function, to compare with in the
// same run.
func BenchmarkBottleneck(b *testing.B) {
	bn, err := NewBottleneck(BottleneckConfig{Down: PipeConfig{Buffer: 100}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	var delivered sync.WaitGroup
	f, err := bn.AddFlow(FlowConfig{Name: "bench", Dir: Down, Deliver: func([]byte) { delivered.Done() }})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { bn.Run(ctx); close(done) }()
	pkt := make([]byte, 1500)
	b.ReportAllocs()
	for b.Loop() {
		delivered.Add(1)
		bn.Send(f, pkt)
	}
	delivered.Wait()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/packet")
	cancel()
	<-done
}

func BenchmarkBaselineChannel(b *testing.B) {
	ch := make(chan []byte, 4096)
	var delivered sync.WaitGroup
	deliver := func([]byte) { delivered.Done() }
	go func() {
		for p := range ch {
			deliver(p)
		}
	}()
	pkt := make([]byte, 1500)
	b.ReportAllocs()
	for b.Loop() {
		delivered.Add(1)
		ch <- pkt
	}
	delivered.Wait()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/packet")
	close(ch)
}

// TestBottleneckStatsSince: the difference of two snapshots covers the
// interval between them for every flow, including one added in between,
// whose throughput is over that interval too.
func TestBottleneckStatsSince(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := NewBottleneck(BottleneckConfig{Down: PipeConfig{Rate: 10_000, Buffer: 100}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		l := &deliveryLog{start: time.Now(), got: map[string][]time.Duration{}}
		id := addFlows(t, b, l, FlowConfig{Name: "old", Dir: Down})
		runBottleneck(t, b)
		for range 10 { // 1,000 B/s for a second
			b.Send(id["old"], make([]byte, 100))
			time.Sleep(100 * time.Millisecond)
		}
		before := b.Stats()
		id["new"], _ = b.AddFlow(FlowConfig{Name: "new", Dir: Down, Deliver: l.deliver("new")})
		for range 10 { // 2,000 B/s from then on, beside 1,000
			b.Send(id["old"], make([]byte, 100))
			b.Send(id["new"], make([]byte, 200))
			time.Sleep(100 * time.Millisecond)
		}
		synctest.Wait()
		st := b.Stats().Since(before)
		for _, tc := range []struct {
			name  string
			bytes uint64
			rate  float64
		}{{"old", 1000, 1000}, {"new", 2000, 2000}} {
			f, _ := st.Flow(tc.name)
			if f.ArrivedBytes != tc.bytes || f.At.Sub(f.Start) != time.Second || f.Throughput() != tc.rate {
				t.Errorf("%s: %d B arrived over %v, %.0f B/s delivered; want %d B over 1s, %.0f B/s", tc.name, f.ArrivedBytes, f.At.Sub(f.Start), f.Throughput(), tc.bytes, tc.rate)
			}
		}
	})
}

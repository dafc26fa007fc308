package link

import (
	"math"
	"strings"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

// TestPipeRateAndQueue: a 1,000 B/s bottleneck with a 3-datagram buffer
// serialises datagrams, delays them and drops what overflows.
func TestPipeRateAndQueue(t *testing.T) {
	p, err := NewPipe(PipeConfig{Rate: 1000, Delay: 50 * time.Millisecond, Buffer: 3}, 1)
	if err != nil {
		t.Fatal(err)
	}
	var got []time.Duration
	var causes []Cause
	for range 5 { // five 100-byte datagrams at once
		d, c := p.Offer(100, t0)
		causes = append(causes, c)
		if c == Forwarded {
			got = append(got, d.Sub(t0))
		}
	}
	want := []time.Duration{150 * time.Millisecond, 250 * time.Millisecond, 350 * time.Millisecond}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("deliveries %v, want %v", got, want)
	}
	if causes[3] != DroppedQueue || causes[4] != DroppedQueue {
		t.Errorf("causes %v", causes)
	}
	// Once the first has left, there is room again.
	if _, c := p.Offer(100, t0.Add(101*time.Millisecond)); c != Forwarded {
		t.Errorf("after one left: %v", c)
	}
	st := p.Stats()
	if st.Forwarded != 4 || st.DroppedQueue != 2 || st.QueueDelayMean() != (100+200+300+300-1)*time.Millisecond/4 {
		t.Errorf("stats %+v, mean queue delay %v", st, st.QueueDelayMean())
	}
}

// TestPipeLoss: random and bursty loss both drop their share, bursty in
// longer runs, and a seed makes it repeatable.
func TestPipeLoss(t *testing.T) {
	const n = 200_000
	run := func(cfg PipeConfig, seed uint64) (rate, meanRun float64, pattern []Cause) {
		p, _ := NewPipe(cfg, seed)
		lost, runs, in := 0, 0, false
		for i := range n {
			_, c := p.Offer(100, t0.Add(time.Duration(i)*time.Millisecond))
			if i < 64 {
				pattern = append(pattern, c)
			}
			if c == DroppedRandom {
				lost++
				if !in {
					runs++
				}
			}
			in = c == DroppedRandom
		}
		return float64(lost) / n, float64(lost) / float64(max(runs, 1)), pattern
	}
	r1, run1, pat1 := run(PipeConfig{Loss: 0.1}, 7)
	r2, run2, _ := run(PipeConfig{Loss: 0.1, BurstLen: 5}, 7)
	_, _, pat3 := run(PipeConfig{Loss: 0.1}, 7)
	if math.Abs(r1-0.1) > 0.005 || math.Abs(r2-0.1) > 0.01 {
		t.Errorf("loss rates %.4f random, %.4f bursty, want 0.1", r1, r2)
	}
	if run1 > 1.3 || run2 < 4 || run2 > 6 {
		t.Errorf("mean loss runs %.2f random, %.2f bursty (want ~1.1 and ~5)", run1, run2)
	}
	for i := range pat1 {
		if pat1[i] != pat3[i] {
			t.Fatal("the same seed gave another loss pattern")
		}
	}
}

// TestPipeConfigErrors: every value the pipe would have to reinterpret is
// refused, naming it, by Validate and NewPipe alike; the values at the
// edges are accepted. (Loss 1 was refused before; it now drops all.)
func TestPipeConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  PipeConfig
		want string
	}{
		{PipeConfig{Rate: -1}, "rate -1 B/s is negative"},
		{PipeConfig{Delay: -time.Second}, "delay -1s outside"},
		{PipeConfig{Delay: time.Hour}, "delay 1h0m0s outside"},
		{PipeConfig{Loss: 1.01}, "loss 1.01 outside [0, 1]"},
		{PipeConfig{Loss: -0.1}, "loss -0.1 outside"},
		{PipeConfig{Loss: math.NaN()}, "loss NaN outside"},
		{PipeConfig{BurstLen: math.NaN()}, "burst length NaN"},
		{PipeConfig{BurstLen: math.Inf(1)}, "burst length +Inf"},
		{PipeConfig{BurstLen: -1}, "burst length -1"},
		{PipeConfig{BurstLen: 0.5}, "burst length 0.5"},
		{PipeConfig{BurstLen: 2e6}, "burst length 2e+06"},
		{PipeConfig{Buffer: -1}, "buffer -1 is negative"},
	} {
		if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: Validate() = %v, want %q", tc.cfg, err, tc.want)
		}
		if _, err := NewPipe(tc.cfg, 0); err == nil {
			t.Errorf("%+v accepted by NewPipe", tc.cfg)
		}
	}
	for _, cfg := range []PipeConfig{{}, {Loss: 1}, {BurstLen: 1}, {BurstLen: 1e6}, {Rate: 1, Delay: time.Minute, Buffer: 1}} {
		if _, err := NewPipe(cfg, 0); err != nil {
			t.Errorf("%+v refused: %v", cfg, err)
		}
	}
}

// TestPipeDropsAllAtFullLoss: a loss of 1 drops every datagram, bursty or
// not (the Gilbert–Elliott chain alone would let some through).
func TestPipeDropsAllAtFullLoss(t *testing.T) {
	for _, burst := range []float64{0, 1, 3, 1e6} {
		p, err := NewPipe(PipeConfig{Loss: 1, BurstLen: burst}, 3)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 10_000 {
			p.Offer(100, t0.Add(time.Duration(i)*time.Millisecond))
		}
		if st := p.Stats(); st.Forwarded != 0 || st.DroppedRandom != 10_000 {
			t.Errorf("burst %v: %+v, want all 10,000 dropped", burst, st)
		}
	}
}

// TestPipeConfigString: the description names what the pipe does,
// including the buffer a zero Buffer stands for.
func TestPipeConfigString(t *testing.T) {
	for _, tc := range []struct {
		cfg  PipeConfig
		want string
	}{
		{PipeConfig{}, "unlimited rate, delay 0s, loss 0%"},
		{PipeConfig{Rate: 250_000, Delay: 50 * time.Millisecond, Loss: 0.03, Buffer: 100}, "2000 kbit/s, buffer 100 datagrams, delay 50ms, loss 3% (independent)"},
		{PipeConfig{Rate: 1, Loss: 1, BurstLen: 4}, "0.008 kbit/s, buffer 1000 datagrams, delay 0s, loss 100% (bursts of 4 on average)"},
	} {
		if got := tc.cfg.String(); got != tc.want {
			t.Errorf("%#v: %q, want %q", tc.cfg, got, tc.want)
		}
	}
}

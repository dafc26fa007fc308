package opensim

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
)

// openSimRates is OpenSim master's arithmetic for an AgentThrottle
// (LLUDPClient.SetThrottles, TokenBucket.cs; protocol.md §8.2, §8.4): bits
// to bytes; Resend, Land, Task, Texture, Asset clamped to [1000, max] and
// Wind, Cloud to [50, max]; the total scaled down to ClientMaxRate; every
// bucket's drip floored at 500 B/s (MINDRIPRATE). Each category is its own
// bucket: what one leaves idle, no other gets.
func openSimRates(bits [lludp.NumCategories]float32, clientMax float64) [lludp.NumCategories]float64 {
	var r [lludp.NumCategories]float64
	var sum float64
	for i, b := range bits {
		lo := 1000.0
		if i == int(lludp.Wind) || i == int(lludp.Cloud) {
			lo = 50
		}
		r[i] = math.Min(math.Max(math.Trunc(float64(b)*0.125), lo), clientMax)
		sum += r[i]
	}
	if sum > clientMax {
		for i := range r {
			r[i] *= clientMax / sum
		}
	}
	for i := range r {
		r[i] = math.Max(r[i], 500)
	}
	return r
}

// TestOpenSimCompatibility: for the same request, with every channel busy
// and no resends requested, each channel gets what OpenSim's buckets give
// the categories it gathers (Layer = Land + Wind + Cloud; Avatar + Task =
// Task), within 2 %. Where fairgrid differs on purpose — resends spread over
// the channels, idle channels' shares lent to busy ones — the test shows
// the difference rather than hiding it.
func TestOpenSimCompatibility(t *testing.T) {
	for _, kbps := range []float64{1000, 1500, 3000, 4500} {
		req := viewerSplit(kbps)
		req[lludp.Resend] = 0
		s, _ := New[int](Config{})
		ids, specs := setup(t, s, [][lludp.NumCategories]float32{req}, backlogged)
		got := simulate(t, s, ids, specs, 500, 30*time.Second, 2*time.Second)[0]
		os := openSimRates(req, float64(s.Config().ClientMax))
		want := [NumChannels]float64{
			Avatar:  os[lludp.Task] * 0.8,
			Task:    os[lludp.Task] * 0.2,
			Texture: os[lludp.Texture],
			Layer:   os[lludp.Land] + os[lludp.Wind] + os[lludp.Cloud],
			Asset:   os[lludp.Asset],
		}
		for ch := range NumChannels {
			if e := got[ch]/want[ch] - 1; math.Abs(e) > 0.02 {
				t.Errorf("%v kbps %v: %.0f B/s, OpenSim %.0f (%+.1f%%)", kbps, Channel(ch), got[ch], want[ch], 100*e)
			}
		}
	}
	// On purpose: with Texture idle, OpenSim leaves its rate unused; here the
	// busy channels share it.
	s, _ := New[int](Config{})
	req := viewerSplit(1500)
	req[lludp.Resend] = 0
	ids, specs := setup(t, s, [][lludp.NumCategories]float32{req}, func(int) [NumChannels]float64 {
		d := backlogged(0)
		d[Texture] = 0
		return d
	})
	got := simulate(t, s, ids, specs, 500, 30*time.Second, 2*time.Second)[0]
	os := openSimRates(req, 640000)
	var total, osBusy float64
	for _, r := range got {
		total += r
	}
	for i, r := range os {
		if i != int(lludp.Texture) {
			osBusy += r
		}
	}
	if total < 1.3*osBusy {
		t.Errorf("with Texture idle fairgrid delivers %.0f B/s, OpenSim's busy buckets %.0f: the idle share should be lent", total, osBusy)
	}
}

// Example shows what fairgrid and OpenSim master make of the classic
// viewer's 1,500 kbit/s request (protocol.md §7.2), in bytes/s.
func ExampleChannelRates() {
	req := [lludp.NumCategories]float32{153600, 133120, 26624, 26624, 495616, 495616, 204800}
	os := openSimRates(req, 640000)
	fmt.Println("OpenSim master, one bucket per category:")
	for c := range lludp.Category(lludp.NumCategories) {
		fmt.Printf("  %-8v %7.0f\n", c, os[c])
	}
	rates, _ := ChannelRates(req, 0.8)
	fmt.Println("fairgrid, five channels (resends spread in proportion):")
	for ch := range Channel(NumChannels) {
		fmt.Printf("  %-8v %7.0f\n", ch, rates[ch])
	}
	// Output:
	// OpenSim master, one bucket per category:
	//   Resend     19200
	//   Land       16640
	//   Wind        3328
	//   Cloud       3328
	//   Task       61952
	//   Texture    61952
	//   Asset      25600
	// fairgrid, five channels (resends spread in proportion):
	//   Avatar     55068
	//   Task       13767
	//   Texture    68836
	//   Layer      25884
	//   Asset      28444
}

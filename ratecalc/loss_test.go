package ratecalc

import (
	"math"
	"testing"
	"time"
)

// history builds a LossHistory holding the closed intervals closed (I_1
// first) and the open interval open, by feeding it packets.
func history(discount bool, open float64, closed ...float64) *LossHistory {
	h := &LossHistory{Discount: discount}
	t0 := time.Unix(0, 0)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Hour) } // events far apart
	n := 0
	lose := func() { h.OnPacket(true, at(n), time.Second); n++ }
	receive := func(k float64) {
		for range int(k) {
			h.OnPacket(false, at(n), time.Second)
		}
	}
	// The oldest interval is closed first; each starts with its lost packet.
	lose()
	for i := len(closed) - 1; i >= 0; i-- {
		receive(closed[i] - 1)
		lose()
	}
	receive(open - 1)
	return h
}

// TestLossEventRateVectors: congestion.md §5.5.
func TestLossEventRateVectors(t *testing.T) {
	eight := []float64{100, 100, 100, 100, 100, 100, 100, 100}
	for _, tc := range []struct {
		open         float64
		plain, disco float64
	}{
		{1, 0.01, 0.01}, {50, 0.01, 0.01}, {100, 0.01, 0.01},
		{200, 0.00857, 0.00857}, {400, 0.00667, 0.00538}, {1000, 0.00400, 0.00200},
	} {
		for _, discount := range []bool{false, true} {
			h := history(discount, tc.open, eight...)
			want := tc.plain
			if discount {
				want = tc.disco
			}
			if got := h.LossEventRate(); math.Abs(got-want) > 0.000005 {
				t.Errorf("I_0=%v discount=%v: p = %.5f, want %.5f (intervals %v)", tc.open, discount, got, want, h.Intervals(nil))
			}
		}
	}
	h := history(false, 30, 20, 500, 400, 300, 200, 100, 50, 10)
	if got := h.LossEventRate(); math.Abs(got-1/243.6666667) > 1e-9 {
		t.Errorf("non-uniform: p = %v, want %v", got, 1/243.6666667)
	}
}

// TestLossEventGrouping: congestion.md §3.3's example. Packets every 1 ms,
// R = 100 ms, sequence numbers 100, 150, 151, 250 and 420 lost: events start
// at 100, 250 and 420, so I_2 = 150 and I_1 = 170.
func TestLossEventGrouping(t *testing.T) {
	var h LossHistory
	t0 := time.Unix(0, 0)
	lost := map[int]bool{100: true, 150: true, 151: true, 250: true, 420: true}
	events := 0
	for seq := 1; seq <= 430; seq++ {
		if ev, _ := h.OnPacket(lost[seq], t0.Add(time.Duration(seq)*time.Millisecond), 100*time.Millisecond); ev {
			events++
		}
	}
	got := h.Intervals(nil)
	if events != 3 || h.Events() != 3 || got[1] != 170 || got[2] != 150 || got[0] != 11 {
		t.Errorf("events %d, intervals %v; want 3 events, I_0 = 11, I_1 = 170, I_2 = 150", events, got)
	}
}

func TestRTTStatsRFC6298(t *testing.T) {
	var s RTTStats
	if s.RTO() != time.Second {
		t.Errorf("initial RTO %v", s.RTO())
	}
	s.Add(0)
	s.Add(-time.Second)
	s.Add(100 * time.Millisecond)
	if s.SRTT() != 100*time.Millisecond || s.RTTVar() != 50*time.Millisecond || s.Rejected() != 2 {
		t.Errorf("first sample: srtt %v rttvar %v rejected %d", s.SRTT(), s.RTTVar(), s.Rejected())
	}
	s.Add(200 * time.Millisecond)
	// RTTVAR = 3/4·50 + 1/4·100 = 62.5 ms; SRTT = 7/8·100 + 1/8·200 = 112.5 ms.
	if s.SRTT() != 112500*time.Microsecond || s.RTTVar() != 62500*time.Microsecond || s.Min() != 100*time.Millisecond {
		t.Errorf("second sample: srtt %v rttvar %v min %v", s.SRTT(), s.RTTVar(), s.Min())
	}
	if s.RTO() != time.Second { // 112.5 + 250 ms, floored at 1 s
		t.Errorf("RTO %v", s.RTO())
	}
}

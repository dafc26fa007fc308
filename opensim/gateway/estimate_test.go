package gateway

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
)

// TestEstimatorGroundTruth holds the gateway's server-side estimates to
// the link emulator's record, with the tolerances the audit's golden
// traces use (internal/audit/golden_test.go): the loss rate within four
// standard deviations of the link's setting, loss events within ±25 % and
// 2 of the dropped originals grouped by the link's round trip, and the RTT
// between the link's two delays and 25 ms more. Loss is random both ways,
// so acks are lost too (doc.go). Virtual time: a 40 s run costs well under
// a second.
func TestEstimatorGroundTruth(t *testing.T) {
	for _, tc := range []struct {
		loss  float64
		delay time.Duration // one way
	}{
		{0.005, 10 * time.Millisecond}, {0.005, 25 * time.Millisecond}, {0.005, 50 * time.Millisecond},
		{0.03, 10 * time.Millisecond}, {0.03, 25 * time.Millisecond}, {0.03, 50 * time.Millisecond}, {0.03, 100 * time.Millisecond},
		{0.10, 10 * time.Millisecond}, {0.10, 25 * time.Millisecond}, {0.10, 50 * time.Millisecond},
	} {
		for _, seed := range seeds(7, 11, 23) {
			t.Run(fmt.Sprintf("loss=%g%%,rtt=%v,seed=%d", 100*tc.loss, 2*tc.delay, seed), func(t *testing.T) {
				// The viewer asks for 1,500 kbit/s and the controller is held
				// at it (TFRC's equation would bring it down at 10 %, leaving
				// too few packets to judge), so every case sends enough.
				ask := ratecalc.RateFromBits(1_500_000)
				r := runSim(t, simConfig{loss: tc.loss, delay: tc.delay, viewers: []ratecalc.Rate{ask}, ctl: throttle.TFRC, hold: ask,
					run: 40 * time.Second, seed: seed})
				v, st := r.viewers[0], r.stats[0]
				e := st.Estimator
				rtt := 2 * tc.delay
				truth := truthEvents(v.droppedAt, rtt)
				t.Logf("sent %d reliable originals, link dropped %d (%d events); gateway: acked %d, lost %d, unknown %d, %d events, p %.4f; RTT %v (acks %v); up gaps %d; history %d received, %d lost",
					v.originalsSent, len(v.droppedAt), truth, e.Acked, e.Lost, e.Unknown, st.Controller.LossEvents, st.Controller.LossEventRate, st.RTT, st.AckRTT, e.UpGaps, st.Controller.Received, st.Controller.Lost)
				// The loss history holds the datagrams whose acks could not
				// have been in a lost ack datagram, chosen by time, not fate.
				ctl := st.Controller
				n := float64(ctl.Received + ctl.Lost)
				if sd := math.Sqrt(tc.loss * (1 - tc.loss) / n); math.Abs(float64(ctl.Lost)/n-tc.loss) > 4*sd {
					t.Errorf("loss rate %.4f over %v datagrams, the link's %.4f (±4σ = %.4f)", float64(ctl.Lost)/n, n, tc.loss, 4*sd)
				}
				want := float64(truth) * n / float64(v.originalsSent)
				if got := float64(ctl.LossEvents); math.Abs(got-want) > 0.25*want+2 {
					t.Errorf("%v loss events in %v datagrams, the link's drops make %.1f in as many", got, n, want)
				}
				if st.RTT < rtt || st.RTT > rtt+25*time.Millisecond {
					t.Errorf("RTT %v, want the link's %v plus at most 25 ms", st.RTT, rtt)
				}
				// Unknown fates are the price of lost acks: a few per cent of
				// the datagrams, not a way to hide losses.
				if e.Unknown > e.ReliableSent/5+5 {
					t.Errorf("%d of %d fates unknown", e.Unknown, e.ReliableSent)
				}
			})
		}
	}
}

// TestEstimatorFindsAcks: an ack finds its record by binary search over
// the ring, whose numbers rise in departure order — across the 24-bit wrap,
// past a reliable datagram numbered 0 (the region's out-of-band number,
// which is not recorded), and not for numbers never sent or already
// resolved.
func TestEstimatorFindsAcks(t *testing.T) {
	ctl, err := ratecalc.NewVirtualTCP(ratecalc.VirtualTCPConfig{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEstimator(ctl)
	t0 := time.Unix(1000, 0)
	seqs := []uint32{seqMask - 2, seqMask - 1, seqMask, 0, 1, 2, 3}
	for i, s := range seqs {
		e.sent(s, 600, true, false, t0.Add(time.Duration(i)*time.Millisecond))
	}
	at := t0.Add(100 * time.Millisecond)
	for _, s := range []uint32{2, seqMask - 1, 3, 7, seqMask - 1} {
		e.acked(s, at)
	}
	if e.stats.Acked != 3 || e.stats.StaleAcks != 2 {
		t.Errorf("acked %d, stale %d; want 3 found (2, %d, 3) and 2 stale (7 never sent, %d twice)", e.stats.Acked, e.stats.StaleAcks, seqMask-1, seqMask-1)
	}
	if e.stats.UnreliableSent != 1 {
		t.Errorf("sequence 0 counted as %d unreliable, want 1 (not recorded)", e.stats.UnreliableSent)
	}
}

// TestEstimatorExpire: an unacked reliable datagram is declared lost once
// it is max(1 s, 3 RTT + 200 ms) old, and not before; an acked one never.
func TestEstimatorExpire(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ctl, err := throttle.Config{}.NewController(throttle.TFRC)
	if err != nil {
		t.Fatal(err)
	}
	e := newEstimator(ctl)
	for seq := uint32(1); seq <= 4; seq++ {
		e.sent(seq, 500, true, false, t0.Add(time.Duration(seq)*10*time.Millisecond))
	}
	e.acked(2, t0.Add(50*time.Millisecond))
	for _, tc := range []struct {
		at   time.Duration
		lost uint64
	}{{999 * time.Millisecond, 0}, {1011 * time.Millisecond, 1}, {1041 * time.Millisecond, 3}, {5 * time.Second, 3}} {
		e.expire(t0.Add(tc.at))
		if e.stats.Lost != tc.lost || e.stats.Expired != tc.lost {
			t.Errorf("at %v: %d lost (%d expired), want %d", tc.at, e.stats.Lost, e.stats.Expired, tc.lost)
		}
	}
}

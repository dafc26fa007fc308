package throttle

import (
	"math"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle/circuit"
)

// TestTCPFairRate: the gauge is the TFRC equation at the circuit's
// measured loss event rate, ping RTT and mean simulator datagram size, and
// absent while any of them is unknown.
func TestTCPFairRate(t *testing.T) {
	rtt := func(ms float64) *float64 { return &ms }
	for _, tc := range []struct {
		name   string
		s      circuit.Summary
		wantOK bool
		size   float64
		rtt    time.Duration
		p      float64
	}{
		{"measured", circuit.Summary{RTTms: rtt(80), Down: circuit.DirSummary{Packets: 100, Bytes: 100_000, LossEventRate: 0.02}}, true, 1000, 80 * time.Millisecond, 0.02},
		{"small datagrams, short RTT", circuit.Summary{RTTms: rtt(12.5), Down: circuit.DirSummary{Packets: 400, Bytes: 48_000, LossEventRate: 0.001}}, true, 120, 12500 * time.Microsecond, 0.001},
		{"no RTT yet", circuit.Summary{Down: circuit.DirSummary{Packets: 100, Bytes: 100_000, LossEventRate: 0.02}}, false, 0, 0, 0},
		{"no loss yet", circuit.Summary{RTTms: rtt(80), Down: circuit.DirSummary{Packets: 100, Bytes: 100_000}}, false, 0, 0, 0},
		{"nothing received", circuit.Summary{RTTms: rtt(80), Down: circuit.DirSummary{LossEventRate: 0.02}}, false, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := TCPFairRate(tc.s, SegmentMean)
			if ok != tc.wantOK {
				t.Fatalf("known %v, want %v", ok, tc.wantOK)
			}
			if !ok {
				return
			}
			if want := ratecalc.TFRCRate(tc.size, tc.rtt, tc.p); math.Abs(float64(got-want)) > 1e-6*float64(want) {
				t.Errorf("%v B/s, want %v", got, want)
			}
			// With control.segment = "nominal" the gauge stands on 1460 B,
			// as the controllers do.
			nominal, _ := TCPFairRate(tc.s, SegmentNominal)
			if want := ratecalc.TFRCRate(ratecalc.NominalSegmentSize, tc.rtt, tc.p); math.Abs(float64(nominal-want)) > 1e-6*float64(want) {
				t.Errorf("nominal: %v B/s, want %v", nominal, want)
			}
		})
	}
}

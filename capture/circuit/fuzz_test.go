package circuit

import (
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/lludp"
)

// FuzzObserve: any sequence of datagrams between a viewer and a simulator
// is measured without a panic, and the counters stay consistent.
func FuzzObserve(f *testing.F) {
	for _, m := range []lludp.Typed{
		&lludp.StartPingCheck{PingID: 1}, &lludp.CompletePingCheck{PingID: 1}, &lludp.PacketAck{IDs: []uint32{1, 2}},
		&lludp.UseCircuitCode{Code: 1}, &lludp.AgentThrottle{}, &lludp.LayerData{Type: lludp.LayerWind, Data: []byte{1}},
	} {
		b, _ := lludp.AppendMessage(nil, lludp.Header{Flags: lludp.FlagReliable, Sequence: 5}, m, []uint32{3})
		f.Add(b, uint8(0))
	}
	f.Fuzz(func(t *testing.T, payload []byte, seqs uint8) {
		tr := NewTracker(Config{})
		at := time.Unix(0, 0)
		for i := range int(seqs%16) + 1 {
			b := append([]byte(nil), payload...)
			if len(b) >= 5 { // vary the sequence number and direction
				b[4] += byte(i * 7)
			}
			src, dst := sim, viewer
			if i%3 == 0 {
				src, dst = viewer, sim
			}
			tr.Observe(capture.Datagram{At: at.Add(time.Duration(i) * time.Millisecond), Src: src, Dst: dst, Payload: b})
		}
		for _, c := range tr.Circuits() {
			for _, d := range []Direction{Down, Up} {
				s := c.Stats(d)
				if s.LossEventRate < 0 || s.LossEventRate > 1 || s.Lost > 1<<32 {
					t.Fatalf("%v: %+v", d, s)
				}
			}
		}
	})
}

package ratecalc

import (
	"testing"
	"time"
)

// BenchmarkUpdate is one controller update: a received packet, with a loss
// every 50 packets and a decision every 500, as a 5 s interval at a
// hundred packets per second has.
func BenchmarkUpdate(b *testing.B) {
	t0 := time.Unix(0, 0)
	for name, c := range map[string]Controller{
		"TFRC":       mustTFRC(b, TFRCConfig{}),
		"Window":     mustWindow(b, WindowConfig{}),
		"VirtualTCP": mustVirtualTCP(b, VirtualTCPConfig{}),
		"Viewer":     func() Controller { v, _ := NewViewer(ViewerConfig{}); return v }(),
	} {
		b.Run(name, func(b *testing.B) {
			c.OnRTT(100*time.Millisecond, t0)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				at := t0.Add(time.Duration(i) * 10 * time.Millisecond)
				c.OnPacket(Packet{At: at, Size: 1200, Lost: i%50 == 49})
				if i%500 == 499 {
					c.Rate(at)
				}
				i++
			}
		})
	}
}

func BenchmarkTFRCRate(b *testing.B) {
	for b.Loop() {
		TFRCRate(1460, 100*time.Millisecond, 0.03)
	}
}

package capture_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/capture/capturetest"
	"github.com/gopacket/gopacket/pcapgo"
)

var realRepeated = sync.OnceValues(func() ([]byte, error) {
	in, err := os.ReadFile(filepath.Join("..", "..", "shared", "testdata", "real", "opensim-0922-captures", "testclient-2x-10min.pcap"))
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	// Ten copies: 240,000 datagrams, enough to reach the steady state.
	_, err = capturetest.Repeat(&out, bytes.NewReader(in), 10*24153)
	return out.Bytes(), err
})

// realCapture is the real OpenSim capture repeated as one session; the
// benchmark skips without the real test material.
func realCapture(b *testing.B) []byte {
	data, err := realRepeated()
	if err != nil {
		b.Skipf("real capture not available: %v", err)
	}
	return data
}

// BenchmarkReadReal reads the real repeated capture: capture's reader, and
// gopacket's pcapgo (which it replaced) as the baseline of the same run.
func BenchmarkReadReal(b *testing.B) {
	data := realCapture(b)
	b.Run("capture", func(b *testing.B) {
		var n int
		for b.Loop() {
			r, err := capture.NewReader(bytes.NewReader(data), capture.SimPorts)
			if err != nil {
				b.Fatal(err)
			}
			for n = 0; ; n++ {
				if _, err := r.Next(); err != nil {
					if !errors.Is(err, io.EOF) {
						b.Fatal(err)
					}
					break
				}
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mdatagrams/s")
	})
	b.Run("pcapgo", func(b *testing.B) {
		var n int
		for b.Loop() {
			r, err := pcapgo.NewReader(bytes.NewReader(data))
			if err != nil {
				b.Fatal(err)
			}
			for n = 0; ; n++ {
				if _, _, err := r.ZeroCopyReadPacketData(); err != nil {
					break
				}
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mframes/s")
	})
}

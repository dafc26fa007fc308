package throttle

import (
	"errors"
	"io"
	"os"
	"testing"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/lludp"
)

// realCapture is ten minutes of a real OpenSim 0.9.2.2 region serving two
// real clients, in ../shared beside the repository.
const realCapture = "../../shared/testdata/real/opensim-0922-captures/testclient-2x-10min.pcap"

// BenchmarkLoopObserveReal is the loop's per-datagram path (the tracker,
// the logout check, the viewer's override) on the real capture's
// datagrams, round and round: ns/op is per datagram.
func BenchmarkLoopObserveReal(b *testing.B) {
	if _, err := os.Stat(realCapture); err != nil {
		b.Skipf("real capture not found at %s (it lives in ../shared beside the repository): %v", realCapture, err)
	}
	r, err := capture.OpenFile(realCapture, nil)
	if err != nil {
		b.Fatal(err)
	}
	var ds []lludp.Datagram
	for {
		d, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		d.Payload = append([]byte(nil), d.Payload...) // the reader lends it
		ds = append(ds, d)
	}
	r.Close()
	l, err := New(Config{SimPorts: lludp.SimPorts}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		l.Observe(ds[i])
		if i++; i == len(ds) {
			i = 0
		}
	}
}

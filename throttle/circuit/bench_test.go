package circuit

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/capture/capturetest"
	"github.com/fairgrid/fairgrid/ratecalc"
)

func syntheticCapture(b testing.TB, n, circuits int) []byte {
	b.Helper()
	ds, err := capturetest.Session{Circuits: circuits, Datagrams: n, Loss: 0.01, Seed: 1}.Generate()
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	if err := capturetest.Write(&buf, capturetest.Pcap, ds); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkReadAndTrack reads a capture from memory and tracks every
// circuit: ns/op is per datagram.
func BenchmarkReadAndTrack(b *testing.B) {
	data := syntheticCapture(b, 200_000, 10)
	b.SetBytes(int64(len(data)) / 200_000)
	b.ReportAllocs()
	var r *capture.Reader
	tr := NewTracker(Config{})
	for b.Loop() {
		if r == nil {
			var err error
			if r, err = capture.NewReader(bytes.NewReader(data), nil); err != nil {
				b.Fatal(err)
			}
		}
		d, err := r.Next()
		if errors.Is(err, io.EOF) {
			r, tr = nil, NewTracker(Config{}) // a replay would only see duplicates
			continue
		}
		if err != nil {
			b.Fatal(err)
		}
		tr.Observe(d)
	}
}

// benchDatagrams is ten circuits' 100,000 datagrams, 1 % lost, in memory.
func benchDatagrams(b *testing.B) []capture.Datagram {
	b.Helper()
	ds, err := capturetest.Session{Circuits: 10, Datagrams: 100_000, Loss: 0.01, Seed: 2}.Generate()
	if err != nil {
		b.Fatal(err)
	}
	cds := make([]capture.Datagram, len(ds))
	for i, d := range ds {
		cds[i] = capture.Datagram{At: d.At, Src: d.Src, Dst: d.Dst, Payload: d.Payload}
	}
	return cds
}

// BenchmarkObserve is the tracker alone, on datagrams already in memory.
func BenchmarkObserve(b *testing.B) {
	cds := benchDatagrams(b)
	tr := NewTracker(Config{})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		tr.Observe(cds[i])
		if i++; i == len(cds) {
			i, tr = 0, NewTracker(Config{}) // a replay would only see duplicates
		}
	}
}

// benchControllers are the controllers the tracker's benchmarks feed: the
// default, vtcp, beside window tracking and TFRC.
var benchControllers = []struct {
	name string
	make func() ratecalc.Controller
}{
	{"vtcp", func() ratecalc.Controller { c, _ := ratecalc.NewVirtualTCP(ratecalc.VirtualTCPConfig{}); return c }},
	{"window", func() ratecalc.Controller { c, _ := ratecalc.NewWindow(ratecalc.WindowConfig{}); return c }},
	{"tfrc", func() ratecalc.Controller { c, _ := ratecalc.NewTFRC(ratecalc.TFRCConfig{}); return c }},
}

// BenchmarkObserveController is BenchmarkObserve with each circuit's
// controller fed, as the sidecar's tracker feeds it (a decision costs
// nothing here: Rate is the loop's, every few seconds): the default,
// vtcp, beside window tracking and TFRC, per datagram.
func BenchmarkObserveController(b *testing.B) {
	cds := benchDatagrams(b)
	for _, tc := range benchControllers {
		b.Run(tc.name, func(b *testing.B) {
			cfg := Config{NewController: func(Key) ratecalc.Controller { return tc.make() }}
			tr := NewTracker(cfg)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				tr.Observe(cds[i])
				if i++; i == len(cds) {
					i, tr = 0, NewTracker(cfg)
				}
			}
		})
	}
}

// TestObserveAllocs: once its circuits exist, the tracker allocates
// nothing per datagram.
func TestObserveAllocs(t *testing.T) {
	ds, err := capturetest.Session{Circuits: 3, Datagrams: 5000, Loss: 0.02, Seed: 3}.Generate()
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTracker(Config{})
	cds := make([]capture.Datagram, len(ds))
	for i, d := range ds {
		cds[i] = capture.Datagram{At: d.At, Src: d.Src, Dst: d.Dst, Payload: d.Payload}
		tr.Observe(cds[i]) // create the circuits, grow the buffers
	}
	i := 0
	if n := testing.AllocsPerRun(len(cds), func() {
		tr.Observe(cds[i])
		i = (i + 1) % len(cds)
	}); n != 0 {
		t.Errorf("%v allocations per datagram, want 0", n)
	}
}

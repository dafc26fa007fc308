package audit

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/capture/capturetest"
	"github.com/fairgrid/fairgrid/throttle/circuit"
)

var (
	benchOnce sync.Once
	benchPath string
	benchErr  error
)

// benchCapture is the real capture repeated to 2 M LLUDP datagrams
// (capturetest.Repeat), written once per run; FAIRGRID_AUDIT_BENCH_FILE
// names an existing one instead.
func benchCapture(b *testing.B) string {
	b.Helper()
	if p := os.Getenv("FAIRGRID_AUDIT_BENCH_FILE"); p != "" {
		return p
	}
	real := realCapture(b)
	benchOnce.Do(func() {
		dir, err := os.MkdirTemp("", "audit-bench")
		if err != nil {
			benchErr = err
			return
		}
		benchPath = filepath.Join(dir, "repeated.pcap")
		in, err := os.Open(real)
		if err != nil {
			benchErr = err
			return
		}
		defer in.Close()
		out, err := os.Create(benchPath)
		if err != nil {
			benchErr = err
			return
		}
		w := bufio.NewWriterSize(out, 1<<20)
		if _, err := capturetest.Repeat(w, in, 2_000_000); err != nil {
			benchErr = err
		}
		if err := w.Flush(); benchErr == nil {
			benchErr = err
		}
		if err := out.Close(); benchErr == nil {
			benchErr = err
		}
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchPath
}

// BenchmarkAudit audits the 2 M-datagram capture, and beside it, in the
// same run, the two baselines it builds on: the capture reader alone and
// the reader with the circuit tracker (decode --summary's work). Compare
// the datagrams/s of the three: absolute numbers on a shared machine are
// noise.
func BenchmarkAudit(b *testing.B) {
	path := benchCapture(b)
	for _, bc := range []struct {
		name string
		run  func(r *capture.Reader) int
	}{
		{"read", func(r *capture.Reader) int {
			n := 0
			for {
				if _, err := r.Next(); err != nil {
					if !errors.Is(err, io.EOF) {
						b.Fatal(err)
					}
					return n
				}
				n++
			}
		}},
		{"tracker", func(r *capture.Reader) int {
			t := circuit.NewTracker(circuit.Config{SimPorts: capture.SimPorts})
			n := 0
			for {
				d, err := r.Next()
				if err != nil {
					return n
				}
				t.Observe(d)
				n++
			}
		}},
		{"audit", func(r *capture.Reader) int {
			a, err := New(Config{Ports: capture.SimPorts})
			if err != nil {
				b.Fatal(err)
			}
			a.Read([]Input{{Name: "bench", Reader: r}}, nil)
			rep := a.Report()
			return int(rep.Files[0].Datagrams)
		}},
		{"audit-series", func(r *capture.Reader) int {
			a, err := New(Config{Ports: capture.SimPorts, Series: true})
			if err != nil {
				b.Fatal(err)
			}
			a.Read([]Input{{Name: "bench", Reader: r}}, nil)
			rep := a.Report()
			return int(rep.Files[0].Datagrams)
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var datagrams int
			for b.Loop() {
				r, err := capture.OpenFile(path, capture.SimPorts)
				if err != nil {
					b.Fatal(err)
				}
				datagrams += bc.run(r)
				r.Close()
			}
			b.ReportMetric(float64(datagrams)/b.Elapsed().Seconds(), "datagrams/s")
		})
	}
}

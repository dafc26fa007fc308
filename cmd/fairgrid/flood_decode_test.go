//go:build unix

package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/capture/capturetest"
)

// floodDecodeMaxRSS is what `fairgrid decode --summary` may take on a
// flood of one-datagram circuits: the Go runtime and the reader (about
// 15 MiB on the real capture alone), the candidate table (about 6 MiB),
// and room for the garbage collector's headroom (GOGC=100 lets the heap
// grow to twice the live data). Before candidates, 100,000 such circuits
// took 460 MB.
const floodDecodeMaxRSS = 64 << 20

// TestDecodeFloodCapture runs the built binary on a capture of the real
// OpenSim session with a spoofed-source flood of 100,000 one-datagram
// circuits in its first second: its peak RSS stays bounded, stderr says how
// many endpoints were folded, and the real circuits are reported exactly as
// from the real capture alone.
func TestDecodeFloodCapture(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: a long end-to-end run in real time")
	}
	if runtime.GOOS != "linux" {
		t.Skip("peak RSS is read from Linux's rusage")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go tool is needed to build the binary: %v", err)
	}
	realPath, _ := filepath.Abs("../../../shared/testdata/real/opensim-0922-captures/testclient-2x-10min.pcap")
	if _, err := os.Stat(realPath); err != nil {
		t.Skipf("real capture not found at %s (it lives in ../shared beside the repository): %v", realPath, err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "fairgrid")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	realDatagrams := readDatagrams(t, realPath)
	for _, tc := range []struct {
		name   string
		flood  capturetest.Flood
		folded string
	}{
		{"one datagram each", capturetest.Flood{Sources: 100_000, Seed: 1}, "; 100000 endpoints folded (100000 datagrams too few to make a circuit)"},
		{"two datagrams each", capturetest.Flood{Sources: 100_000, PerSource: 2, Seed: 2}, "; 100000 endpoints folded (200000 datagrams too few to make a circuit)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "flood.pcap")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			tc.flood.Start = realDatagrams[0].At
			if err := tc.flood.WritePcap(f, realDatagrams); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			want, _, _ := runBinary(t, bin, "decode", "--summary", "--format", "json", realPath)
			got, stderr, rss := runBinary(t, bin, "decode", "--summary", "--format", "json", path)
			t.Logf("peak RSS %d KiB; %s", rss>>10, strings.TrimSpace(stderr))
			if rss > floodDecodeMaxRSS {
				t.Errorf("peak RSS %d MiB, want at most %d MiB", rss>>20, floodDecodeMaxRSS>>20)
			}
			if !strings.Contains(stderr, ", 2 circuits"+tc.folded) {
				t.Errorf("stderr does not report 2 circuits and the folded endpoints (%q):\n%s", tc.folded, stderr)
			}
			if got != want || strings.Count(got, "\n") != 2 {
				t.Errorf("the real circuits beside the flood:\n%s\nalone:\n%s", got, want)
			}
		})
	}
}

// runBinary runs the binary and returns its standard output and error and
// its peak RSS in bytes; it fails the test unless the exit code is 0.
func runBinary(t *testing.T, bin string, args ...string) (stdout, stderr string, peakRSS int64) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd, peak := measuredCommand(t, bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), errOut.String(), peak()
}

// readDatagrams reads every UDP datagram of a capture file.
func readDatagrams(t *testing.T, path string) []capturetest.Datagram {
	t.Helper()
	r, err := capture.OpenFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var ds []capturetest.Datagram
	for {
		d, err := r.Next()
		if errors.Is(err, io.EOF) {
			return ds
		}
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, capturetest.Datagram{At: d.At, Src: d.Src, Dst: d.Dst, Payload: append([]byte(nil), d.Payload...)})
	}
}

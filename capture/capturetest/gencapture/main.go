// Command gencapture writes a synthetic viewer capture for benchmarks
// (make bench-capture): ten circuits of mixed simulator traffic with 1 %
// loss and spurious resends, and the viewers' own traffic.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"

	"github.com/fairgrid/fairgrid/capture/capturetest"
)

func main() {
	n := flag.Int("n", 1_000_000, "datagrams")
	out := flag.String("o", "bench.pcap", "output file")
	flag.Parse()
	if err := run(*n, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gencapture:", err)
		os.Exit(1)
	}
}

func run(n int, path string) error {
	ds, err := capturetest.Session{Circuits: 10, Datagrams: n, Loss: 0.01, Seed: 1}.Generate()
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := capturetest.Write(w, capturetest.Pcap, ds); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Command gencapture writes captures for benchmarks (make bench-capture).
// By default it writes a synthetic one: ten circuits of mixed simulator
// traffic with 1 % loss and spurious resends, and the viewers' own traffic.
// With -real it repeats a real pcap capture as one long session instead,
// its LLUDP numbers continued from copy to copy (capturetest.Repeat).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"

	"github.com/fairgrid/fairgrid/capture/capturetest"
)

func main() {
	n := flag.Int("n", 1_000_000, "datagrams (with -real: at least this many LLUDP datagrams, in whole copies)")
	out := flag.String("o", "bench.pcap", "output file")
	real := flag.String("real", "", "a real pcap capture to repeat instead of the synthetic traffic")
	flag.Parse()
	if flag.NArg() > 0 || *n <= 0 {
		fmt.Fprintln(os.Stderr, "usage: gencapture [-n datagrams] [-o file] [-real capture.pcap]")
		os.Exit(2)
	}
	if err := run(*n, *out, *real); err != nil {
		fmt.Fprintln(os.Stderr, "gencapture:", err)
		os.Exit(1)
	}
}

func run(n int, path, real string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if real != "" {
		err = repeat(w, real, n)
	} else {
		err = synthetic(w, n)
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func synthetic(w *bufio.Writer, n int) error {
	ds, err := capturetest.Session{Circuits: 10, Datagrams: n, Loss: 0.01, Seed: 1}.Generate()
	if err != nil {
		return err
	}
	return capturetest.Write(w, capturetest.Pcap, ds)
}

func repeat(w *bufio.Writer, real string, n int) error {
	in, err := os.Open(real)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := capturetest.Repeat(w, bufio.NewReaderSize(in, 1<<20), uint64(n))
	if err != nil {
		return fmt.Errorf("%s: %w", real, err)
	}
	fmt.Fprintf(os.Stderr, "gencapture: %s written %d times: %d frames, %d LLUDP datagrams\n", real, st.Copies, st.Frames, st.Datagrams)
	return nil
}

package circuit

import (
	"encoding/json"
	"runtime"
	"testing"
	"unsafe"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/capture/capturetest"
)

// candidateEntryBytes bounds what one candidate retains: the Circuit
// without its measures (344 bytes, allocated in a size class at most 1/8
// larger), its map entry (a 64-byte key and a pointer) in up to four slots
// — the map grows at 7/8 load to twice the slots, and the tombstones of
// folded candidates can double it again before they are pruned — and its
// ring slot. TestCandidateMemory measures about 680 bytes at the default
// table size; the estimate is 700.
func candidateEntryBytes() int64 {
	slot := int64(unsafe.Sizeof(Key{}) + unsafe.Sizeof(&Circuit{}))
	return int64(unsafe.Sizeof(Circuit{}))*9/8 + 4*slot + 8
}

// TestCandidateMemory: 100,000 spoofed sources that send one datagram each
// (or two, or random bytes) leave a bounded candidate table behind — a
// full circuit each would be 350 MB — while the real capture's two circuits,
// interleaved with the flood, are measured exactly as without it.
func TestCandidateMemory(t *testing.T) {
	rp := readReplay(t, realCapture(t))
	alone := NewTracker(Config{})
	for _, d := range rp.ds {
		alone.Observe(d)
	}
	want := summaries(t, alone)
	entry := candidateEntryBytes()
	// The table, the real circuits (a few KiB each) and 1 MiB of slack for
	// the runtime's own growth.
	bound := DefaultMaxCandidates*entry + 1<<20
	t.Logf("a candidate retains at most about %d bytes; bound %d bytes for %d candidates (a circuit: %d bytes more)",
		entry, bound, DefaultMaxCandidates, unsafe.Sizeof(measures{}))
	for _, tc := range []struct {
		name  string
		flood capturetest.Flood
	}{
		{"one datagram each", capturetest.Flood{Sources: 100_000, Seed: 1}},
		{"two datagrams each", capturetest.Flood{Sources: 100_000, PerSource: 2, Seed: 2}},
		{"random garbage", capturetest.Flood{Sources: 100_000, Garbage: true, Seed: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			tr := NewTracker(Config{})
			real, n := rp.ds, 0
			var sources, sent int // that made a candidate, and its datagrams held
			var last capturetest.Datagram
			tc.flood.Each(func(d capturetest.Datagram) error {
				c, _, err := tr.Observe(capture.Datagram{At: d.At, Src: d.Src, Dst: d.Dst, Payload: d.Payload})
				if c != nil && d.Src != last.Src {
					sources++
				}
				if err == nil {
					sent++
				}
				last = d
				if n++; n%4 == 0 && len(real) > 0 {
					tr.Observe(real[0])
					real = real[1:]
				}
				return nil
			})
			for _, d := range real {
				tr.Observe(d)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			retained := int64(after.HeapAlloc) - int64(before.HeapAlloc)
			endpoints, held := tr.Candidates()
			t.Logf("retained %d bytes; %d endpoints folded, %d waiting", retained, tr.Folded(), endpoints)
			if retained > bound {
				t.Errorf("the tracker retains %d bytes after the flood, want at most %d", retained, bound)
			}
			if endpoints > DefaultMaxCandidates || tr.Folded()+uint64(endpoints) != uint64(sources) ||
				tr.FoldedDatagrams()+held != uint64(sent) {
				t.Errorf("%d folded and %d waiting (%d and %d datagrams) of %d sources that sent %d LLUDP datagrams",
					tr.Folded(), endpoints, tr.FoldedDatagrams(), held, sources, sent)
			}
			if tc.flood.Garbage && sources < 1000 {
				t.Errorf("only %d garbage sources looked like LLUDP: the variant tests nothing", sources)
			}
			if got := summaries(t, tr); got != want {
				t.Errorf("the real circuits beside the flood:\n%s\nalone:\n%s", got, want)
			}
			runtime.KeepAlive(tr)
		})
	}
}

// summaries is every circuit's Summary as JSON lines.
func summaries(t *testing.T, tr *Tracker) string {
	t.Helper()
	var out []byte
	for _, c := range tr.Circuits() {
		b, err := json.Marshal(c.Summary())
		if err != nil {
			t.Fatal(err)
		}
		out = append(append(out, b...), '\n')
	}
	return string(out)
}

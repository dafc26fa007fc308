package circuit

import (
	"slices"
	"testing"
	"time"
)

type lossLog []uint32

func (l *lossLog) lost(seq uint32, _ int64) { *l = append(*l, seq) }

type arrivalIn struct {
	seq    uint32
	resent bool
}

func orig(seqs ...uint32) []arrivalIn {
	var out []arrivalIn
	for _, s := range seqs {
		out = append(out, arrivalIn{seq: s})
	}
	return out
}

// TestSeqScenarios: protocol.md §12.3, and the warts of real traffic.
func TestSeqScenarios(t *testing.T) {
	resent := func(s uint32) arrivalIn { return arrivalIn{s, true} }
	for _, tc := range []struct {
		name     string
		in       []arrivalIn
		lost     []uint32
		kinds    map[arrival]int
		pendings int
	}{
		{"gap declared after three later", orig(10, 11, 13, 14, 15), []uint32{12}, nil, 0},
		{"gap not yet declared after two", orig(10, 11, 13, 14), nil, nil, 1},
		{"reordering within the window", orig(10, 11, 13, 12, 14), nil, map[arrival]int{arrivalReordered: 1}, 0},
		{"resend after the loss was declared", append(orig(10, 11, 13, 14, 15), resent(12)), []uint32{12}, map[arrival]int{arrivalResendLate: 1}, 0},
		{"resend filling a pending gap", append(orig(10, 11, 13), resent(12)), []uint32{12}, map[arrival]int{arrivalResendFill: 1}, 0},
		{"spurious resend", append(orig(10, 11, 12), resent(12)), nil, map[arrival]int{arrivalSpurious: 1}, 0},
		{"duplicate original", orig(10, 11, 12, 12), nil, map[arrival]int{arrivalDuplicate: 1}, 0},
		{"burst of 28", orig(10, 11, 40, 41, 42), seqRange(12, 39), nil, 0},
		{"late original after declared lost", orig(10, 11, 13, 14, 15, 12), []uint32{12}, map[arrival]int{arrivalReordered: 1}, 0},
		{"24-bit wrap", orig(0xFFFFFE, 0xFFFFFF, 0, 1), nil, nil, 0},
		{"24-bit wrap with a loss", orig(0xFFFFFE, 0xFFFFFF, 1, 2, 3), []uint32{0}, nil, 0},
		{"32-bit wrap", orig(0xFFFFFFFE, 0xFFFFFFFF, 0, 1), nil, nil, 0},
		{"32-bit peer past 2^24", orig(0xFFFFFF, 0x1000000, 0x1000002, 0x1000003, 0x1000004), []uint32{0x1000001}, nil, 0},
		{"resend ahead of everything", append(orig(10, 11), resent(12)), []uint32{12}, map[arrival]int{arrivalResendFill: 1}, 0},
		{"a jump is a restart, not 10000 losses", orig(10, 11, 10011, 10012), nil, map[arrival]int{arrivalResync: 1}, 0},
		{"too old to judge", orig(3000, 3001, 1000), nil, map[arrival]int{arrivalDuplicate: 1}, 0},
		{"reordered inside a run splits it", orig(10, 15, 12, 16, 17), []uint32{11, 13, 14}, map[arrival]int{arrivalReordered: 1}, 0},
		// A run across a 24-bit wrap, then a number only a 32-bit peer
		// sends, far behind (so no resync): the run must be dropped, not
		// walked through 2^32 numbers when 3, 4 and 5 declare it.
		{"24-bit run, then a 32-bit number", orig(0xFFFFFE, 2, 0x90000000, 3, 4, 5), nil, map[arrival]int{arrivalDuplicate: 1}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s seqTracker
			var lost lossLog
			kinds := map[arrival]int{}
			for i, a := range tc.in {
				kinds[s.observe(a.seq, a.resent, int64(i)*int64(time.Millisecond), &lost)]++
			}
			if !slices.Equal(lost, tc.lost) {
				t.Errorf("lost %v, want %v", lost, tc.lost)
			}
			for k, n := range tc.kinds {
				if kinds[k] != n {
					t.Errorf("%d arrivals of kind %d, want %d (%v)", kinds[k], k, n, kinds)
				}
			}
			if s.npend != tc.pendings {
				t.Errorf("%d runs pending, want %d", s.npend, tc.pendings)
			}
		})
	}
}

// TestSeqLossTimes: lost numbers are timed between their neighbours.
func TestSeqLossTimes(t *testing.T) {
	var s seqTracker
	var times []int64
	rec := recorderFunc(func(_ uint32, at int64) { times = append(times, at) })
	for _, a := range []struct {
		seq uint32
		at  int64
	}{{10, 1000}, {14, 5000}, {15, 6000}, {16, 7000}} {
		s.observe(a.seq, false, a.at, rec)
	}
	if len(times) != 3 || times[0] != 2000 || times[1] != 3000 || times[2] != 4000 {
		t.Errorf("loss times %v, want 2000 3000 4000", times)
	}
}

type recorderFunc func(uint32, int64)

func (f recorderFunc) lost(seq uint32, at int64) { f(seq, at) }

// TestSeqPendingOverflow: more gaps than the table holds are declared,
// never forgotten.
func TestSeqPendingOverflow(t *testing.T) {
	var s seqTracker
	var lost lossLog
	seq := uint32(1)
	for range 2 * maxPendingRuns {
		s.observe(seq, false, 0, &lost)
		seq += 2 // every other number missing
	}
	for range ndupack {
		s.observe(seq, false, 0, &lost)
		seq++
	}
	if want := 2 * maxPendingRuns; len(lost) != want {
		t.Errorf("%d lost, want %d", len(lost), want)
	}
}

func seqRange(from, to uint32) []uint32 {
	var out []uint32
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

package gateway

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/fairgrid/fairgrid/lludp"
)

// mapRenumber is renumber as it was, with a map each way: the contract
// renumber keeps (TestRenumberModel).
type mapRenumber struct {
	next     uint32            // the latest number given
	toViewer map[uint32]uint32 // the region's number → the viewer's
	toRegion map[uint32]uint32 // the viewer's number → the region's
	order    []uint32          // the viewer's numbers kept, oldest first
	head     int
}

func newMapRenumber() mapRenumber {
	return mapRenumber{toViewer: map[uint32]uint32{}, toRegion: map[uint32]uint32{}}
}

func (r *mapRenumber) reset() { *r = newMapRenumber() }

// departure rewrites b's sequence number, the region's, with the one the
// viewer sees, and returns it.
func (r *mapRenumber) departure(b []byte, h lludp.Header) uint32 {
	if h.Sequence == 0 {
		return 0
	}
	if h.Flags.Resent() {
		if vs, ok := r.toViewer[h.Sequence]; ok {
			binary.BigEndian.PutUint32(b[1:5], vs)
			return vs
		}
		// The original never left (dropped at a full queue) or is
		// forgotten: a new number, as a first sending.
	}
	r.next = (r.next + 1) & seqMask
	if r.next == 0 {
		r.next = 1
	}
	vs := r.next
	if h.Flags.Reliable() {
		r.keep(h.Sequence, vs)
	}
	binary.BigEndian.PutUint32(b[1:5], vs)
	return vs
}

func (r *mapRenumber) keep(region, viewer uint32) {
	if old, ok := r.toViewer[region]; ok {
		delete(r.toRegion, old)
	}
	r.toViewer[region], r.toRegion[viewer] = viewer, region
	r.order = append(r.order, viewer)
	if len(r.order)-r.head > maxRing {
		gone := r.order[r.head]
		r.head++
		if reg, ok := r.toRegion[gone]; ok {
			delete(r.toRegion, gone)
			if r.toViewer[reg] == gone {
				delete(r.toViewer, reg)
			}
		}
		if r.head > maxRing {
			r.order = append(r.order[:0], r.order[r.head:]...)
			r.head = 0
		}
	}
}

// region is the region's number for the viewer's, or 0 when it is not
// known (OpenSim finds no reliable datagram 0 to ack).
func (r *mapRenumber) region(viewer uint32) uint32 { return r.toRegion[viewer] }

// oldest is the viewer's number of the oldest reliable datagram kept, or
// the next to be given when none is: StartPingCheck's OldestUnacked.
func (r *mapRenumber) oldest(region uint32) uint32 {
	if vs, ok := r.toViewer[region]; ok {
		return vs
	}
	for _, vs := range r.order[r.head:] {
		if _, ok := r.toRegion[vs]; ok {
			return vs
		}
	}
	return (r.next + 1) & seqMask
}

// TestRenumberModel drives renumber and the map-based model with the same
// region datagrams and compares every answer: departures in an order the
// scheduler could give (mostly the region's, some held back and sent
// late), reliable ones from a tenth to nearly all, numbers skipped (dropped
// at a full queue), resends of recent and of long-gone numbers, a recent
// number sent again unflagged (its pair replaced), a region restart, and
// the 24-bit wrap of the viewer's numbers.
func TestRenumberModel(t *testing.T) {
	for _, tc := range []struct {
		seed     uint64
		reliable int // per cent
		drops    int // per cent of numbers skipped
	}{{1, 10, 0}, {2, 50, 30}, {3, 95, 5}, {4, 80, 60}} {
		rng := rand.New(rand.NewPCG(tc.seed, 0))
		start := uint32(seqMask - 3000)
		r := renumber{next: start}
		m := newMapRenumber()
		m.next = start
		regionSeq := uint32(1)
		var late []uint32 // region numbers held back in the scheduler
		b := make([]byte, 8)
		for step := range 40000 {
			if step == 20000 { // a restart: both start again
				r.reset()
				m.reset()
				regionSeq, late = 1, nil
			}
			var rs uint32
			var flags lludp.Flags
			switch x := rng.IntN(100); {
			case x < 6 && regionSeq > 60: // a resend of a recent one
				rs = regionSeq - uint32(rng.IntN(60))
				flags = lludp.FlagReliable | lludp.FlagResent
			case x < 7 && regionSeq > 20000: // a resend of a long-gone one
				rs = regionSeq - 10000 - uint32(rng.IntN(5000))
				flags = lludp.FlagReliable | lludp.FlagResent
			case x < 8 && regionSeq > 60: // a recent number again, not flagged a resend
				rs = regionSeq - uint32(rng.IntN(60))
				flags = lludp.FlagReliable
			case x < 10 && len(late) > 0: // a held-back datagram leaves
				i := rng.IntN(len(late))
				rs = late[i]
				late = append(late[:i], late[i+1:]...)
				flags = lludp.FlagReliable
			default:
				for rng.IntN(100) < tc.drops {
					regionSeq++ // dropped at a full queue: never leaves
				}
				regionSeq++
				rs = regionSeq
				if rng.IntN(100) < tc.reliable {
					flags = lludp.FlagReliable
				}
				if flags.Reliable() && rng.IntN(100) < 3 && len(late) < 50 {
					late = append(late, rs) // held back: leaves later
					continue
				}
			}
			got := r.departure(b, lludp.Header{Sequence: rs, Flags: flags})
			gotB := binary.BigEndian.Uint32(b[1:5])
			want := m.departure(b, lludp.Header{Sequence: rs, Flags: flags})
			if got != want || gotB != want {
				t.Fatalf("case %+v step %d: region %d (%v) numbered %d (written %d), want %d", tc, step, rs, flags, got, gotB, want)
			}
			for _, vs := range []uint32{want, want - 1, want - uint32(rng.IntN(20000)), want - maxRing, want + 1} {
				vs &= seqMask
				if g, w := r.region(vs), m.region(vs); g != w {
					t.Fatalf("case %+v step %d: region(%d) = %d, want %d", tc, step, vs, g, w)
				}
			}
			for _, probe := range []uint32{rs, regionSeq - uint32(rng.IntN(20000))} {
				if g, w := r.viewer(probe), m.toViewer[probe]; g != w {
					t.Fatalf("case %+v step %d: viewer(%d) = %d, want %d", tc, step, probe, g, w)
				}
			}
			if step%37 == 0 {
				probe := regionSeq - uint32(rng.IntN(20000))
				if g, w := r.oldest(probe), m.oldest(probe); g != w {
					t.Fatalf("case %+v step %d: oldest(%d) = %d, want %d", tc, step, probe, g, w)
				}
			}
		}
	}
}

package gateway

import (
	"math/rand/v2"
	"testing"

	"github.com/fairgrid/fairgrid/lludp"
)

// renumberModel is renumber's contract with maps: a reliable datagram's
// pair is kept while its viewer number is among the last maxRing given,
// until the region's number gets another viewer number, or a newer kept
// pair's region number lands on its slot (region numbers maxRing apart).
type renumberModel struct {
	next     uint32
	v2r, r2v map[uint32]uint32
	residue  map[uint32]uint32 // region number mod maxRing → the latest kept there
}

func (m *renumberModel) kept(vs uint32) bool { return vs != 0 && (m.next-vs)&seqMask < maxRing }

func (m *renumberModel) region(vs uint32) uint32 {
	if rs, ok := m.v2r[vs]; ok && m.kept(vs) && m.r2v[rs] == vs {
		return rs
	}
	return 0
}

func (m *renumberModel) viewer(rs uint32) uint32 {
	if vs, ok := m.r2v[rs]; ok && m.kept(vs) && m.v2r[vs] == rs {
		return vs
	}
	return 0
}

func (m *renumberModel) departure(rs uint32, flags lludp.Flags) uint32 {
	if rs == 0 {
		return 0
	}
	if flags.Resent() {
		if vs := m.viewer(rs); vs != 0 {
			return vs
		}
	}
	m.next = (m.next + 1) & seqMask
	if m.next == 0 {
		m.next = 1
	}
	vs := m.next
	delete(m.v2r, vs)
	if flags.Reliable() {
		if other, ok := m.residue[rs%maxRing]; ok && other != rs {
			delete(m.r2v, other)
		}
		m.residue[rs%maxRing] = rs
		m.v2r[vs], m.r2v[rs] = rs, vs
	}
	return vs
}

func (m *renumberModel) oldest(rs uint32) uint32 {
	if vs := m.viewer(rs); vs != 0 {
		return vs
	}
	for back := uint32(maxRing - 1); back < maxRing; back-- {
		if vs := (m.next - back) & seqMask; m.region(vs) != 0 {
			return vs
		}
	}
	return (m.next + 1) & seqMask
}

// TestRenumberModel drives the rings and the model with the same region
// datagrams — mostly consecutive numbers, some reliable, some skipped
// (dropped at a full queue), resends of recent ones, a region restart —
// across the 24-bit wrap, and compares every lookup near the window's
// edges after each.
func TestRenumberModel(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		rng := rand.New(rand.NewPCG(seed, 0))
		start := uint32(seqMask - 3000)
		r := renumber{next: start}
		m := renumberModel{next: start, v2r: map[uint32]uint32{}, r2v: map[uint32]uint32{}, residue: map[uint32]uint32{}}
		regionSeq := uint32(1)
		b := make([]byte, 8)
		for step := range 60000 {
			var rs uint32
			var flags lludp.Flags
			switch x := rng.IntN(100); {
			case x < 8 && regionSeq > 50: // a resend of a recent reliable one
				rs = regionSeq - uint32(rng.IntN(50))
				flags = lludp.FlagReliable | lludp.FlagResent
			case x < 10: // a gap: numbers the gateway dropped
				regionSeq += uint32(1 + rng.IntN(3))
				fallthrough
			default:
				regionSeq++
				rs = regionSeq
				if rng.IntN(100) < 80 {
					flags = lludp.FlagReliable
				}
			}
			if step == 30000 { // a restart: numbers start again
				r.reset()
				m = renumberModel{v2r: map[uint32]uint32{}, r2v: map[uint32]uint32{}, residue: map[uint32]uint32{}}
				regionSeq = 1
			}
			got := r.departure(b, lludp.Header{Sequence: rs, Flags: flags})
			want := m.departure(rs, flags)
			if got != want {
				t.Fatalf("seed %d step %d: region %d (%v) numbered %d, want %d", seed, step, rs, flags, got, want)
			}
			for _, vs := range []uint32{want, want - 1, want - maxRing + 1, want - maxRing, want - maxRing + uint32(rng.IntN(maxRing)), want + 1} {
				vs &= seqMask
				if g, w := r.region(vs), m.region(vs); g != w {
					t.Fatalf("seed %d step %d: region(%d) = %d, want %d", seed, step, vs, g, w)
				}
			}
			for _, probe := range []uint32{rs, regionSeq - uint32(rng.IntN(5000)), regionSeq - maxRing} {
				if g, w := r.viewer(probe), m.viewer(probe); g != w {
					t.Fatalf("seed %d step %d: viewer(%d) = %d, want %d", seed, step, probe, g, w)
				}
			}
			if step%97 == 0 {
				probe := regionSeq - uint32(rng.IntN(6000))
				if g, w := r.oldest(probe), m.oldest(probe); g != w {
					t.Fatalf("seed %d step %d: oldest(%d) = %d, want %d", seed, step, probe, g, w)
				}
			}
		}
		if len(r.byViewer) != maxRing {
			t.Errorf("seed %d: rings of %d slots after a busy circuit, want %d", seed, len(r.byViewer), maxRing)
		}
	}
}

// TestRenumberSmallCircuit: a circuit that trickles keeps small rings.
func TestRenumberSmallCircuit(t *testing.T) {
	var r renumber
	b := make([]byte, 8)
	for rs := uint32(1); rs <= 40; rs++ {
		r.departure(b, lludp.Header{Sequence: rs, Flags: lludp.FlagReliable})
	}
	if len(r.byViewer) != minRing {
		t.Errorf("40 reliable datagrams: rings of %d slots, want %d", len(r.byViewer), minRing)
	}
	for vs := uint32(1); vs <= 40; vs++ {
		if r.region(vs) != vs {
			t.Errorf("region(%d) = %d", vs, r.region(vs))
		}
	}
}

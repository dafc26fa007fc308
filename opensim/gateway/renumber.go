package gateway

import (
	"encoding/binary"

	"github.com/fairgrid/fairgrid/lludp"
)

// renumber gives the region's datagrams to a viewer sequence numbers in
// the order they leave the gateway, and translates the viewer's acks back.
//
// Why: the scheduler sends a circuit's channels in fair-queuing order, not
// in the region's numbering order, and a viewer — or fairgrid's own client
// side — declares a number lost once three later ones have arrived
// (NDUPACK = 3, protocol.md §12): a Task datagram waiting behind Texture
// ones read as a loss at the viewer, and the client side's fair rate
// swung with it (TestClientSideBehindGateway). Numbered at departure, the
// viewer sees gaps only where the network lost a datagram; one dropped at
// a full queue in the gateway leaves no gap at all.
//
// A reliable datagram's pair of numbers is kept while its number is among
// the last maxRing the viewer was given, so that the region's resend of it
// carries the number the viewer saw (and the viewer knows it as a
// duplicate), and the viewer's acks of it reach the region under the
// region's number. Sequence 0 (the region's out-of-band ack of
// UseCircuitCode) is left as it is.
//
// The pairs live in two rings, one indexed by the viewer's number and one
// by the region's, each slot holding the whole pair: a pair counts only
// where both rings hold it, so a slot taken by a newer pair forgets the
// older one in both directions at once. Both rings start at minRing slots
// and double, up to maxRing, when a pair still kept would be overwritten.
// Both numberings are consecutive, so rings cost a store per datagram
// where maps cost a hash, and a trickling circuit keeps a few hundred
// bytes.
type renumber struct {
	next     uint32 // the latest number given
	byViewer []seqPair
	byRegion []seqPair
}

// seqPair is a reliable datagram's number at the region and at the
// viewer; viewer 0 marks an empty slot (0 is never given).
type seqPair struct{ region, viewer uint32 }

// seqMask: numbers stay within 24 bits, as the Linden viewer's own
// wrap (protocol.md §3) — OpenSim's 32-bit numbers never reach it.
const seqMask = 0xFFFFFF

func (r *renumber) reset() { *r = renumber{} }

// kept reports whether the viewer's number vs is among the last maxRing
// given.
func (r *renumber) kept(vs uint32) bool {
	return vs != 0 && (r.next-vs)&seqMask < maxRing
}

// pairOfViewer is the pair kept for the viewer's number vs, if any.
func (r *renumber) pairOfViewer(vs uint32) (seqPair, bool) {
	if len(r.byViewer) == 0 || !r.kept(vs) {
		return seqPair{}, false
	}
	p := r.byViewer[vs&uint32(len(r.byViewer)-1)]
	if p.viewer != vs || r.byRegion[p.region&uint32(len(r.byRegion)-1)] != p {
		return seqPair{}, false
	}
	return p, true
}

// pairOfRegion is the pair kept for the region's number rs, if any.
func (r *renumber) pairOfRegion(rs uint32) (seqPair, bool) {
	if len(r.byRegion) == 0 {
		return seqPair{}, false
	}
	p := r.byRegion[rs&uint32(len(r.byRegion)-1)]
	if p.viewer == 0 || p.region != rs || !r.kept(p.viewer) || r.byViewer[p.viewer&uint32(len(r.byViewer)-1)] != p {
		return seqPair{}, false
	}
	return p, true
}

// departure rewrites b's sequence number, the region's, with the one the
// viewer sees, and returns it.
func (r *renumber) departure(b []byte, h lludp.Header) uint32 {
	if h.Sequence == 0 {
		return 0
	}
	if h.Flags.Resent() {
		if p, ok := r.pairOfRegion(h.Sequence); ok {
			binary.BigEndian.PutUint32(b[1:5], p.viewer)
			return p.viewer
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
		r.keep(seqPair{region: h.Sequence, viewer: vs})
	} else if len(r.byViewer) > 0 && r.byViewer[vs&uint32(len(r.byViewer)-1)].viewer == vs {
		// A pair from a wrap ago (2^24 numbers) under the same number.
		r.byViewer[vs&uint32(len(r.byViewer)-1)] = seqPair{}
	}
	binary.BigEndian.PutUint32(b[1:5], vs)
	return vs
}

// keep stores p in both rings, doubling them first while either slot
// holds another pair still kept.
func (r *renumber) keep(p seqPair) {
	for len(r.byViewer) < maxRing {
		if len(r.byViewer) == 0 {
			r.byViewer, r.byRegion = make([]seqPair, minRing), make([]seqPair, minRing)
			continue
		}
		v := r.byViewer[p.viewer&uint32(len(r.byViewer)-1)]
		g := r.byRegion[p.region&uint32(len(r.byRegion)-1)]
		_, vLive := r.pairOfViewer(v.viewer)
		_, gLive := r.pairOfRegion(g.region)
		if !(vLive && v.viewer != p.viewer) && !(gLive && g.region != p.region) {
			break
		}
		r.grow()
	}
	r.byViewer[p.viewer&uint32(len(r.byViewer)-1)] = p
	r.byRegion[p.region&uint32(len(r.byRegion)-1)] = p
}

// grow doubles both rings and puts back every pair still kept.
func (r *renumber) grow() {
	old := r.byViewer
	oldRegion := r.byRegion
	r.byViewer, r.byRegion = make([]seqPair, 2*len(old)), make([]seqPair, 2*len(old))
	for _, p := range old {
		if p.viewer != 0 && r.kept(p.viewer) && oldRegion[p.region&uint32(len(oldRegion)-1)] == p {
			r.byViewer[p.viewer&uint32(len(r.byViewer)-1)] = p
			r.byRegion[p.region&uint32(len(r.byRegion)-1)] = p
		}
	}
}

// viewer is the viewer's number for the region's, or 0 when none is kept.
func (r *renumber) viewer(region uint32) uint32 {
	p, _ := r.pairOfRegion(region)
	return p.viewer
}

// region is the region's number for the viewer's, or 0 when it is not
// known (OpenSim finds no reliable datagram 0 to ack).
func (r *renumber) region(viewer uint32) uint32 {
	p, _ := r.pairOfViewer(viewer)
	return p.region
}

// oldest is the viewer's number of the oldest reliable datagram kept, or
// the next to be given when none is: StartPingCheck's OldestUnacked.
func (r *renumber) oldest(region uint32) uint32 {
	if vs := r.viewer(region); vs != 0 {
		return vs
	}
	for back := min(uint32(len(r.byViewer)), maxRing) - 1; back < maxRing; back-- {
		if vs := (r.next - back) & seqMask; r.region(vs) != 0 {
			return vs
		}
	}
	return (r.next + 1) & seqMask
}

// translateAcks rewrites, in place, the appended acks of a viewer
// datagram (big-endian, before the count byte) to the region's numbers.
func (r *renumber) translateAcks(b []byte, acks lludp.AckList) {
	n := acks.Len()
	base := len(b) - 1 - 4*n
	for i := range n {
		binary.BigEndian.PutUint32(b[base+4*i:], r.region(acks.At(i)))
	}
}

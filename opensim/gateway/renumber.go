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
// A reliable datagram's pair of numbers is kept until maxRing newer
// reliable ones have been sent, so that the region's resend of it carries
// the number the viewer saw (and the viewer knows it as a duplicate), and
// the viewer's acks of it reach the region under the region's number.
// Sequence 0 (the region's out-of-band ack of UseCircuitCode) is left as
// it is.
//
// The pairs are kept in the order given, oldest first. The viewer's
// numbers rise along it, so an ack is translated by binary search; the
// region's need not (fair queuing reorders the channels), so a map from
// the region's number finds a resend's pair. One map write a reliable
// datagram, where a map each way cost two, and the map and hash work was
// about 5 % of the gateway's CPU in make bench-gateway.
type renumber struct {
	next     uint32            // the latest number given
	toViewer map[uint32]uint32 // the region's number → the viewer's, for every pair kept
	// kept[head:] are the pairs kept, oldest first; a pair whose region
	// number was given another viewer number since has region 0.
	kept []seqPair
	head int
}

// seqPair is a reliable datagram's number at the region and at the viewer.
type seqPair struct{ region, viewer uint32 }

// seqMask: numbers stay within 24 bits, as the Linden viewer's own
// wrap (protocol.md §3) — OpenSim's 32-bit numbers never reach it.
const seqMask = 0xFFFFFF

func (r *renumber) reset() { *r = renumber{} }

// departure rewrites b's sequence number, the region's, with the one the
// viewer sees, and returns it.
func (r *renumber) departure(b []byte, h lludp.Header) uint32 {
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

func (r *renumber) keep(region, viewer uint32) {
	if r.toViewer == nil {
		r.toViewer = map[uint32]uint32{}
	}
	if old, ok := r.toViewer[region]; ok {
		if i, ok := r.find(old); ok {
			r.kept[i].region = 0
		}
	}
	r.toViewer[region] = viewer
	r.kept = append(r.kept, seqPair{region: region, viewer: viewer})
	if len(r.kept)-r.head > maxRing {
		gone := r.kept[r.head]
		r.head++
		if gone.region != 0 && r.toViewer[gone.region] == gone.viewer {
			delete(r.toViewer, gone.region)
		}
		if r.head > maxRing {
			r.kept = append(r.kept[:0], r.kept[r.head:]...)
			r.head = 0
		}
	}
}

// find returns the index in kept of the viewer's number vs, if it is
// kept.
func (r *renumber) find(vs uint32) (int, bool) {
	return findRising(r.head, len(r.kept), vs, func(i int) uint32 { return r.kept[i].viewer })
}

// findRising finds target among the sequence numbers at [lo, hi), which
// rise from the one at lo modulo the 24-bit wrap (seqAt gives each), by
// binary search: its position, and whether it is there. The renumbering's
// pairs and the estimator's records are both kept in the order their
// viewer numbers were given.
func findRising[I ~int | ~uint64](lo, hi I, target uint32, seqAt func(I) uint32) (I, bool) {
	if lo == hi {
		return lo, false
	}
	first := seqAt(lo)
	d := (target - first) & seqMask
	end := hi
	for lo < hi {
		mid := lo + (hi-lo)/2
		if (seqAt(mid)-first)&seqMask < d {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, lo < end && seqAt(lo) == target
}

// viewer is the viewer's number for the region's, or 0 when none is kept.
func (r *renumber) viewer(region uint32) uint32 { return r.toViewer[region] }

// region is the region's number for the viewer's, or 0 when it is not
// known (OpenSim finds no reliable datagram 0 to ack).
func (r *renumber) region(viewer uint32) uint32 {
	if i, ok := r.find(viewer); ok {
		return r.kept[i].region
	}
	return 0
}

// oldest is the viewer's number of the oldest reliable datagram kept, or
// the next to be given when none is: StartPingCheck's OldestUnacked.
func (r *renumber) oldest(region uint32) uint32 {
	if vs, ok := r.toViewer[region]; ok {
		return vs
	}
	for _, p := range r.kept[r.head:] {
		if p.region != 0 {
			return p.viewer
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

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
// A reliable datagram's pair of numbers is kept until maxRing newer ones
// have been sent, so that the region's resend of it carries the number
// the viewer saw (and the viewer knows it as a duplicate), and the viewer's
// acks of it reach the region under the region's number. Sequence 0 (the
// region's out-of-band ack of UseCircuitCode) is left as it is.
type renumber struct {
	next     uint32            // the latest number given
	toViewer map[uint32]uint32 // the region's number → the viewer's
	toRegion map[uint32]uint32 // the viewer's number → the region's
	order    []uint32          // the viewer's numbers kept, oldest first
	head     int
}

// seqMask: numbers stay within 24 bits, as the Linden viewer's own
// wrap (protocol.md §3) — OpenSim's 32-bit numbers never reach it.
const seqMask = 0xFFFFFF

func newRenumber() renumber {
	return renumber{toViewer: map[uint32]uint32{}, toRegion: map[uint32]uint32{}}
}

func (r *renumber) reset() { *r = newRenumber() }

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
func (r *renumber) region(viewer uint32) uint32 { return r.toRegion[viewer] }

// oldest is the viewer's number of the oldest reliable datagram kept, or
// the next to be given when none is: StartPingCheck's OldestUnacked.
func (r *renumber) oldest(region uint32) uint32 {
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

// translateAcks rewrites, in place, the appended acks of a viewer
// datagram (big-endian, before the count byte) to the region's numbers.
func (r *renumber) translateAcks(b []byte, acks lludp.AckList) {
	n := acks.Len()
	base := len(b) - 1 - 4*n
	for i := range n {
		binary.BigEndian.PutUint32(b[base+4*i:], r.region(acks.At(i)))
	}
}

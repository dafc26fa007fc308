package circuit

import (
	"github.com/fairgrid/fairgrid/lludp"
)

// maxNotes is how many datagrams a candidate holds: a third in the same
// direction either promotes it or is folded.
const maxNotes = 2

// note is what the tracker keeps of one datagram: everything its circuit's
// measurements take from it, but for the acks (see apply).
type note struct {
	at    int64 // unix ns
	seq   uint32
	size  uint32
	flags lludp.Flags
	cat   lludp.Category
	ch    lludp.Channel
	dir   Direction
	kind  noteKind
	ping  uint8 // the PingID of a ping or its answer
}

type noteKind uint8

const (
	noKind       noteKind = iota
	startPing             // StartPingCheck: a ping to answer
	completePing          // CompletePingCheck: an answer
	packetAck             // PacketAck: its IDs are in Tracker.ack
)

// promotedBy says whether datagram n makes candidate c a circuit: it goes
// the other way than what c holds (the two ends talk), or it is the third in
// one direction with each advancing the sequence (a one-way capture of a
// real stream). See the package documentation for why.
func (c *Circuit) promotedBy(n *note) bool {
	if c.nnotes == 0 {
		return false
	}
	if c.notes[0].dir != n.dir {
		return true
	}
	return c.nnotes == maxNotes && advances(c.notes[0].seq, c.notes[1].seq) && advances(c.notes[1].seq, n.seq)
}

// advances says whether b follows a within the jump a gap may have
// (maxJump), in the serial arithmetic of seqTracker: 24-bit unless either
// number needs 32.
func advances(a, b uint32) bool {
	d := int64(int32(b - a))
	if a <= 0xFFFFFF && b <= 0xFFFFFF {
		d = int64((b - a) & 0xFFFFFF)
		if d >= 1<<23 {
			d -= 1 << 24
		}
	}
	return d > 0 && d <= maxJump
}

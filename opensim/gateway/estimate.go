package gateway

import (
	"math"
	"time"

	"github.com/fairgrid/fairgrid/ratecalc"
)

// The estimator's bounds. The ring holds the reliable datagrams whose fate
// is not yet known, in departure order; it starts at minRing and doubles
// as needed up to maxRing: 4096 is more than four seconds of a 5 Mbit/s
// circuit of 600-byte datagrams, longer than any viewer takes to ack, and
// a circuit that trickles keeps 2 KB. pingSlots holds the region's recent
// pings.
const (
	minRing   = 64
	maxRing   = 4096
	pingSlots = 8
	// ndupack: a reliable datagram is lost once three datagrams the
	// gateway sent after it have been acked and it has not (RFC 5681's
	// duplicate-ack threshold, as protocol.md §12 applies NDUPACK = 3 to
	// sequence gaps).
	ndupack = 3
	// ackAllowance is how long a viewer may hold an ack before sending
	// it: the Second Life viewer batches them for AckCollectTime, 100 ms
	// (protocol.md §8.7), and this leaves as much again. (The ack round
	// trip's excess over the ping's does not measure it: the acks of a
	// batch arrive together, newest last, so its smoothed value is near
	// the batch's shortest wait.)
	ackAllowance = 200 * time.Millisecond
)

// sentRecord is one reliable datagram sent to the viewer.
type sentRecord struct {
	seq       uint32
	at        int64 // departure, unix ns
	size      int32
	acked     bool
	uncertain bool // an ack datagram of the viewer's was lost meanwhile
}

type pingRecord struct {
	at    int64
	id    uint8
	valid bool
}

// estimator measures one circuit at the server side, from what passes the
// gateway both ways; doc.go says what each estimate sees and misses. It
// never reads the clock: every event carries its time. Not safe for
// concurrent use.
type estimator struct {
	ctl ratecalc.Controller

	ring       []sentRecord // a power of two long, ordinal o at o&mask
	mask       uint64
	head, tail uint64 // ordinals: the oldest unresolved record, the next one
	// ackedAhead counts acked records in [head, tail): with the head
	// unacked, those acked after it.
	ackedAhead int
	// A record is found by its sequence number by binary search (find):
	// the viewer's numbers are given in departure order (renumber.go), so
	// they rise along the ring. (An array indexed by the number modulo the
	// ring's length would collide: unreliable datagrams between the
	// reliable ones spread the numbers wider than the ring.)

	pings [pingSlots]pingRecord

	// The viewer's own sequence numbers: a gap is a datagram of the
	// viewer's lost on the way up, and with it any acks it carried.
	upNext  uint32
	upKnown bool
	upLast  int64 // the viewer's latest datagram, unix ns

	rtt    ratecalc.RTTStats // ping pairs
	ackRTT ratecalc.RTTStats // reliable datagram to its ack: plus the viewer's ack delay

	// Originals sent, all and reliable: the segment size the fair rate
	// stands on is the mean datagram of all, as the viewer receives them.
	allBytes, allPkts, relBytes, relPkts float64

	stats EstimatorStats
}

// EstimatorStats counts what the estimator saw.
type EstimatorStats struct {
	ReliableSent   uint64 // reliable originals sent to the viewer
	Acked          uint64 // of those, acked
	Lost           uint64 // declared lost: ndupack later ones acked, not this
	Unknown        uint64 // fate unknown: an ack datagram was lost, or the record was overrun
	Resends        uint64 // the region's resends passed on
	UnreliableSent uint64
	UpGaps         uint64 // viewer datagrams missing on the way up
	StaleAcks      uint64 // acks for nothing outstanding (duplicates, resends' acks)
	Expired        uint64 // of Lost, declared lost by the ack timeout (expire)
}

func newEstimator(ctl ratecalc.Controller) *estimator {
	return &estimator{ctl: ctl, ring: make([]sentRecord, minRing), mask: minRing - 1}
}

// sent records a datagram of size bytes leaving for the viewer at at.
func (e *estimator) sent(seq uint32, size int, reliable, resent bool, at time.Time) {
	ns := at.UnixNano()
	switch {
	case resent:
		// A resend is not a packet of the loss history; its bytes are
		// what the region spent its rate on.
		e.stats.Resends++
		e.ctl.OnPacket(ratecalc.Packet{At: at, Size: size, Repeat: true})
		return
	case !reliable, seq == 0:
		// Never acked, so never known lost: its bytes count towards the
		// receive rate as sent (doc.go: the bias). Sequence 0 is the
		// region's out-of-band number, left as it is (renumber.go): not
		// one of the rising numbers the ring is searched by.
		e.stats.UnreliableSent++
		e.allBytes += float64(size)
		e.allPkts++
		e.ctl.OnPacket(ratecalc.Packet{At: at, Size: size, Repeat: true})
		return
	}
	e.stats.ReliableSent++
	e.allBytes += float64(size)
	e.allPkts++
	e.relBytes += float64(size)
	e.relPkts++
	if e.tail-e.head == uint64(len(e.ring)) {
		if len(e.ring) < maxRing {
			e.grow()
		} else {
			e.overrun(at)
		}
	}
	o := e.tail
	e.tail++
	e.ring[o&e.mask] = sentRecord{seq: seq, at: ns, size: int32(size)}
}

// grow doubles the ring and re-indexes what it holds.
func (e *estimator) grow() {
	n := 2 * len(e.ring)
	ring, mask := make([]sentRecord, n), uint64(n-1)
	for o := e.head; o < e.tail; o++ {
		ring[o&mask] = e.ring[o&e.mask]
	}
	e.ring, e.mask = ring, mask
}

// overrun gives up on the oldest record to make room.
func (e *estimator) overrun(at time.Time) {
	r := &e.ring[e.head&e.mask]
	if r.acked {
		e.received(r, at)
		e.ackedAhead--
	} else {
		e.stats.Unknown++
	}
	e.head++
	e.advance(at)
}

// expire declares lost every unacked record older than the ack timeout:
// a circuit that acks nothing shows no duplicate acks, and without this
// it would read as losing nothing (issue 34: reflection rode on it). The
// timeout is three smoothed round trips and the viewer's ack allowance,
// at least minAckTimeout, as TCP's RTO is at least a second (RFC 6298
// §2.4).
func (e *estimator) expire(now time.Time) {
	limit := now.UnixNano() - int64(max(minAckTimeout, 3*e.srtt()+ackAllowance))
	for e.head < e.tail {
		r := &e.ring[e.head&e.mask]
		if r.acked || r.at > limit {
			e.advance(now)
			return
		}
		if r.uncertain {
			e.stats.Unknown++
		} else {
			e.stats.Lost++
			e.stats.Expired++
			e.ctl.OnPacket(ratecalc.Packet{At: time.Unix(0, r.at), Lost: true})
		}
		e.head++
	}
}

// minAckTimeout is the least time an unacked datagram waits before
// expire declares it lost.
const minAckTimeout = time.Second

// find returns the ordinal of seq's record among the unresolved, if it is
// there.
func (e *estimator) find(seq uint32) (uint64, bool) {
	return findRising(e.head, e.tail, seq, func(o uint64) uint32 { return e.ring[o&e.mask].seq })
}

// acked records the viewer's ack of seq arriving at at.
func (e *estimator) acked(seq uint32, at time.Time) {
	o, ok := e.find(seq)
	if !ok {
		e.stats.StaleAcks++
		return
	}
	r := &e.ring[o&e.mask]
	if r.acked {
		e.stats.StaleAcks++
		return
	}
	r.acked = true
	e.ackedAhead++
	e.stats.Acked++
	if d := at.UnixNano() - r.at; d > 0 {
		e.ackRTT.Add(time.Duration(d))
	}
	e.advance(at)
}

// advance resolves records from the oldest: acked ones were received; an
// unacked one with ndupack acked after it was lost.
func (e *estimator) advance(at time.Time) {
	for e.head < e.tail {
		r := &e.ring[e.head&e.mask]
		switch {
		case r.acked:
			if r.uncertain {
				// Not a packet of the loss history: its fate was judged
				// apart from the others of its window (upDatagram).
				e.ctl.OnPacket(ratecalc.Packet{At: at, Size: int(r.size), Repeat: true})
			} else {
				e.received(r, at)
			}
			e.ackedAhead--
		case e.ackedAhead >= ndupack:
			if r.uncertain {
				e.stats.Unknown++
			} else {
				e.stats.Lost++
				e.ctl.OnPacket(ratecalc.Packet{At: time.Unix(0, r.at), Lost: true})
			}
		default:
			return
		}
		e.head++
	}
}

// received hands the controller a delivered datagram, timed by its ack.
// Only reliable datagrams are packets of the loss history, but the
// segment size s is the mean of every datagram the viewer receives (as the
// sidecar and the audit measure it at the viewer), and the unreliable ones
// are the small ones: the size is scaled by the ratio of the means, and
// what that takes off goes to the receive rate as a repeat, so the bytes
// add up.
func (e *estimator) received(r *sentRecord, at time.Time) {
	size := float64(r.size)
	scaledSize := size
	if e.relPkts > 0 && e.allPkts > 0 && e.relBytes > 0 {
		scaledSize = size * (e.allBytes / e.allPkts) / (e.relBytes / e.relPkts)
	}
	e.ctl.OnPacket(ratecalc.Packet{At: at, Size: int(math.Round(scaledSize))})
	if rest := int(math.Round(size - scaledSize)); rest > 0 {
		e.ctl.OnPacket(ratecalc.Packet{At: at, Size: rest, Repeat: true})
	}
}

// upDatagram records a datagram from the viewer with sequence number seq.
// A gap means a datagram of the viewer's was lost, and any acks it
// carried. Those acked what the viewer received in the batch before it was
// sent, datagrams the gateway sent from one round trip and ackAllowance
// before the viewer's previous datagram up to now; every record of that
// window is uncertain, and leaves the loss history whatever its fate
// (acked later or declared lost), so that what remains is a sample chosen
// by time, not by fate. Older unacked records stay: they were due in
// earlier datagrams, which arrived.
func (e *estimator) upDatagram(seq uint32, resent bool, at time.Time) {
	if resent || seq == 0 {
		return
	}
	ns := at.UnixNano()
	if e.upKnown {
		d := int32(seq - e.upNext)
		switch {
		case d < 0:
			return // late or reordered: not a new number
		case d > 0 && d < 512:
			e.stats.UpGaps += uint64(d)
			// The lost datagram left the viewer between its neighbours,
			// a one-way delay before each arrived, and acked what had
			// reached the viewer up to ackAllowance before it left.
			from, to := e.upLast-int64(e.srtt()+ackAllowance), ns-int64(e.minRTT())
			for o := e.tail; o > e.head; o-- {
				r := &e.ring[(o-1)&e.mask]
				if r.at < from {
					break
				}
				if r.at <= to {
					r.uncertain = true
				}
			}
		}
	}
	e.upNext, e.upKnown, e.upLast = seq+1, true, ns
}

// minRTT is the shortest round trip any sample has shown (ack samples
// are never shorter than the network's), or 0 before any.
func (e *estimator) minRTT() time.Duration {
	switch {
	case e.rtt.Samples() > 0 && e.ackRTT.Samples() > 0:
		return min(e.rtt.Min(), e.ackRTT.Min())
	case e.rtt.Samples() > 0:
		return e.rtt.Min()
	case e.ackRTT.Samples() > 0:
		return e.ackRTT.Min()
	}
	return 0
}

// srtt is the ping estimate, or 100 ms before one (ratecalc's initial RTT).
func (e *estimator) srtt() time.Duration {
	if e.rtt.Samples() > 0 {
		return e.rtt.SRTT()
	}
	return 100 * time.Millisecond
}

// regionPing records the region's StartPingCheck leaving for the viewer.
func (e *estimator) regionPing(id uint8, at time.Time) {
	e.pings[id%pingSlots] = pingRecord{at: at.UnixNano(), id: id, valid: true}
}

// viewerPong records the viewer's CompletePingCheck: one network round
// trip from the gateway, plus the viewer's time to answer.
func (e *estimator) viewerPong(id uint8, at time.Time) {
	p := &e.pings[id%pingSlots]
	if !p.valid || p.id != id {
		return
	}
	p.valid = false
	d := time.Duration(at.UnixNano() - p.at)
	if d <= 0 {
		return
	}
	e.rtt.Add(d)
	e.ctl.OnRTT(d, at)
}

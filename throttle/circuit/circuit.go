package circuit

import (
	"errors"
	"net/netip"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/ratecalc"
)

// Direction is one way of a circuit.
type Direction uint8

const (
	// Down is simulator to viewer: the direction the throttle governs.
	Down Direction = iota
	// Up is viewer to simulator.
	Up
)

func (d Direction) String() string {
	if d == Down {
		return "down"
	}
	return "up"
}

// Key identifies a circuit: the viewer's and the simulator's endpoints, as
// both peers identify circuits (protocol.md §11.3). Comparable; a map key.
type Key struct {
	Viewer, Sim netip.AddrPort
}

func (k Key) String() string { return k.Viewer.String() + "-" + k.Sim.String() }

// DirStats are the counters of one direction.
type DirStats struct {
	Packets  uint64 // datagrams, every copy
	Bytes    uint64 // UDP payload bytes, every copy
	Reliable uint64
	Resent   uint64 // datagrams with the resent flag
	// ResentBytes are their bytes: OpenSim sends every retransmission in
	// its Resend category, whatever the message (protocol.md §8.6).
	ResentBytes uint64
	// SpuriousResends are resends of numbers already received: the ack was
	// late or lost, nothing was lost. Not counted as loss.
	SpuriousResends uint64
	Duplicates      uint64 // originals received twice, or too old to judge
	Reordered       uint64 // filled a gap within the NDUPACK window, without the resent flag
	Lost            uint64 // sequence numbers declared lost
	LossEvents      uint64 // losses grouped per RTT (RFC 5348 §5.2)
	OutOfBand       uint64 // sequence 0: OpenSim's immediate ack of UseCircuitCode, outside the sequence space
	Resyncs         uint64 // jumps too large to be loss, after which tracking restarted
	First, Last     time.Time
	// ByCategory holds bytes per throttle category, and bytes of
	// unthrottled messages (acks, pings, handshake) at index NumCategories.
	ByCategory [lludp.NumCategories + 1]uint64
	// ByChannel holds bytes per scheduler channel (lludp.ChannelOf),
	// unthrottled at lludp.NumChannels.
	ByChannel [lludp.NumChannels + 1]uint64
	// LossEventRate is p over the last eight loss intervals.
	LossEventRate float64
}

// RateBPS is the mean received rate over the direction's span, in bits/s.
func (s DirStats) RateBPS() float64 {
	d := s.Last.Sub(s.First)
	if d <= 0 {
		return 0
	}
	return float64(s.Bytes) * 8 / d.Seconds()
}

// Identity is what a circuit's own messages tell about its agent.
type Identity struct {
	AgentID     lludp.UUID
	SessionID   lludp.UUID
	CircuitCode uint32
}

// Known reports whether both IDs are known: a simulator ignores an
// AgentThrottle without them (protocol.md §10.1).
func (id Identity) Known() bool { return !id.AgentID.IsZero() && !id.SessionID.IsZero() }

type direction struct {
	stats       DirStats // but First and Last, kept below
	first, last int64    // unix ns
	seq         seqTracker
	loss        ratecalc.LossHistory

	circuit *Circuit
	which   Direction
	rtt     time.Duration // the loss-grouping RTT of the datagram in hand
}

// lost records a sequence number declared lost.
func (d *direction) lost(_ uint32, at int64) {
	d.stats.Lost++
	t := time.Unix(0, at)
	d.loss.OnPacket(true, t, d.rtt)
	if c := d.circuit; d.which == Down && c.Controller != nil {
		c.Controller.OnPacket(ratecalc.Packet{At: t, Lost: true})
	}
}

type pingRecord struct {
	at    int64
	id    uint8
	valid bool
}

type sentRecord struct {
	at  int64
	seq uint32
}

// Circuit is everything known about one circuit.
//
// Until its traffic shows a conversation (see the package documentation)
// a circuit is a candidate: Observe returns it, with its Key, direction and
// what its messages told about the agent, but its measurements are held
// back (Stats, the RTTs, First and Last read zero) and it is not among
// Circuits. Once promoted, the same Circuit measures everything it carried
// from its first datagram on.
type Circuit struct {
	Key Key
	Identity
	// IdentitySince is when a viewer→simulator datagram first carried the
	// current AgentID and SessionID; IdentityDatagrams is how many have
	// carried them since (UseCircuitCode, CompleteAgentMovement,
	// AgentUpdate, AgentThrottle). IdentityConflicts counts the ones that
	// carried other IDs once both were known: they replace the IDs (but for
	// an AgentThrottle, which a simulator ignores then) and restart the
	// count. A request should wait until IdentityDatagrams is large enough
	// that the IDs cannot be one spoofed datagram's.
	IdentitySince     time.Time
	IdentityDatagrams uint32
	IdentityConflicts uint32
	// UpSequence is the viewer's latest sequence number on this circuit:
	// an injected AgentThrottle reuses it (protocol.md §10.2).
	UpSequence uint32
	// ViewerThrottle is the viewer's most recent AgentThrottle request, in
	// bits/s per category, and when it was seen (zero if none): the
	// viewer's own, never one a sidecar injected in its name (NoteInjected),
	// so that the viewer's limit stays known while fairgrid overrides it.
	ViewerThrottle   [lludp.NumCategories]float32
	ViewerThrottleAt time.Time
	// LogoutAt is when the region's LogoutReply was seen on the circuit
	// (zero if not): the viewer's session, and every circuit from its
	// endpoint, has ended.
	LogoutAt time.Time
	// ArrivedAt is when the viewer last sent CompleteAgentMovement here:
	// it does so only on arriving in a region, so the circuit with the
	// latest arrival is the agent's root region, the others neighbours
	// (protocol.md §11.2).
	ArrivedAt time.Time
	// Controller, if set, receives the measurements of the down direction.
	// The tracker makes it when the circuit is promoted.
	Controller ratecalc.Controller

	// m is the bulk of the state, allocated on promotion; candidates share
	// the zero value.
	m *measures

	serial  uint64 // order of appearance
	seen    int64  // latest datagram, unix ns: what idleness is judged by
	removed bool   // evicted or forgotten: no longer the tracker's

	// A candidate's datagrams, replayed on promotion.
	notes  [maxNotes]note
	nnotes uint8
	slot   int32 // index in the candidate ring; -1 once promoted

	// The eviction lists (Config.MaxCircuits): list is 1 while the
	// identity is known.
	prev, next *Circuit
	list       int8
}

// measures is what a promoted circuit measures.
type measures struct {
	dirs [2]direction
	// rtt is the network RTT: viewer StartPingCheck to sim CompletePingCheck.
	rtt ratecalc.RTTStats
	// ackRTT: viewer reliable packet to the sim's ack, biased high by the
	// simulator's ack delay (up to ~500 ms in OpenSim, protocol.md §8.7).
	ackRTT ratecalc.RTTStats
	// localRTT: the sim's StartPingCheck to the viewer's answer. At a
	// viewer-side capture both ends are local: the viewer's processing
	// delay, never a network RTT.
	localRTT ratecalc.RTTStats
	pings    [8]pingRecord // the viewer's recent pings
	simPings [8]pingRecord
	reliable [32]sentRecord // the viewer's recent reliable packets
	nextRel  int
	// injected are the latest requests sent in the viewer's name, newest
	// first: the one in force and the one before it, which may still be
	// on its way when the next is decided (NoteInjected).
	injected  [2][lludp.NumCategories]float32
	ninjected int
}

// candidateMeasures is what a candidate reads: nothing measured yet. Only
// promotion writes measures, never into this one.
var candidateMeasures measures

// Candidate reports whether the circuit is still a candidate: its traffic
// has not yet shown a conversation, and it is not measured.
func (c *Circuit) Candidate() bool { return c.m == &candidateMeasures }

// Stats returns the counters of one direction.
func (c *Circuit) Stats(d Direction) DirStats {
	dir := &c.m.dirs[d]
	s := dir.stats
	if s.Packets > 0 {
		s.First, s.Last = time.Unix(0, dir.first).UTC(), time.Unix(0, dir.last).UTC()
	}
	s.LossEventRate = dir.loss.LossEventRate()
	s.LossEvents = dir.loss.Events()
	return s
}

// RTT is the ping-based round-trip estimate (RFC 6298 smoothing). The
// result is the circuit's own: read it, do not add to it.
func (c *Circuit) RTT() *ratecalc.RTTStats { return &c.m.rtt }

// AckRTT is the ack-based estimate, biased by the simulator's ack delay.
func (c *Circuit) AckRTT() *ratecalc.RTTStats { return &c.m.ackRTT }

// LocalRTT is the viewer's answer time to the simulator's own pings.
func (c *Circuit) LocalRTT() *ratecalc.RTTStats { return &c.m.localRTT }

// Last is the time of the latest datagram in either direction.
func (c *Circuit) Last() time.Time {
	if c.Candidate() {
		return time.Time{}
	}
	return time.Unix(0, c.lastNs()).UTC()
}

// lastNs is the time of the latest datagram, unix ns.
func (c *Circuit) lastNs() int64 {
	down, up := &c.m.dirs[Down], &c.m.dirs[Up]
	switch {
	case down.stats.Packets == 0:
		return up.last
	case up.stats.Packets == 0:
		return down.last
	}
	return max(down.last, up.last)
}

// First is the time of the first datagram.
func (c *Circuit) First() time.Time {
	down, up := &c.m.dirs[Down], &c.m.dirs[Up]
	switch {
	case down.stats.Packets == 0 && up.stats.Packets == 0:
		return time.Time{}
	case down.stats.Packets == 0:
		return time.Unix(0, up.first).UTC()
	case up.stats.Packets == 0:
		return time.Unix(0, down.first).UTC()
	}
	return time.Unix(0, min(down.first, up.first)).UTC()
}

// lossRTT is the RTT used to group losses into events: the ping estimate,
// else 100 ms (ratecalc's initial RTT). Never the ack-based estimate: it is
// biased both ways (OpenSim's acks lag by up to 500 ms, its immediate ack of
// UseCircuitCode by nothing at all).
func (c *Circuit) lossRTT() time.Duration {
	if c.m.rtt.Samples() > 0 {
		return c.m.rtt.SRTT()
	}
	return 100 * time.Millisecond
}

// InvalidReason says why a datagram on a game port was not LLUDP.
type InvalidReason uint8

const (
	InvalidTruncated InvalidReason = iota
	InvalidAckTrailer
	InvalidUnknownMessage
	InvalidZeroCode
	InvalidBody
	numInvalidReasons
)

var invalidReasonNames = [numInvalidReasons]string{"truncated", "ack_trailer", "unknown_message", "zero_code_overflow", "malformed_body"}

func (r InvalidReason) String() string {
	if r < numInvalidReasons {
		return invalidReasonNames[r]
	}
	return "unknown"
}

func invalidReason(err error) InvalidReason {
	switch {
	case errors.Is(err, lludp.ErrAckTrailer):
		return InvalidAckTrailer
	case errors.Is(err, lludp.ErrUnknownMessage):
		return InvalidUnknownMessage
	case errors.Is(err, lludp.ErrZeroCodeOverflow):
		return InvalidZeroCode
	case errors.Is(err, lludp.ErrTruncated):
		return InvalidTruncated
	}
	return InvalidBody
}

// NoteInjected records a request sent in the viewer's name (an injected or
// rewritten AgentThrottle's throttles): an AgentThrottle that carries it
// or the one before it is fairgrid's, not the viewer's, and leaves
// ViewerThrottle as it was.
// A candidate is not measured and has nothing sent in its name.
func (c *Circuit) NoteInjected(throttles [lludp.NumCategories]float32) {
	m := c.m
	if c.Candidate() || m.ninjected > 0 && m.injected[0] == throttles {
		return
	}
	m.injected[1], m.injected[0] = m.injected[0], throttles
	m.ninjected = min(m.ninjected+1, len(m.injected))
}

func (c *Circuit) wasInjected(throttles [lludp.NumCategories]float32) bool {
	for i := range c.m.ninjected {
		if c.m.injected[i] == throttles {
			return true
		}
	}
	return false
}

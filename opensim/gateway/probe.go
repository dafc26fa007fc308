package gateway

import (
	"container/list"
	"net/netip"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
)

// A probe proves a viewer's address before the gateway spends anything on
// it: no socket, no scheduler client, nothing sent to the region. The
// first UseCircuitCode from an endpoint is held, and the gateway answers
// it with one reliable StartPingCheck whose sequence number is drawn at
// random (24 bits, never 0). LLUDP asks a receiver to ack every reliable
// datagram, and the viewer does, in a PacketAck or appended to its next
// datagram: an ack of that number from the endpoint proves the sender
// hears the gateway there, as a TCP SYN cookie's echo (RFC 4987 §3.6) or
// QUIC's address validation (RFC 9000 §8.1) does. Then the circuit opens
// and the held UseCircuitCode goes to the region; its numbering towards
// the viewer continues from the probe's number, so the region's first
// datagrams are as unguessable.
//
// The rules taken:
//   - Anti-amplification (RFC 9000 §8): until the ack, the gateway sends
//     an endpoint at most antiAmplification (3) times the bytes it
//     received from it. A probe is 12 bytes against a UseCircuitCode's
//     46, and is sent again only when the viewer resends its
//     UseCircuitCode, within that budget.
//   - State, not a stateless cookie: a probe keeps the held
//     UseCircuitCode (the region must see it from the circuit's own
//     socket, and the viewer sends it once a second at most), about 200
//     bytes in all. Like WireGuard's cookie under load it costs no
//     handshake work: a map entry and a 12-byte send. MaxPending bounds
//     them globally and MaxPerPrefix per source /24 or /64; a full table
//     evicts its oldest probe only once that has lived PendingHold (1 s),
//     else the newcomer is refused, so a flood of F a second leaves each
//     probe max(PendingHold, MaxPending/F) to be answered (16,384 at
//     10,000 a second: 1.6 s).
//   - Guessing: a probe takes at most maxGuesses acks that name another
//     number; past that it is dropped. A blind spoofer validates a probe
//     with chance maxGuesses/2^24 (1 in a million).
type probe struct {
	key     circuitKey
	prefix  netip.Prefix
	created time.Time
	number  uint32 // the probe's sequence number, the proof
	in, out int    // bytes received from the endpoint and sent to it
	guesses int
	held    []byte // the UseCircuitCode
	m       lludp.UseCircuitCode
	el      *list.Element
}

// antiAmplification is how many times the bytes received from an
// unproven address the gateway sends it at most (RFC 9000 §8).
const antiAmplification = 3

// maxGuesses is how many wrong acks a probe takes before it is dropped.
const maxGuesses = 16

// PendingHold is how long a probe is kept at least, however hard a flood
// presses for its slot: several round trips of the longest paths (a
// satellite link's is 600 ms) and the viewer's ack delay (100 ms).
const PendingHold = time.Second

type probes struct {
	byKey    map[circuitKey]*probe
	prefixes map[netip.Prefix]int
	q        list.List // of *probe, oldest first
}

func newProbes() probes {
	return probes{byKey: map[circuitKey]*probe{}, prefixes: map[netip.Prefix]int{}}
}

// Reply is a datagram the core sends an endpoint itself: a probe.
type Reply struct {
	Route int
	To    netip.AddrPort
	B     []byte
}

// Replies appends to out the datagrams the core has for endpoints since
// the last call, and returns it: the shell sends each from Route's public
// socket.
func (g *Core) Replies(out []Reply) []Reply {
	out = append(out, g.replies...)
	clear(g.replies)
	g.replies = g.replies[:0]
	return out
}

// fromUnproven takes a datagram from an endpoint with no circuit: a
// UseCircuitCode starts or refreshes a probe, an ack of the probe's
// number opens the circuit. It returns the circuit opened and its held
// UseCircuitCode, or why nothing passed.
func (g *Core) fromUnproven(key circuitKey, h lludp.Header, acks lludp.AckList, b []byte, now time.Time) (*Viewer, []byte, Drop) {
	p := g.probes.byKey[key]
	if p == nil {
		if h.ID != lludp.UseCircuitCodeID {
			return g.drop(nil, Orphan)
		}
		var m lludp.UseCircuitCode
		if !g.decode(b, &m) {
			return g.drop(nil, Malformed) // decoded before anything is spent on it
		}
		if p = g.newProbe(key, m, b, now); p == nil {
			return g.drop(nil, Refused)
		}
		g.sendProbe(p, false)
		return g.drop(nil, Probing)
	}
	p.in += len(b)
	if h.ID == lludp.UseCircuitCodeID {
		var m lludp.UseCircuitCode
		if !g.decode(b, &m) {
			return g.drop(nil, Malformed)
		}
		if m != p.m {
			return g.drop(nil, Mismatch)
		}
		g.sendProbe(p, true) // the viewer resends: the probe may have been lost
		return g.drop(nil, Probing)
	}
	proven := false
	check := func(id uint32) {
		if id == p.number {
			proven = true
		} else {
			p.guesses++
		}
	}
	for i := range acks.Len() {
		check(acks.At(i))
	}
	if h.ID == lludp.PacketAckID && g.decode(b, &g.ack) {
		for _, id := range g.ack.IDs {
			check(id)
		}
	}
	switch {
	case proven:
		g.dropProbe(p)
		v := g.open(key.route, key.addr, p.number, now)
		if v == nil {
			return g.drop(nil, Refused)
		}
		v.agent, v.session, v.code = p.m.AgentID, p.m.SessionID, p.m.Code
		v.up += uint64(p.in)
		g.counts[Passed]++
		return v, p.held, Passed
	case p.guesses > maxGuesses:
		g.dropProbe(p)
		return g.drop(nil, BadProof)
	}
	return g.drop(nil, Probing)
}

// newProbe admits a probe, or returns nil when the caps refuse it: the
// circuits' (a probe that cannot open a circuit is not begun), the
// probes' per prefix, and the probes' in all, where the oldest makes
// room once it has lived PendingHold.
func (g *Core) newProbe(key circuitKey, m lludp.UseCircuitCode, b []byte, now time.Time) *probe {
	prefix := sourcePrefix(key.addr.Addr())
	if len(g.viewers) >= g.cfg.MaxViewers || g.prefixes[prefix] >= g.cfg.MaxPerPrefix ||
		g.probes.prefixes[prefix] >= g.cfg.MaxPerPrefix {
		return nil
	}
	if g.probes.q.Len() >= g.cfg.MaxPending {
		oldest := g.probes.q.Front().Value.(*probe)
		if now.Sub(oldest.created) < PendingHold {
			return nil
		}
		g.evicted++
		g.dropProbe(oldest)
	}
	p := &probe{key: key, prefix: prefix, created: now, number: g.probeNumber(), in: len(b), held: append([]byte(nil), b...), m: m}
	p.el = g.probes.q.PushBack(p)
	g.probes.byKey[key] = p
	g.probes.prefixes[prefix]++
	return p
}

// probeNumber draws a probe's sequence number: 24 bits, as the viewer's
// own wrap (renumber.go), never 0 (the out-of-band number).
func (g *Core) probeNumber() uint32 {
	for {
		if n := uint32(g.rand.Uint64()) & seqMask; n != 0 {
			return n
		}
	}
}

// sendProbe queues the probe's StartPingCheck for the shell, within the
// anti-amplification budget.
func (g *Core) sendProbe(p *probe, resent bool) {
	flags := lludp.FlagReliable
	if resent {
		flags |= lludp.FlagResent
	}
	b, err := lludp.AppendMessage(nil, lludp.Header{Flags: flags, Sequence: p.number}, &lludp.StartPingCheck{OldestUnacked: p.number}, nil)
	if err != nil || p.out+len(b) > antiAmplification*p.in {
		return
	}
	p.out += len(b)
	g.probesSent++
	g.replies = append(g.replies, Reply{Route: p.key.route, To: p.key.addr, B: b})
}

func (g *Core) dropProbe(p *probe) {
	if g.probes.byKey[p.key] != p {
		return
	}
	delete(g.probes.byKey, p.key)
	g.probes.q.Remove(p.el)
	if g.probes.prefixes[p.prefix]--; g.probes.prefixes[p.prefix] <= 0 {
		delete(g.probes.prefixes, p.prefix)
	}
}

// expireProbes drops the probes older than PendingTimeout.
func (g *Core) expireProbes(now time.Time) {
	for el := g.probes.q.Front(); el != nil; el = g.probes.q.Front() {
		p := el.Value.(*probe)
		if now.Sub(p.created) <= g.cfg.PendingTimeout {
			return
		}
		g.probesExpired++
		g.dropProbe(p)
	}
}

// EventKind is what happened to a circuit.
type EventKind uint8

const (
	EventOpened EventKind = iota
	EventClosed
)

// Event is a circuit opened or closed, for the shell's log.
type Event struct {
	Kind    EventKind
	Route   int
	ID      uint64
	Addr    netip.AddrPort
	Pending bool // closed before the viewer acked the region
}

// maxEvents bounds the events kept between the shell's looks: beyond it
// they count only.
const maxEvents = 256

func (g *Core) event(kind EventKind, v *Viewer) {
	if kind == EventOpened {
		g.openedTotal++
	} else {
		g.closedTotal++
	}
	if len(g.events) < maxEvents {
		g.events = append(g.events, Event{Kind: kind, Route: v.Route, ID: v.id, Addr: v.Addr, Pending: v.state == pending})
	}
}

// Events appends the circuits opened and closed since the last call (at
// most maxEvents; Counters has the totals) to out and returns it.
func (g *Core) Events(out []Event) []Event {
	out = append(out, g.events...)
	g.events = g.events[:0]
	return out
}

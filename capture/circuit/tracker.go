package circuit

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/ratecalc"
)

// Config says how to recognise circuits.
type Config struct {
	// Sims are known simulator endpoints; a zero port means any port of
	// that address. When set they decide which side is the simulator.
	Sims []netip.AddrPort
	// SimPorts decide the side when neither Sims nor a UseCircuitCode do: a
	// port in range is the simulator's; if both are, the lower one. Default
	// capture.SimPorts (9000–13100).
	SimPorts capture.Ports
	// Template decodes the datagrams; nil means lludp.Builtin().
	Template *lludp.Template
	// NewController, if set, makes the controller of each new circuit.
	NewController func(Key) ratecalc.Controller
}

// Tracker turns captured datagrams into per-circuit measurements. It is
// not safe for concurrent use; it allocates only when a circuit appears.
type Tracker struct {
	cfg      Config
	circuits map[Key]*Circuit
	order    []*Circuit // by first appearance

	packet lludp.Packet
	ping   lludp.StartPingCheck
	pong   lludp.CompletePingCheck
	ack    lludp.PacketAck
	use    lludp.UseCircuitCode
	upd    lludp.AgentUpdate
	move   lludp.CompleteAgentMovement
	thr    lludp.AgentThrottle

	invalid    [numInvalidReasons]uint64
	notCircuit uint64
}

// ErrNotCircuit is returned for a datagram that belongs to no circuit: its
// side cannot be told (no configured simulator, no UseCircuitCode, no port in
// the simulator range).
var ErrNotCircuit = errors.New("not a simulator circuit")

// NewTracker returns an empty tracker.
func NewTracker(cfg Config) *Tracker {
	if cfg.SimPorts == nil {
		cfg.SimPorts = capture.SimPorts
	}
	if cfg.Template == nil {
		cfg.Template = lludp.Builtin()
	}
	t := &Tracker{cfg: cfg, circuits: make(map[Key]*Circuit)}
	t.packet.Template = cfg.Template
	return t
}

// Invalid returns the datagrams rejected as not LLUDP, by reason.
func (t *Tracker) Invalid(r InvalidReason) uint64 { return t.invalid[r] }

// InvalidTotal is the sum over every reason.
func (t *Tracker) InvalidTotal() uint64 {
	var n uint64
	for _, x := range t.invalid {
		n += x
	}
	return n
}

// NotCircuit counts datagrams whose side could not be told.
func (t *Tracker) NotCircuit() uint64 { return t.notCircuit }

// Circuits returns every circuit in the order they appeared.
func (t *Tracker) Circuits() []*Circuit { return t.order }

// Circuit returns the circuit with key k, or nil.
func (t *Tracker) Circuit(k Key) *Circuit { return t.circuits[k] }

// Forget removes circuits silent since before the given time and returns
// how many went.
func (t *Tracker) Forget(before time.Time) int {
	n := 0
	t.order = slices.DeleteFunc(t.order, func(c *Circuit) bool {
		if c.Last().Before(before) {
			delete(t.circuits, c.Key)
			n++
			return true
		}
		return false
	})
	return n
}

// Observe measures one captured datagram and returns its circuit and
// direction. A datagram that is not valid LLUDP is counted under its reason
// and returned as an error wrapping the lludp sentinel; one that belongs to
// no circuit gives ErrNotCircuit.
func (t *Tracker) Observe(d capture.Datagram) (*Circuit, Direction, error) {
	h, acks, _, err := lludp.ParseHeader(d.Payload)
	if err != nil {
		t.invalid[invalidReason(err)]++
		return nil, 0, err
	}
	msg := t.cfg.Template.Lookup(h.ID)
	if msg == nil {
		t.invalid[InvalidUnknownMessage]++
		return nil, 0, fmt.Errorf("message number %v: %w", h.ID, lludp.ErrUnknownMessage)
	}
	c, dir := t.circuitOf(d.Src, d.Dst, msg.ID)
	if c == nil {
		t.notCircuit++
		return nil, 0, ErrNotCircuit
	}
	at := d.At.UnixNano()
	cat, ch := msg.Category(), msg.Channel()
	if needsBody(dir, msg.ID) {
		if err := t.packet.DecodeFromBytes(d.Payload); err != nil {
			t.invalid[invalidReason(err)]++
			return c, dir, err
		}
		if msg.ID == lludp.LayerDataID && len(t.packet.Body()) > 0 {
			cat = lludp.LayerCategory(t.packet.Body()[0])
		}
		t.learn(c, dir, at, d.At)
	}
	c.count(dir, h, len(d.Payload), cat, ch, d.At)
	if dir == Down && acks.Len() > 0 {
		for i := range acks.Len() {
			c.acked(acks.At(i), at)
		}
	}
	if dir == Up {
		if h.Sequence != 0 {
			c.UpSequence = h.Sequence
		}
		if h.Flags.Reliable() && !h.Flags.Resent() {
			c.reliable[c.nextRel] = sentRecord{at: at, seq: h.Sequence}
			c.nextRel = (c.nextRel + 1) % len(c.reliable)
		}
	}
	c.sequence(dir, h, len(d.Payload), d.At)
	return c, dir, nil
}

// needsBody says which messages the tracker decodes beyond the header.
func needsBody(dir Direction, id lludp.MessageID) bool {
	switch id {
	case lludp.StartPingCheckID, lludp.CompletePingCheckID:
		return true
	case lludp.PacketAckID, lludp.LayerDataID:
		return dir == Down
	case lludp.UseCircuitCodeID, lludp.AgentUpdateID, lludp.CompleteAgentMovementID, lludp.AgentThrottleID:
		return dir == Up
	}
	return false
}

// circuitOf finds or creates the circuit of a datagram from src to dst.
func (t *Tracker) circuitOf(src, dst netip.AddrPort, id lludp.MessageID) (*Circuit, Direction) {
	if c := t.circuits[Key{Viewer: src, Sim: dst}]; c != nil {
		return c, Up
	}
	if c := t.circuits[Key{Viewer: dst, Sim: src}]; c != nil {
		return c, Down
	}
	var dir Direction
	switch {
	case len(t.cfg.Sims) > 0 && isSim(t.cfg.Sims, dst):
		dir = Up
	case len(t.cfg.Sims) > 0 && isSim(t.cfg.Sims, src):
		dir = Down
	case len(t.cfg.Sims) > 0:
		return nil, 0
	case id == lludp.UseCircuitCodeID:
		dir = Up // only a viewer opens a circuit
	default:
		srcSim, dstSim := inPorts(t.cfg.SimPorts, src.Port()), inPorts(t.cfg.SimPorts, dst.Port())
		switch {
		case dstSim && (!srcSim || dst.Port() < src.Port()):
			dir = Up
		case srcSim:
			dir = Down
		default:
			return nil, 0
		}
	}
	k := Key{Viewer: src, Sim: dst}
	if dir == Down {
		k = Key{Viewer: dst, Sim: src}
	}
	c := &Circuit{Key: k}
	c.dirs[Down] = direction{circuit: c, which: Down}
	c.dirs[Up] = direction{circuit: c, which: Up}
	if t.cfg.NewController != nil {
		c.Controller = t.cfg.NewController(k)
	}
	t.circuits[k] = c
	t.order = append(t.order, c)
	return c, dir
}

func isSim(sims []netip.AddrPort, a netip.AddrPort) bool {
	for _, s := range sims {
		if s.Addr() == a.Addr() && (s.Port() == 0 || s.Port() == a.Port()) {
			return true
		}
	}
	return false
}

func inPorts(ports capture.Ports, p uint16) bool {
	for _, r := range ports {
		if p >= r.Lo && p <= r.Hi {
			return true
		}
	}
	return false
}

// count updates the volume counters of one datagram.
func (c *Circuit) count(dir Direction, h lludp.Header, size int, cat lludp.Category, ch lludp.Channel, at time.Time) {
	s := &c.dirs[dir].stats
	if s.First.IsZero() {
		s.First = at
	}
	if at.After(s.Last) {
		s.Last = at
	}
	s.Packets++
	s.Bytes += uint64(size)
	if h.Flags.Reliable() {
		s.Reliable++
	}
	if h.Flags.Resent() {
		s.Resent++
	}
	s.ByCategory[min(int(cat), lludp.NumCategories)] += uint64(size)
	s.ByChannel[min(int(ch), lludp.NumChannels)] += uint64(size)
}

// sequence applies the loss rules of protocol.md §12 to one datagram.
func (c *Circuit) sequence(dir Direction, h lludp.Header, size int, at time.Time) {
	d := &c.dirs[dir]
	if h.Sequence == 0 && !d.seq.continues(0) {
		d.stats.OutOfBand++
		return
	}
	d.rtt = c.lossRTT()
	kind := d.seq.observe(h.Sequence, h.Flags.Resent(), at.UnixNano(), d)
	counted := false // does this arrival count as a packet of the loss history?
	switch kind {
	case arrivalNew:
		counted = true
	case arrivalReordered:
		d.stats.Reordered++
		counted = true
	case arrivalSpurious:
		d.stats.SpuriousResends++
	case arrivalDuplicate:
		d.stats.Duplicates++
	case arrivalResync:
		d.stats.Resyncs++
		counted = true
	}
	if counted {
		d.loss.OnPacket(false, at, d.rtt)
	}
	if dir == Down && c.Controller != nil {
		c.Controller.OnPacket(ratecalc.Packet{At: at, Size: size, Repeat: !counted})
	}
}

// acked matches an ack from the simulator to the viewer's reliable packet.
func (c *Circuit) acked(seq uint32, at int64) {
	for i := range c.reliable {
		r := &c.reliable[i]
		if r.seq == seq && r.at != 0 {
			c.ackRTT.Add(time.Duration(at - r.at))
			r.at = 0 // one sample per packet
			return
		}
	}
}

// learn takes what the tracker needs from a decoded message.
func (t *Tracker) learn(c *Circuit, dir Direction, at int64, when time.Time) {
	p := &t.packet
	switch p.ID {
	case lludp.StartPingCheckID:
		if p.Unmarshal(&t.ping) == nil {
			pings := &c.pings
			if dir == Down {
				pings = &c.simPings
			}
			pings[t.ping.PingID%uint8(len(pings))] = pingRecord{at: at, id: t.ping.PingID, valid: true}
		}
	case lludp.CompletePingCheckID:
		if p.Unmarshal(&t.pong) == nil {
			pings, stats := &c.pings, &c.rtt // the sim answers the viewer's ping
			if dir == Up {
				pings, stats = &c.simPings, &c.localRTT
			}
			r := &pings[t.pong.PingID%uint8(len(pings))]
			if r.valid && r.id == t.pong.PingID {
				stats.Add(time.Duration(at - r.at))
				if dir == Down && c.Controller != nil {
					c.Controller.OnRTT(time.Duration(at-r.at), when)
				}
				r.valid = false
			}
		}
	case lludp.PacketAckID:
		if p.Unmarshal(&t.ack) == nil {
			for _, id := range t.ack.IDs {
				c.acked(id, at)
			}
		}
	case lludp.UseCircuitCodeID:
		if p.Unmarshal(&t.use) == nil {
			c.AgentID, c.SessionID, c.CircuitCode = t.use.AgentID, t.use.SessionID, t.use.Code
		}
	case lludp.AgentUpdateID:
		if p.Unmarshal(&t.upd) == nil {
			c.AgentID, c.SessionID = t.upd.AgentID, t.upd.SessionID
		}
	case lludp.CompleteAgentMovementID:
		if p.Unmarshal(&t.move) == nil {
			c.AgentID, c.SessionID, c.CircuitCode = t.move.AgentID, t.move.SessionID, t.move.CircuitCode
			c.ArrivedAt = when
		}
	case lludp.AgentThrottleID:
		if p.Unmarshal(&t.thr) != nil {
			break
		}
		// One with other IDs than the circuit's is not the viewer's, and a
		// simulator ignores it (protocol.md §13.1b).
		if c.Known() && (t.thr.AgentID != c.AgentID || t.thr.SessionID != c.SessionID) {
			break
		}
		c.ViewerThrottle, c.ViewerThrottleAt = t.thr.Throttles, when
		if !c.Known() {
			c.AgentID, c.SessionID = t.thr.AgentID, t.thr.SessionID
		}
	}
}

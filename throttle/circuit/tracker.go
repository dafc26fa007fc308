package circuit

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

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
	// lludp.SimPorts (9000–13100).
	SimPorts lludp.Ports
	// Template decodes the datagrams; nil means lludp.Builtin().
	Template *lludp.Template
	// NewController, if set, makes the controller of each circuit when it
	// is promoted from a candidate.
	NewController func(Key) ratecalc.Controller
	// MaxCircuits bounds the circuits tracked (0: unlimited). A circuit
	// promoted beyond it evicts one first: the least recently active of
	// those whose identity is unknown, else the least recently active.
	MaxCircuits int
	// OnEvict, if set, is called with the key of each evicted circuit,
	// synchronously from Observe, so that owners drop their own state.
	OnEvict func(Key)
	// MaxCandidates bounds the candidates, endpoints that have not (yet)
	// carried enough LLUDP to be a circuit; beyond it the oldest is folded.
	// Default DefaultMaxCandidates.
	MaxCandidates int
}

// DefaultMaxCandidates is the default size of the candidate table: about
// 700 bytes an entry (TestCandidateMemory), 5.6 MiB in all. At 100,000 new
// spoofed sources a second a candidate lives 80 ms, while a real circuit
// carries its promoting datagram within milliseconds: the simulator
// answers UseCircuitCode at once (protocol.md §11.2).
const DefaultMaxCandidates = 8192

// Tracker turns captured datagrams into per-circuit measurements. It is
// not safe for concurrent use; it allocates only when a circuit appears or
// is promoted.
type Tracker struct {
	cfg      Config
	circuits map[Key]*Circuit // candidates and circuits
	order    []*Circuit       // circuits, by first appearance; removed ones until compacted
	hot      [2]*Circuit      // the latest circuits seen: most datagrams need no map lookup
	serial   uint64

	// Candidates, oldest first from next.
	ring          []*Circuit
	ringNext      int
	pending       int    // candidates in the ring
	pendingNotes  uint64 // datagrams they hold
	folded        uint64
	foldedNotes   uint64
	live, removed int // circuits in order, and removed ones still there
	evicted       uint64
	lists         [2]lruList // by Identity.Known, most recent first

	body   [numBodies]fastBody
	packet lludp.Packet
	ack    lludp.PacketAck
	thr    lludp.AgentThrottle
	expand [512]byte

	invalid    [numInvalidReasons]uint64
	notCircuit uint64
}

type lruList struct{ head, tail *Circuit }

// ErrNotCircuit is returned for a datagram that belongs to no circuit: its
// side cannot be told (no configured simulator, no UseCircuitCode, no port in
// the simulator range).
var ErrNotCircuit = errors.New("not a simulator circuit")

// NewTracker returns an empty tracker.
func NewTracker(cfg Config) *Tracker {
	if cfg.SimPorts == nil {
		cfg.SimPorts = lludp.SimPorts
	}
	if cfg.Template == nil {
		cfg.Template = lludp.Builtin()
	}
	if cfg.MaxCandidates <= 0 {
		cfg.MaxCandidates = DefaultMaxCandidates
	}
	t := &Tracker{cfg: cfg, circuits: make(map[Key]*Circuit)}
	t.packet.Template = cfg.Template
	t.body = fastBodies(cfg.Template)
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

// Folded is the number of endpoints dropped as candidates, never a
// circuit: the oldest when the candidate table was full, or idle ones that
// Forget removed. FoldedDatagrams is what they carried, and the datagrams
// a full candidate could not hold (see the package documentation).
func (t *Tracker) Folded() uint64 { return t.folded }

// FoldedDatagrams: see Folded.
func (t *Tracker) FoldedDatagrams() uint64 { return t.foldedNotes }

// Candidates returns the endpoints waiting to become circuits and the
// datagrams they hold.
func (t *Tracker) Candidates() (endpoints int, datagrams uint64) { return t.pending, t.pendingNotes }

// Evicted is the number of circuits evicted to stay within MaxCircuits.
func (t *Tracker) Evicted() uint64 { return t.evicted }

// Circuits returns every circuit in the order they appeared. Candidates
// are not among them. The slice is the tracker's, valid until the next
// Observe or Forget: do not modify it.
func (t *Tracker) Circuits() []*Circuit {
	t.compact()
	return t.order
}

// compact drops removed circuits from order into a new slice, so that a
// slice handed out earlier keeps its contents.
func (t *Tracker) compact() {
	if t.removed == 0 {
		return
	}
	kept := make([]*Circuit, 0, t.live)
	for _, c := range t.order {
		if !c.removed {
			kept = append(kept, c)
		}
	}
	t.order, t.removed = kept, 0
}

// Circuit returns the circuit with key k, or nil; nil for a candidate.
func (t *Tracker) Circuit(k Key) *Circuit {
	if c := t.circuits[k]; c != nil && !c.Candidate() {
		return c
	}
	return nil
}

// Forget removes circuits silent since before the given time and returns
// how many went. Candidates silent as long are folded.
func (t *Tracker) Forget(before time.Time) int {
	ns := before.UnixNano()
	n := 0
	for _, c := range t.order {
		if !c.removed && c.lastNs() < ns {
			t.remove(c)
			n++
		}
	}
	t.compact()
	for i, c := range t.ring {
		if c != nil && c.seen < ns {
			t.fold(c)
			t.ring[i] = nil
		}
	}
	return n
}

// ForgetViewer removes the circuits of one viewer endpoint, as when a
// proxy's association ends: the viewer is gone, and waiting for it to
// idle out would keep sending in its name. It returns how many went.
func (t *Tracker) ForgetViewer(viewer netip.AddrPort) int {
	n := 0
	for _, c := range t.order {
		if !c.removed && c.Key.Viewer == viewer {
			t.remove(c)
			n++
		}
	}
	t.compact()
	return n
}

// Observe measures one captured datagram and returns its circuit and
// direction; the circuit may be a candidate (Circuit.Candidate). A datagram
// that is not valid LLUDP is counted under its reason and returned as an
// error wrapping the lludp sentinel; one that belongs to no circuit gives
// ErrNotCircuit.
func (t *Tracker) Observe(d lludp.Datagram) (*Circuit, Direction, error) {
	h, acks, end, err := lludp.ParseHeader(d.Payload)
	if err != nil {
		t.invalid[invalidReason(err)]++
		return nil, 0, err
	}
	msg := t.cfg.Template.Lookup(h.ID)
	if msg == nil {
		t.invalid[InvalidUnknownMessage]++
		return nil, 0, fmt.Errorf("message number %v: %w", h.ID, lludp.ErrUnknownMessage)
	}
	c, dir := t.find(d.Src, d.Dst)
	if c == nil {
		if c, dir = t.open(d.Src, d.Dst, msg.ID); c == nil {
			t.notCircuit++
			return nil, 0, ErrNotCircuit
		}
	}
	n := note{at: d.At.UnixNano(), seq: h.Sequence, size: uint32(len(d.Payload)), flags: h.Flags,
		cat: msg.Category(), ch: lludp.ChannelOf(msg), dir: dir}
	if needsBody(dir, msg.ID) {
		if err := t.learn(c, &n, d, h, end); err != nil {
			t.invalid[invalidReason(err)]++
			return c, dir, err
		}
	}
	if dir == Down && msg.ID == lludp.LogoutReplyID {
		c.LogoutAt = d.At
	}
	if c.Candidate() {
		t.candidate(c, &n)
		return c, dir, nil
	}
	if t.cfg.MaxCircuits > 0 {
		t.touch(c)
	}
	t.apply(c, &n, acks)
	return c, dir, nil
}

// find returns the circuit or candidate of a datagram from src to dst.
func (t *Tracker) find(src, dst netip.AddrPort) (*Circuit, Direction) {
	for i, c := range t.hot {
		if c == nil {
			break
		}
		dir := Up
		if src != c.Key.Viewer || dst != c.Key.Sim {
			if src != c.Key.Sim || dst != c.Key.Viewer {
				continue
			}
			dir = Down
		}
		if i > 0 {
			t.hot[0], t.hot[1] = c, t.hot[0]
		}
		return c, dir
	}
	c, dir := t.circuits[Key{Viewer: src, Sim: dst}], Up
	if c == nil {
		if c, dir = t.circuits[Key{Viewer: dst, Sim: src}], Down; c == nil {
			return nil, 0
		}
	}
	t.hot[0], t.hot[1] = c, t.hot[0]
	return c, dir
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

// open makes a candidate for a datagram from src to dst, or returns nil
// when the simulator's side cannot be told.
func (t *Tracker) open(src, dst netip.AddrPort, id lludp.MessageID) (*Circuit, Direction) {
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
		srcSim, dstSim := t.cfg.SimPorts.Contains(src.Port()), t.cfg.SimPorts.Contains(dst.Port())
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
	t.serial++
	c := &Circuit{Key: k, m: &candidateMeasures, serial: t.serial, list: -1}
	t.circuits[k] = c
	t.hot[0], t.hot[1] = c, t.hot[0]
	// The ring holds the candidates in the order they came; once full, the
	// slot to fill next holds the oldest.
	if len(t.ring) < t.cfg.MaxCandidates {
		c.slot = int32(len(t.ring))
		t.ring = append(t.ring, c)
	} else {
		if old := t.ring[t.ringNext]; old != nil {
			t.fold(old)
		}
		c.slot = int32(t.ringNext)
		t.ring[t.ringNext] = c
		t.ringNext = (t.ringNext + 1) % len(t.ring)
	}
	t.pending++
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

// fold drops candidate c, which never became a circuit. The caller clears
// its ring slot.
func (t *Tracker) fold(c *Circuit) {
	delete(t.circuits, c.Key)
	c.removed = true
	t.unhot(c)
	t.pending--
	t.pendingNotes -= uint64(c.nnotes)
	t.folded++
	t.foldedNotes += uint64(c.nnotes)
}

func (t *Tracker) unhot(c *Circuit) {
	if t.hot[1] == c {
		t.hot[1] = nil
	}
	if t.hot[0] == c {
		t.hot[0], t.hot[1] = t.hot[1], nil
	}
}

// candidate takes datagram n of candidate c: it promotes c or holds n.
func (t *Tracker) candidate(c *Circuit, n *note) {
	c.seen = max(c.seen, n.at)
	if c.promotedBy(n) {
		t.promote(c)
		t.apply(c, n, lludp.AckList{})
		return
	}
	if c.nnotes == maxNotes {
		t.foldedNotes++ // a third datagram that neither advances nor answers
		return
	}
	// What a held datagram acknowledges or answers cannot be on the
	// candidate: its held datagrams all go the same way.
	if n.kind != startPing {
		n.kind = noKind
	}
	c.notes[c.nnotes] = *n
	c.nnotes++
	t.pendingNotes++
}

// promote makes candidate c a circuit and replays what it held.
func (t *Tracker) promote(c *Circuit) {
	t.ring[c.slot] = nil
	c.slot = -1
	t.pending--
	t.pendingNotes -= uint64(c.nnotes)
	if t.cfg.MaxCircuits > 0 && t.live >= t.cfg.MaxCircuits {
		t.evict()
	}
	c.m = &measures{}
	c.m.dirs[Down] = direction{circuit: c, which: Down}
	c.m.dirs[Up] = direction{circuit: c, which: Up}
	if t.cfg.NewController != nil {
		c.Controller = t.cfg.NewController(c.Key)
	}
	if t.removed > 64 && t.removed > t.live {
		t.compact()
	}
	if i := len(t.order); i == 0 || t.order[i-1].serial < c.serial {
		t.order = append(t.order, c)
	} else {
		// Promoted after a younger one: its place is by appearance.
		i, _ := slices.BinarySearchFunc(t.order, c.serial, func(o *Circuit, s uint64) int {
			return int(o.serial - s) // serials are far below 2^63 apart
		})
		t.order = slices.Insert(slices.Clone(t.order), i, c)
	}
	t.live++
	if t.cfg.MaxCircuits > 0 {
		t.touch(c)
	}
	for i := range c.nnotes {
		t.apply(c, &c.notes[i], lludp.AckList{})
	}
	c.nnotes = 0
}

// evict removes the circuit to make room for another: the least recently
// active of those whose identity is unknown, else of all.
func (t *Tracker) evict() {
	v := t.lists[0].tail
	if v == nil {
		v = t.lists[1].tail
	}
	if v == nil {
		return
	}
	t.remove(v)
	t.evicted++
	if t.cfg.OnEvict != nil {
		t.cfg.OnEvict(v.Key)
	}
}

// remove takes circuit c out of the tracker; compact drops it from order.
func (t *Tracker) remove(c *Circuit) {
	delete(t.circuits, c.Key)
	c.removed = true
	t.unhot(c)
	t.unlink(c)
	t.live--
	t.removed++
}

// touch moves c to the front of its eviction list, the list of its
// identity's state.
func (t *Tracker) touch(c *Circuit) {
	want := int8(0)
	if c.Known() {
		want = 1
	}
	if c.list == want && t.lists[want].head == c {
		return
	}
	t.unlink(c)
	l := &t.lists[want]
	c.list, c.prev, c.next = want, nil, l.head
	if l.head != nil {
		l.head.prev = c
	} else {
		l.tail = c
	}
	l.head = c
}

func (t *Tracker) unlink(c *Circuit) {
	if c.list < 0 {
		return
	}
	l := &t.lists[c.list]
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		l.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		l.tail = c.prev
	}
	c.prev, c.next, c.list = nil, nil, -1
}

// apply measures datagram n on circuit c; acks are its appended acks.
func (t *Tracker) apply(c *Circuit, n *note, acks lludp.AckList) {
	m := c.m
	switch n.kind {
	case startPing:
		pings := &m.pings
		if n.dir == Down {
			pings = &m.simPings
		}
		pings[n.ping%uint8(len(pings))] = pingRecord{at: n.at, id: n.ping, valid: true}
	case completePing:
		pings, stats := &m.pings, &m.rtt // the sim answers the viewer's ping
		if n.dir == Up {
			pings, stats = &m.simPings, &m.localRTT
		}
		r := &pings[n.ping%uint8(len(pings))]
		if r.valid && r.id == n.ping {
			stats.Add(time.Duration(n.at - r.at))
			if n.dir == Down && c.Controller != nil {
				c.Controller.OnRTT(time.Duration(n.at-r.at), time.Unix(0, n.at))
			}
			r.valid = false
		}
	case packetAck:
		for _, id := range t.ack.IDs {
			c.acked(id, n.at)
		}
	}
	c.count(n)
	if n.dir == Down {
		for i := range acks.Len() {
			c.acked(acks.At(i), n.at)
		}
	} else {
		if n.seq != 0 {
			c.UpSequence = n.seq
		}
		if n.flags.Reliable() && !n.flags.Resent() {
			m.reliable[m.nextRel] = sentRecord{at: n.at, seq: n.seq}
			m.nextRel = (m.nextRel + 1) % len(m.reliable)
		}
	}
	c.sequence(n)
}

// count updates the volume counters of one datagram.
func (c *Circuit) count(n *note) {
	d := &c.m.dirs[n.dir]
	s := &d.stats
	if s.Packets == 0 {
		d.first, d.last = n.at, n.at
	} else if n.at > d.last {
		d.last = n.at
	}
	s.Packets++
	s.Bytes += uint64(n.size)
	if n.flags.Reliable() {
		s.Reliable++
	}
	if n.flags.Resent() {
		s.Resent++
		s.ResentBytes += uint64(n.size)
	}
	s.ByCategory[min(int(n.cat), lludp.NumCategories)] += uint64(n.size)
	s.ByChannel[min(int(n.ch), lludp.NumChannels)] += uint64(n.size)
}

// sequence applies the loss rules of protocol.md §12 to one datagram.
func (c *Circuit) sequence(n *note) {
	d := &c.m.dirs[n.dir]
	if n.seq == 0 && !d.seq.continues(0) {
		d.stats.OutOfBand++
		return
	}
	d.rtt = c.lossRTT()
	kind := d.seq.observe(n.seq, n.flags.Resent(), n.at, d)
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
		d.loss.OnPacket(false, time.Unix(0, n.at), d.rtt)
	}
	if n.dir == Down && c.Controller != nil {
		c.Controller.OnPacket(ratecalc.Packet{At: time.Unix(0, n.at), Size: int(n.size), Repeat: !counted})
	}
}

// acked matches an ack from the simulator to the viewer's reliable packet.
func (c *Circuit) acked(seq uint32, at int64) {
	for i := range c.m.reliable {
		r := &c.m.reliable[i]
		if r.seq == seq && r.at != 0 {
			c.m.ackRTT.Add(time.Duration(at - r.at))
			r.at = 0 // one sample per packet
			return
		}
	}
}

// identify takes the AgentID and SessionID a viewer→simulator datagram
// carried (see Circuit.IdentityDatagrams).
func (c *Circuit) identify(agent, session lludp.UUID, at time.Time) {
	if agent == c.AgentID && session == c.SessionID {
		if c.Known() {
			c.IdentityDatagrams++
		}
		return
	}
	if c.Known() {
		c.IdentityConflicts++
	}
	c.AgentID, c.SessionID = agent, session
	c.IdentityDatagrams, c.IdentitySince = 0, time.Time{}
	if c.Known() {
		c.IdentityDatagrams, c.IdentitySince = 1, at
	}
}

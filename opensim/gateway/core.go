package gateway

import (
	"container/list"
	cryptorand "crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
)

// Drop says why the gateway did not pass a datagram on.
type Drop uint8

const (
	Passed    Drop = iota
	Malformed      // not LLUDP: the header does not parse
	Orphan         // from an endpoint with no circuit, and not a UseCircuitCode
	Refused        // a UseCircuitCode the caps refused (MaxViewers, MaxPending, MaxPerPrefix)
	QueueFull      // the region's datagram found its channel's queue full (tail drop)
	// ResendQueued: the region resent a datagram whose original is still
	// queued in the gateway; the original will do.
	ResendQueued
	// Probing: a datagram from an endpoint whose address is not proven
	// yet (probe.go): a UseCircuitCode held, or the viewer's answer to
	// the probe, which is the gateway's own.
	Probing
	// BadProof: a probed endpoint acked numbers it was never sent; past
	// maxGuesses its probe is dropped.
	BadProof
	// Mismatch: a UseCircuitCode whose circuit code, agent or session
	// differs from the circuit's (or the probe's) at that endpoint: a
	// spoofed one cannot reset a viewer's circuit.
	Mismatch
	// UpLimited: over the circuit's upstream bound (Config.UpMax).
	UpLimited
	numDrops
)

var dropNames = [numDrops]string{"passed", "malformed", "orphan", "refused", "queue_full", "resend_queued", "probing", "bad_proof", "mismatch", "up_limited"}

func (d Drop) String() string {
	if d < numDrops {
		return dropNames[d]
	}
	return fmt.Sprintf("Drop(%d)", uint8(d))
}

type viewerState uint8

const (
	// pending: the viewer's address is proven (probe.go) and its
	// UseCircuitCode passed; it has not yet acked a datagram of the
	// region's.
	pending viewerState = iota
	active
	closing // logged out or closed: removed after Linger
)

// circuitKey names a viewer's circuit: its endpoint on one route.
type circuitKey struct {
	route int
	addr  netip.AddrPort
}

// Viewer is one viewer circuit through the gateway. The shell reads Key,
// Route and Conn; the rest is the core's.
type Viewer struct {
	Route int
	Addr  netip.AddrPort
	// Conn is the shell's socket towards the region for this circuit.
	Conn any

	state   viewerState
	sched   opensim.ClientID
	prefix  netip.Prefix
	created time.Time
	seen    time.Time // the viewer's latest datagram
	closeAt time.Time
	pendEl  *list.Element

	agent, session lludp.UUID
	code           uint32
	upSeq          uint32 // the viewer's latest sequence number
	id             uint64 // the circuit's ordinal since start: its name in metrics unless viewers are identified

	// The upstream bound (Config.UpMax): a token bucket in bytes.
	upTokens float64
	upAt     time.Time

	asked      [lludp.NumCategories]float32 // the viewer's own AgentThrottle, bits/s
	askedTotal ratecalc.Rate                // its total, bytes/s; 0: none seen yet
	fair       ratecalc.Rate                // the controller's latest decision, clamped; 0: none yet
	rate       ratecalc.Rate                // in force: min(asked, fair), or min(the default, fair) before any ask
	split      bool                         // the scheduler holds rates the gateway set, not its defaults
	asserted   ratecalc.Rate                // the last total the region was told
	// assertedSplit is the split the region was last told; fromRegion the
	// bytes the region sent per throttle category (a resend in Resend, as
	// OpenSim charges it), usedMark and usedAt their reading at the last
	// decision, used what each category carried since then, bits/s: the
	// demand the split follows (throttle.DemandSplit).
	assertedSplit [lludp.NumCategories]float32
	fromRegion    [lludp.NumCategories]uint64
	usedMark      [lludp.NumCategories]uint64
	usedAt        time.Time
	used          [lludp.NumCategories]float64
	sinceSent     int // decisions since a request was sent
	nextDecide    time.Time

	est *estimator
	seq renumber // the region's sequence numbers as the viewer sees them
	// queuedReliable holds the region's numbers of the reliable originals
	// waiting in the scheduler: a resend of one is dropped, since with
	// departure numbering it would reach the viewer under a new number
	// and flagged as a resend, which a loss detector reads as a loss.
	queuedReliable map[uint32]struct{}

	delay   [opensim.NumChannels]delayStat
	sent    [opensim.NumChannels]uint64 // bytes sent to the viewer
	refused [opensim.NumChannels]uint64 // datagrams dropped at a full queue
	up      uint64                      // bytes from the viewer
}

// delayStat is a channel's queueing delay: count, sum and the largest.
type delayStat struct {
	n        uint64
	sum, max time.Duration
}

func (d *delayStat) add(x time.Duration) {
	d.n++
	d.sum += x
	d.max = max(d.max, x)
}

// queued is a region datagram waiting in the scheduler.
type queued struct {
	v   *Viewer
	b   []byte
	seq uint32
	at  time.Time // when it arrived
	rel bool
}

// Out is a datagram the shell sends to a viewer.
type Out struct {
	V *Viewer
	B []byte
}

// Assert is an AgentThrottle the shell sends to the region from a viewer's
// socket: the gateway's rate for that circuit.
type Assert struct {
	V *Viewer
	B []byte
}

// Core is the gateway without sockets: it admits circuits, passes the
// viewers' datagrams on (rewriting AgentThrottle), schedules the region's,
// measures each circuit and decides its rate. Every method takes the time;
// none reads the clock or starts a goroutine, and the caller serialises
// calls.
type Core struct {
	cfg      Config
	sched    *opensim.Scheduler[queued]
	viewers  map[circuitKey]*Viewer
	byClient map[opensim.ClientID]*Viewer
	prefixes map[netip.Prefix]int
	pendingQ list.List // of *Viewer, oldest first
	probes   probes    // endpoints whose address is not proven yet (probe.go)
	rand     *rand.ChaCha8
	opened   uint64 // circuits opened since start: the next one's id
	events   []Event
	replies  []Reply

	viewerCap    int           // MaxViewers' ceiling from the open-file limit (0: none)
	defaultTotal ratecalc.Rate // the scheduler's default rate for a new client, bytes/s

	probesSent, probesExpired uint64
	openedTotal, closedTotal  uint64
	packet                    lludp.Packet
	ack                       lludp.PacketAck
	items                     [64]opensim.Item[queued]
	rewrite                   []byte
	now                       time.Time // the latest time given: readers' times interleave
	gone                      []*Viewer // removed since the shell last asked (Gone)

	counts   [numDrops]uint64
	evicted  uint64 // probes evicted to make room (each at least PendingHold old)
	expired  uint64 // circuits closed by a timeout
	asserts  uint64 // AgentThrottles sent by the gateway
	rewrites uint64 // viewer AgentThrottles rewritten in flight
}

// NewCore validates cfg and returns a core with no circuits.
func NewCore(cfg Config) (*Core, error) {
	c, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	sched, err := opensim.New[queued](c.Scheduler)
	if err != nil {
		return nil, err
	}
	// The probes' numbers and each circuit's first sequence number come
	// from ChaCha8 keyed from Rand (crypto/rand unless a test injects a
	// seeded source): a blind spoofer must guess them.
	var seed [32]byte
	src := c.Rand
	if src == nil {
		src = cryptorand.Reader
	}
	if _, err := io.ReadFull(src, seed[:]); err != nil {
		return nil, fmt.Errorf("gateway: seed: %w", err)
	}
	return &Core{cfg: c, sched: sched, viewers: map[circuitKey]*Viewer{}, byClient: map[opensim.ClientID]*Viewer{},
		prefixes: map[netip.Prefix]int{}, probes: newProbes(), rand: rand.NewChaCha8(seed)}, nil
}

// clock returns now, or the latest time given if now is earlier: the
// shell's readers stamp datagrams on several goroutines, so their times
// interleave by microseconds, and the scheduler must not see time go back.
func (g *Core) clock(now time.Time) time.Time {
	if now.Before(g.now) {
		return g.now
	}
	g.now = now
	return now
}

// Config returns the configuration, defaults filled in.
func (g *Core) Config() Config { return g.cfg }

// sourcePrefix is the block a source address shares its cap with: a /24
// is the smallest IPv4 block routed on the Internet, a /64 the smallest
// IPv6 subnet a host is given.
func sourcePrefix(a netip.Addr) netip.Prefix {
	a = a.Unmap()
	bits := 64
	if a.Is4() {
		bits = 24
	}
	p, _ := a.Prefix(bits)
	return p
}

// FromViewer takes a datagram from src on route. It returns the circuit
// and the bytes to send to the region from that circuit's socket (b
// itself, the held UseCircuitCode of a circuit the call opened, or the
// core's buffer with a rewritten AgentThrottle, valid until the next
// call), or why nothing is sent. A circuit the call opened has a nil
// Conn: the shell gives it its socket, or calls Remove. What the core
// sends the endpoint itself (a probe) the shell takes with Replies.
func (g *Core) FromViewer(route int, src netip.AddrPort, b []byte, now time.Time) (*Viewer, []byte, Drop) {
	now = g.clock(now)
	h, acks, _, err := lludp.ParseHeader(b)
	if err != nil || route < 0 || route >= len(g.cfg.Routes) {
		return g.drop(nil, Malformed)
	}
	key := circuitKey{route, src}
	v := g.viewers[key]
	if v != nil && h.ID == lludp.UseCircuitCodeID {
		var m lludp.UseCircuitCode
		if !g.decode(b, &m) {
			return g.drop(nil, Malformed)
		}
		if m.AgentID != v.agent || m.SessionID != v.session || m.Code != v.code {
			if v.state != closing {
				// Never a reset: a spoofed UseCircuitCode from a viewer's
				// endpoint would restart its numbering (issue 34).
				return g.drop(nil, Mismatch)
			}
			// A new login from the endpoint of a circuit that logged
			// out: it starts with a probe of its own.
			g.remove(v, now)
			v = nil
		}
	}
	if v == nil {
		return g.fromUnproven(key, h, acks, b, now)
	}
	if !g.upAllowed(v, len(b), now) {
		return g.drop(nil, UpLimited)
	}
	v.seen = now
	v.up += uint64(len(b))
	if h.Sequence != 0 && !h.Flags.Resent() {
		v.upSeq = h.Sequence
	}
	v.est.upDatagram(h.Sequence, h.Flags.Resent(), now)
	for i := range acks.Len() {
		g.viewerAck(v, acks.At(i), now)
	}
	v.seq.translateAcks(b, acks)
	out := b
	switch h.ID {
	case lludp.PacketAckID:
		if g.decode(b, &g.ack) {
			for _, id := range g.ack.IDs {
				g.viewerAck(v, id, now)
			}
			out = g.translatePacketAck(v, b, h)
		}
	case lludp.CompletePingCheckID:
		var m lludp.CompletePingCheck
		if g.decode(b, &m) {
			v.est.viewerPong(m.PingID, now)
		}
	case lludp.AgentThrottleID:
		out = g.viewerThrottle(v, b, now)
	case lludp.CloseCircuitID:
		g.close(v, now)
	}
	g.counts[Passed]++
	return v, out, Passed
}

func (g *Core) drop(v *Viewer, d Drop) (*Viewer, []byte, Drop) {
	g.counts[d]++
	return v, nil, d
}

// upAllowed charges a viewer datagram of n bytes to the circuit's
// upstream bound: a token bucket of UpMax bytes a second, one second
// deep. Each datagram costs at least minUpCost, its IP and UDP headers
// counted, so a flood of tiny PacketAcks is bounded in datagrams too.
func (g *Core) upAllowed(v *Viewer, n int, now time.Time) bool {
	limit := float64(g.cfg.UpMax)
	v.upTokens = min(limit, v.upTokens+now.Sub(v.upAt).Seconds()*limit)
	v.upAt = now
	cost := float64(max(minUpCost, n+28))
	if v.upTokens < cost {
		return false
	}
	v.upTokens -= cost
	return true
}

// startDecide is how often a circuit's rate follows its controller
// during its first Interval: the Tick's period, a few loopback round
// trips, a fraction of an Internet one.
const startDecide = 100 * time.Millisecond

// minUpCost is the least a viewer datagram costs its upstream bound, in
// bytes: a viewer's smallest datagrams (acks, pings) are tens of bytes,
// and it sends tens a second, not thousands.
const minUpCost = 100

func (g *Core) decode(b []byte, m lludp.Typed) bool {
	return g.packet.DecodeFromBytes(b) == nil && g.packet.Unmarshal(m) == nil
}

// translatePacketAck writes the region's numbers over the viewer's in a
// PacketAck's body (u32 LE each), in place when it is not zero-coded,
// else into a new datagram coded again. g.ack holds it decoded; its
// appended acks were translated already.
func (g *Core) translatePacketAck(v *Viewer, b []byte, h lludp.Header) []byte {
	ids := g.ack.IDs
	if !h.Flags.ZeroCoded() {
		// Header, the four bytes of PacketAck's Fixed number, any extra
		// header, the count, then the IDs.
		off := lludp.HeaderSize + 4 + int(h.Extra)
		_, _, end, err := lludp.ParseHeader(b)
		if err == nil && off < end && int(b[off]) == len(ids) && off+1+4*len(ids) <= end {
			for i, id := range ids {
				binary.LittleEndian.PutUint32(b[off+1+4*i:], v.seq.region(id))
			}
			return b
		}
	}
	translated := make([]uint32, len(ids))
	for i, id := range ids {
		translated[i] = v.seq.region(id)
	}
	_, acks, _, err := lludp.ParseHeader(b)
	if err != nil {
		return b
	}
	out, err := lludp.AppendMessage(nil, lludp.Header{Flags: h.Flags, Sequence: h.Sequence}, &lludp.PacketAck{IDs: translated}, acks.AppendTo(nil))
	if err != nil {
		return b
	}
	return out
}

// viewerAck takes the viewer's ack of the region's seq: the estimator's
// input, and the proof that a pending circuit's viewer hears the region.
func (g *Core) viewerAck(v *Viewer, seq uint32, now time.Time) {
	before := v.est.stats.Acked
	v.est.acked(seq, now)
	if v.est.stats.Acked != before {
		g.activate(v)
	}
}

// open admits a circuit whose address a probe proved, or returns nil
// when the caps refuse it. Its numbering towards the viewer continues
// from the probe's number, which only a receiver of the probe knows, and
// its rate is the fair rate's first value (the controller's initial
// window) until the viewer asks for less: never the scheduler's default.
func (g *Core) open(route int, src netip.AddrPort, first uint32, now time.Time) *Viewer {
	prefix := sourcePrefix(src.Addr())
	if g.prefixes[prefix] >= g.cfg.MaxPerPrefix || len(g.viewers) >= g.cfg.MaxViewers {
		return nil
	}
	ctl, err := g.cfg.Control.NewController(g.cfg.Control.Controller)
	if err != nil {
		return nil // validated in NewCore: cannot happen
	}
	g.opened++
	v := &Viewer{Route: route, Addr: src, state: pending, prefix: prefix, created: now, seen: now, id: g.opened,
		sched: g.sched.AddClient(now), est: newEstimator(ctl), queuedReliable: map[uint32]struct{}{}, nextDecide: now.Add(startDecide),
		upTokens: float64(g.cfg.UpMax), upAt: now}
	v.seq.next = first
	if g.defaultTotal == 0 {
		_, total, _ := g.sched.Rates(v.sched) // a new client's: the defaults
		g.defaultTotal = ratecalc.Rate(total)
	}
	v.pendEl = g.pendingQ.PushBack(v)
	g.viewers[circuitKey{route, src}] = v
	g.byClient[v.sched] = v
	g.prefixes[prefix]++
	v.fair = g.cfg.Control.Clamp(ctl.Rate(now))
	g.apply(v, now)
	g.event(EventOpened, v)
	return v
}

func (g *Core) activate(v *Viewer) {
	if v.state == pending {
		g.pendingQ.Remove(v.pendEl)
		v.pendEl = nil
		v.state = active
	}
}

func (g *Core) close(v *Viewer, now time.Time) {
	if v.state != closing {
		g.activate(v)
		v.state = closing
		v.closeAt = now.Add(g.cfg.Linger)
	}
}

// Remove forgets a circuit and what it had queued.
func (g *Core) Remove(v *Viewer, now time.Time) { g.remove(v, now) }

func (g *Core) remove(v *Viewer, now time.Time) {
	k := circuitKey{v.Route, v.Addr}
	if g.viewers[k] != v {
		return
	}
	if v.pendEl != nil {
		g.pendingQ.Remove(v.pendEl)
		v.pendEl = nil
	}
	delete(g.viewers, k)
	delete(g.byClient, v.sched)
	g.gone = append(g.gone, v)
	g.event(EventClosed, v)
	g.sched.RemoveClient(v.sched, now)
	if g.prefixes[v.prefix]--; g.prefixes[v.prefix] <= 0 {
		delete(g.prefixes, v.prefix)
	}
}

// viewerThrottle takes the viewer's own AgentThrottle: it is the most the
// viewer wants, and what it gets is the lesser of it and the fair rate,
// written over it in flight (the sequence number, flags and acks kept).
func (g *Core) viewerThrottle(v *Viewer, b []byte, now time.Time) []byte {
	var m lludp.AgentThrottle
	if !g.decode(b, &m) || m.ThrottlesLen != lludp.ThrottlesSize {
		return b // the region judges it as it would the viewer's
	}
	if v.agent.IsZero() || m.AgentID != v.agent || m.SessionID != v.session {
		return b // not this circuit's: the region ignores it too
	}
	v.asked = m.Throttles
	v.askedTotal = ratecalc.RateFromBits(m.Total())
	g.apply(v, now)
	split := g.splitOf(v)
	if v.rate >= v.askedTotal && throttle.SplitMoved(split, v.asked) < *g.cfg.Control.MinChange {
		return b
	}
	out, err := lludp.AppendReplacedThrottles(g.rewrite[:0], b, split)
	if err != nil {
		return b
	}
	g.rewrite = out
	g.rewrites++
	v.asserted, v.assertedSplit, v.sinceSent = v.rate, split, 0
	return out
}

// apply sets the circuit's rate in force, min(asked, fair), and the
// scheduler's rates for it: the viewer's own split, scaled.
func (g *Core) apply(v *Viewer, now time.Time) {
	v.rate = v.askedTotal
	if v.rate <= 0 {
		// Before the viewer's AgentThrottle: the lesser of the
		// scheduler's default (OpenSim's, 66,747 B/s, more than a new
		// circuit's fair share: reflected traffic rode on it) and the
		// fair rate.
		v.rate = g.defaultTotal
		if v.fair <= 0 || v.fair >= g.defaultTotal {
			if v.split {
				g.sched.SetThrottleValues(v.sched, scaled(v.asked, v.rate), now)
				v.split = false
			}
			return // the scheduler's defaults, as they were
		}
		v.rate = v.fair
	} else if v.fair > 0 && v.fair < v.rate {
		v.rate = v.fair
	}
	g.sched.SetThrottleValues(v.sched, g.splitOf(v), now)
	v.split = true
}

// splitOf is the one place the gateway splits a circuit's rate over the
// categories, for the region and for its own scheduler: the viewer's own
// proportions (scaled), or, unless Control.FixedSplit, those followed by
// what each category carried over the last interval (throttle.
// DemandSplit): OpenSim's category buckets do not lend, and a busy
// category held to its fixed fraction of the rate starves (issue 33).
func (g *Core) splitOf(v *Viewer) [lludp.NumCategories]float32 {
	base := scaled(v.asked, v.rate)
	if g.cfg.Control.FixedSplit {
		return base
	}
	return throttle.DemandSplit(base, v.used)
}

// measureUse sets what each category carried since the last decision.
func (v *Viewer) measureUse(now time.Time) {
	if !v.usedAt.IsZero() && now.After(v.usedAt) {
		perSecond := 8 / now.Sub(v.usedAt).Seconds()
		for i := range v.used {
			v.used[i] = float64(v.fromRegion[i]-v.usedMark[i]) * perSecond
		}
	}
	v.usedMark, v.usedAt = v.fromRegion, now
}

// scaled is the one place the gateway splits a circuit's rate over the
// categories: the viewer's own split of asked scaled to total (bytes/s),
// in bits/s per category, or the Second Life viewer's default split
// before the viewer asked.
func scaled(asked [lludp.NumCategories]float32, total ratecalc.Rate) [lludp.NumCategories]float32 {
	var sum float64
	for _, x := range asked {
		if x > 0 && !math.IsInf(float64(x), 0) {
			sum += float64(x)
		}
	}
	if !(sum > 0) {
		return throttle.ViewerSplit(total)
	}
	f := total.BitsPerSecond() / sum
	var out [lludp.NumCategories]float32
	for i, x := range asked {
		if x > 0 && !math.IsInf(float64(x), 0) {
			out[i] = float32(float64(x) * f)
		}
	}
	return out
}

// FromRegion takes a datagram the region sent on circuit v; b is the
// core's from then on, and is rewritten with the sequence number the
// viewer sees (renumber.go). It returns true when the datagram is to leave
// at once (outside every bucket, as OpenSim sends acks, pings and the
// handshake): the core has then recorded its departure and the caller
// sends b. Otherwise the datagram was queued — the caller must not reuse
// b — or dropped at a full queue.
func (g *Core) FromRegion(v *Viewer, b []byte, now time.Time) (sendNow bool, drop Drop) {
	now = g.clock(now)
	if g.byClient[v.sched] != v {
		g.counts[Orphan]++ // read before its circuit closed
		return false, Orphan
	}
	h, acks, _, err := lludp.ParseHeader(b)
	if err != nil {
		g.counts[Malformed]++
		return false, Malformed
	}
	_ = acks // the region's acks of the viewer's datagrams: not the down path's measure
	ch := opensim.NoChannel
	if m := lludp.Builtin().Lookup(h.ID); m != nil {
		ch = lludp.ChannelOf(m)
		switch cat := m.Category(); {
		case h.Flags.Resent():
			v.fromRegion[lludp.Resend] += uint64(len(b))
		case cat < lludp.NumCategories:
			v.fromRegion[cat] += uint64(len(b))
		}
	}
	switch h.ID {
	case lludp.StartPingCheckID:
		var m lludp.StartPingCheck
		if g.decode(b, &m) {
			v.est.regionPing(m.PingID, now)
		}
	case lludp.LogoutReplyID, lludp.CloseCircuitID:
		g.close(v, now)
	}
	if ch >= opensim.NumChannels {
		g.departed(v, opensim.NoChannel, b, h, now, now)
		return true, Passed
	}
	if h.Flags.Resent() {
		if _, ok := v.queuedReliable[h.Sequence]; ok {
			g.counts[ResendQueued]++
			return false, ResendQueued
		}
	}
	q := queued{v: v, b: b, seq: h.Sequence, at: now, rel: h.Flags.Reliable()}
	if err := g.sched.Enqueue(v.sched, ch, len(b), q, h.Flags.Resent(), now); err != nil {
		v.refused[ch]++
		g.counts[QueueFull]++
		return false, QueueFull
	}
	if q.rel && !h.Flags.Resent() {
		v.queuedReliable[h.Sequence] = struct{}{}
	}
	return false, Passed
}

// departed numbers a datagram leaving for the viewer in departure order
// (renumber.go) and records it.
func (g *Core) departed(v *Viewer, ch opensim.Channel, b []byte, h lludp.Header, queuedAt, now time.Time) {
	seq := v.seq.departure(b, h)
	if h.ID == lludp.StartPingCheckID && !h.Flags.ZeroCoded() && len(b) >= 12 {
		// OldestUnacked (u32 LE after PingID) names a region number.
		binary.LittleEndian.PutUint32(b[8:12], v.seq.oldest(binary.LittleEndian.Uint32(b[8:12])))
	}
	v.est.sent(seq, len(b), h.Flags.Reliable(), h.Flags.Resent(), now)
	if ch < opensim.NumChannels {
		v.sent[ch] += uint64(len(b))
		v.delay[ch].add(now.Sub(queuedAt))
	}
}

// Next fills out with the datagrams the scheduler lets leave at now and
// returns how many, and how long until more may (opensim.Idle: nothing
// queued).
func (g *Core) Next(out []Out, now time.Time) (n int, wait time.Duration) {
	now = g.clock(now)
	for n < len(out) {
		k, w := g.sched.NextBatch(g.items[:min(len(g.items), len(out)-n)], now)
		for _, it := range g.items[:k] {
			q := it.Packet
			h := lludp.Header{Sequence: q.seq}
			if q.rel {
				h.Flags |= lludp.FlagReliable
			}
			if it.Resend {
				h.Flags |= lludp.FlagResent
			}
			if q.rel && !it.Resend {
				delete(q.v.queuedReliable, q.seq)
			}
			g.departed(q.v, it.Channel, q.b, h, q.at, now)
			out[n] = Out{V: q.v, B: q.b}
			n++
		}
		clear(g.items[:k])
		if w != 0 || k == 0 {
			return n, w
		}
	}
	return n, 0
}

// Tick decides each circuit's rate when its interval is due, and closes
// circuits whose time is up. It appends to asserts the AgentThrottles to
// send to the region and to closed every circuit removed since the last
// Tick or Gone, whose sockets the shell closes.
func (g *Core) Tick(now time.Time, asserts []Assert, closed []*Viewer) ([]Assert, []*Viewer) {
	now = g.clock(now)
	g.expireProbes(now)
	for _, v := range g.viewers {
		v.est.expire(now)
		switch {
		case v.state == pending && now.Sub(v.created) > g.cfg.PendingTimeout,
			v.state == active && now.Sub(v.seen) > g.cfg.IdleTimeout,
			v.state == closing && now.After(v.closeAt):
			g.expired++
			g.remove(v, now)
			continue
		}
		if v.state == closing || now.Before(v.nextDecide) {
			continue
		}
		// A new circuit's rate starts at the controller's initial one
		// (open), so for its first Interval it follows the controller
		// every startDecide, as a TCP flow leaves slow start within
		// round trips, not seconds; the region is told on the regular
		// schedule only (the scheduler holds the rate meanwhile).
		early := now.Sub(v.created) < g.cfg.Control.Interval
		v.nextDecide = now.Add(g.cfg.Control.Interval)
		if early {
			v.nextDecide = now.Add(startDecide)
		}
		v.fair = g.cfg.Control.Clamp(v.est.ctl.Rate(now))
		if !early {
			v.measureUse(now)
		}
		g.apply(v, now)
		if early || v.state != active {
			continue
		}
		if a, ok := g.assert(v); ok {
			asserts = append(asserts, a)
		}
	}
	return asserts, g.Gone(closed)
}

// Gone appends to closed every circuit removed since the last call — by a
// timeout, to make room, or by Remove — and returns it: the shell closes
// their sockets.
func (g *Core) Gone(closed []*Viewer) []*Viewer {
	closed = append(closed, g.gone...)
	clear(g.gone)
	g.gone = g.gone[:0]
	return closed
}

// assert builds the AgentThrottle that keeps the region's throttle at the
// circuit's rate, as the sidecar re-asserts: when it changed by MinChange,
// or every ResendEvery decisions while it is below the viewer's own
// request (an unreliable datagram can be lost). Unreliable, with the
// viewer's latest sequence number (protocol.md §10.2).
func (g *Core) assert(v *Viewer) (Assert, bool) {
	v.sinceSent++
	if v.askedTotal <= 0 || v.agent.IsZero() {
		return Assert{}, false
	}
	split := g.splitOf(v)
	changed := v.asserted == 0 || math.Abs(float64(v.rate-v.asserted)) > *g.cfg.Control.MinChange*float64(v.asserted) ||
		throttle.SplitMoved(split, v.assertedSplit) >= *g.cfg.Control.MinChange
	below := v.rate < v.askedTotal || throttle.SplitMoved(split, v.asked) >= *g.cfg.Control.MinChange
	if !changed && !(below && v.sinceSent >= g.cfg.Control.ResendEvery) {
		return Assert{}, false
	}
	m := lludp.AgentThrottle{AgentData: lludp.AgentData{AgentID: v.agent, SessionID: v.session}, CircuitCode: v.code,
		Throttles: split}
	b, err := lludp.AppendMessage(nil, lludp.Header{Sequence: v.upSeq}, &m, nil)
	if err != nil {
		return Assert{}, false
	}
	v.asserted, v.assertedSplit, v.sinceSent = v.rate, split, 0
	g.asserts++
	return Assert{V: v, B: b}, true
}

// Viewers returns the number of circuits, and of those pending.
func (g *Core) Viewers() (all, pendingCircuits int) { return len(g.viewers), g.pendingQ.Len() }

// Probes returns the number of endpoints being probed.
func (g *Core) Probes() int { return g.probes.q.Len() }

// Reconfigure applies what can change live — the fair rate's controller,
// segment, clamps, interval and hysteresis, the caps and the timeouts —
// and returns the settings that differ but need a restart (routes, bind
// address, scheduler). A new controller or segment starts each circuit's
// measurement afresh. Nothing changes if cfg is invalid.
func (g *Core) Reconfigure(cfg Config, now time.Time) (restart []string, err error) {
	c, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	if g.viewerCap > 0 {
		c.MaxViewers = min(c.MaxViewers, g.viewerCap)
	}
	if !slices.Equal(c.Routes, g.cfg.Routes) {
		restart = append(restart, "routes")
	}
	if c.Bind != g.cfg.Bind {
		restart = append(restart, "bind")
	}
	if !reflect.DeepEqual(c.Scheduler, g.cfg.Scheduler) {
		restart = append(restart, "scheduler")
	}
	if c.IdentifyViewers != g.cfg.IdentifyViewers {
		restart = append(restart, "identify viewers")
	}
	rebuild := c.Control.Controller != g.cfg.Control.Controller || c.Control.Segment != g.cfg.Control.Segment ||
		c.Control.Min != g.cfg.Control.Min || c.Control.Max != g.cfg.Control.Max
	c.Routes, c.Bind, c.Scheduler, c.Rand, c.IdentifyViewers = g.cfg.Routes, g.cfg.Bind, g.cfg.Scheduler, g.cfg.Rand, g.cfg.IdentifyViewers
	g.cfg = c
	if rebuild {
		for _, v := range g.viewers {
			if ctl, err := c.Control.NewController(c.Control.Controller); err == nil {
				v.est.ctl = ctl
			}
		}
	}
	for _, v := range g.viewers {
		v.nextDecide = now.Add(c.Control.Interval)
	}
	return restart, nil
}

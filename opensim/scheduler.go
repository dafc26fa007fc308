package opensim

import (
	"errors"
	"fmt"
	"math/bits"
	"time"
	"unsafe"

	"github.com/fairgrid/fairgrid/lludp"
)

// ClientID names a client of a Scheduler. IDs are not reused: a removed
// client's ID stays unknown.
type ClientID uint64

func makeID(gen, slot uint32) ClientID { return ClientID(uint64(gen)<<32 | uint64(slot)) }

func (id ClientID) slot() uint32 { return uint32(id) }
func (id ClientID) gen() uint32  { return uint32(id >> 32) }

// Item is a packet the scheduler lets leave.
type Item[P any] struct {
	Client  ClientID
	Channel Channel
	Size    int
	Packet  P
	Resend  bool
}

// Idle is the wait Next returns when nothing is queued at all.
const Idle time.Duration = -1

// Errors of Enqueue. The scheduler counts each in its Stats.
var (
	ErrUnknownClient = errors.New("unknown client")
	ErrPacketSize    = errors.New("packet size outside [1, MaxPacket]")
	ErrQueueFull     = errors.New("channel queue full")
	ErrChannel       = errors.New("no such channel")
)

// virtualShift scales virtual-time increments: a packet of L bytes at
// weight w (bytes/s) advances a tag by L·2^32/w.
const virtualShift = 32

const (
	stateIdle    uint8 = iota // nothing queued
	stateReady                // queued, may send: in the ready calendar
	stateWaiting              // queued, its bucket is empty: in the waiting calendar
)

// Calendar slot widths. Ready clients are ordered by start tag in slots of
// 2^-12 virtual seconds (244 µs of a client's rate: less than one packet of
// a 640 kB/s client, so the order is SFQ's to within a packet); waiting
// clients by refill time in slots of 2^17 ns (131 µs), a wait rounded up to
// the slot's end — tokens go on accruing meanwhile, so no rate is lost.
const (
	readyShift   = virtualShift - 12
	waitingShift = 17
)

// client holds what a packet touches, the fields serving a client reads
// first at the front, so that a packet reads as few cache lines as
// possible; the rest is in clientCold.
type client[P any] struct {
	state   uint8
	backlog uint8 // bit ch: channel ch has packets queued
	used    bool
	linked  uint8 // linkedNowhere, linkedInSlot or linkedFar
	gen     uint32
	ticket  uint32 // bumped to disown an entry in a calendar's overflow heap
	queued  int32  // packets in all queues

	next, prev uint32 // neighbours in a calendar slot's list, index + 1
	slot       uint32 // that slot's index

	start, finish uint64 // scene-level tags
	vt            uint64 // the client's virtual time, across its channels
	inverse       uint64 // of the total rate, for advance
	bucket        bucket // level one: the client's total
	chFinish      [NumChannels]uint64
	chInverse     [NumChannels]uint64
	avatar        bucket // Avatar's strict-priority guarantee
	queues        [NumChannels]queue[P]
}

// clientCold is what a packet does not touch, kept apart so that the
// clients' hot memory stays dense.
type clientCold struct {
	stats  ClientStats // rare events; the sent counters are in the queues
	chRate [NumChannels]int64
	rate   int64 // total, bytes/s
}

// Scheduler decides which packet leaves next. It is deterministic and
// single-threaded: every method takes the time, none reads the clock or
// starts a goroutine, and the caller serialises calls.
type Scheduler[P any] struct {
	cfg     Config
	clients []client[P]
	cold    []clientCold
	free    []uint32
	ready   *calendar        // by start tag
	waiting *calendar        // by time the bucket refills
	chb     []channelBuckets // by client index, under ChannelBuckets only
	scene   bucket
	vt      uint64 // scene virtual time
	now     int64
	started bool
	stats   Stats
}

// New validates cfg and returns an empty scheduler.
func New[P any](cfg Config) (*Scheduler[P], error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Scheduler[P]{cfg: c, ready: newCalendar(readyShift), waiting: newCalendar(waitingShift)}
	s.scene = newBucket(c.SceneMax, s.burstFor(c.SceneMax), 0)
	return s, nil
}

// Config returns the validated configuration, defaults filled in.
func (s *Scheduler[P]) Config() Config { return s.cfg }

func (s *Scheduler[P]) burstFor(rate int64) int64 {
	burstTime := int64(s.cfg.BurstTime)
	if rate > maxBurstBytes*int64(time.Second)/burstTime {
		// More than a bucket holds; at the largest rates and burst times
		// allowed, rate × BurstTime would overflow int64.
		return maxBurstBytes
	}
	return max(rate*burstTime/int64(time.Second), s.cfg.MinBurst)
}

// clock turns now into nanoseconds and holds time still when it goes
// backwards (counted): buckets never lose tokens to a clock step.
func (s *Scheduler[P]) clock(now time.Time) int64 {
	ns := now.UnixNano()
	if !s.started {
		s.started, s.now = true, ns
		s.scene.last = ns
		s.waiting.base = uint64(ns) >> waitingShift
	}
	if ns < s.now {
		s.stats.TimeBackwards++
		return s.now
	}
	s.now = ns
	return ns
}

func (s *Scheduler[P]) lookup(id ClientID) *client[P] {
	i := id.slot()
	if int(i) >= len(s.clients) {
		return nil
	}
	c := &s.clients[i]
	if !c.used || c.gen != id.gen() {
		return nil
	}
	return c
}

// AddClient adds a client at the default rates (Config.DefaultRates) and
// returns its ID. O(1), amortised.
func (s *Scheduler[P]) AddClient(now time.Time) ClientID {
	ns := s.clock(now)
	var i uint32
	if n := len(s.free); n > 0 {
		i, s.free = s.free[n-1], s.free[:n-1]
	} else {
		s.clients = append(s.clients, client[P]{})
		s.cold = append(s.cold, clientCold{})
		if s.cfg.ChannelBuckets {
			s.chb = append(s.chb, channelBuckets{})
		}
		i = uint32(len(s.clients) - 1)
	}
	c := &s.clients[i]
	gen, ticket := c.gen+1, c.ticket+1 // a stale overflow entry of the slot's last client must not match
	queues := c.queues                 // a reused slot's, emptied by RemoveClient: keep their rings
	*c = client[P]{gen: gen, ticket: ticket, used: true, queues: queues, start: s.vt, finish: s.vt}
	s.cold[i] = clientCold{}
	s.applyRates(c, i, s.cfg.DefaultRates, ns)
	c.bucket.tokens, c.avatar.tokens = c.bucket.burst, c.avatar.burst
	s.stats.Clients++
	return makeID(gen, i)
}

// RemoveClient removes a client; its queued packets count as discarded.
// O(1). It reports whether the client existed.
func (s *Scheduler[P]) RemoveClient(id ClientID, now time.Time) bool {
	s.clock(now)
	c := s.lookup(id)
	if c == nil {
		s.stats.UnknownClient++
		return false
	}
	for ch := range c.queues {
		q := &c.queues[ch]
		cs := &s.cold[id.slot()].stats.Channels[ch]
		cs.DiscardedPackets += uint64(q.n)
		cs.DiscardedBytes += uint64(q.bytes)
		s.stats.DiscardedBytes += uint64(q.bytes)
		q.reset()
	}
	s.leave(c, id.slot())
	c.used, c.queued, c.backlog = false, 0, 0
	s.free = append(s.free, id.slot())
	s.stats.Clients--
	return true
}

// SetThrottle applies an AgentThrottle's Throttles field (seven
// little-endian F32 in bits/s). Values that are NaN, infinite or negative
// count as 0; a block shorter or longer than 28 bytes uses what it has;
// every channel is then clamped to [ChannelMin, ChannelMax] and the total
// to ClientMax. All of it is counted. O(1).
func (s *Scheduler[P]) SetThrottle(id ClientID, raw []byte, now time.Time) (ThrottleReport, error) {
	cats, ok := ParseThrottles(raw)
	rep, err := s.SetThrottleValues(id, cats, now)
	if !ok {
		rep.Malformed = true
		s.stats.ThrottleMalformed++
	}
	return rep, err
}

// SetThrottleValues is SetThrottle for values already unpacked.
func (s *Scheduler[P]) SetThrottleValues(id ClientID, categories [lludp.NumCategories]float32, now time.Time) (ThrottleReport, error) {
	ns := s.clock(now)
	c := s.lookup(id)
	if c == nil {
		s.stats.UnknownClient++
		return ThrottleReport{}, fmt.Errorf("set throttle of client %d: %w", id, ErrUnknownClient)
	}
	rates, invalid := ChannelRates(categories, s.cfg.AvatarShare)
	clamped, n := s.cfg.clamp(rates, invalid)
	rep := ThrottleReport{Invalid: invalid, Clamped: n}
	s.stats.ThrottleInvalid += uint64(invalid)
	s.stats.ThrottleClamped += uint64(n)
	s.applyRates(c, id.slot(), clamped, ns)
	if c.state == stateWaiting {
		// The refill time was computed at the old rate: look again. If the
		// bucket has refilled already (its wake-up is rounded up to the
		// waiting slot's end), the client rejoins at the current virtual
		// time, as one the timer wakes does, with no credit for the wait.
		s.leave(c, id.slot())
		c.start = maxTag(s.vt, c.finish)
		s.park(c, id.slot(), ns)
	}
	return rep, nil
}

func (s *Scheduler[P]) applyRates(c *client[P], i uint32, rates [NumChannels]int64, ns int64) {
	cold := &s.cold[i]
	cold.chRate, cold.rate = rates, 0
	for ch, r := range rates {
		cold.rate += r
		c.chInverse[ch] = inverse(r)
	}
	c.inverse = inverse(cold.rate)
	if s.cfg.ChannelBuckets {
		s.applyChannelRates(i, rates, ns, c.bucket.rate == 0)
	}
	if c.bucket.rate == 0 {
		c.bucket = newBucket(cold.rate, s.burstFor(cold.rate), ns)
		c.avatar = newBucket(rates[Avatar], s.burstFor(rates[Avatar]), ns)
		return
	}
	c.bucket.set(cold.rate, s.burstFor(cold.rate), ns)
	c.avatar.set(rates[Avatar], s.burstFor(rates[Avatar]), ns)
}

// Rates returns a client's channel rates and total, in bytes/s.
func (s *Scheduler[P]) Rates(id ClientID) (channels [NumChannels]int64, total int64, ok bool) {
	if s.lookup(id) == nil {
		return channels, 0, false
	}
	cold := &s.cold[id.slot()]
	return cold.chRate, cold.rate, true
}

// Enqueue queues a packet of size bytes on a client's channel. A resend
// goes to the head of its channel — the channel of its original packet —
// and is never refused for space: dropping it would lose a reliable packet
// for good. New packets are refused (tail drop, counted) when the channel
// holds QueueBytes or QueuePackets already.
func (s *Scheduler[P]) Enqueue(id ClientID, ch Channel, size int, p P, resend bool, now time.Time) error {
	return s.enqueue(id, ch, size, p, resend, s.clock(now))
}

// Outgoing is a packet for EnqueueBatch.
type Outgoing[P any] struct {
	Client  ClientID
	Channel Channel
	Size    int
	Packet  P
	Resend  bool
}

// enqueueLookahead is how many packets ahead EnqueueBatch prefetches:
// enough to cover a memory miss (~170 ns here) with the work of the
// packets in between.
const enqueueLookahead = 8

// EnqueueBatch is Enqueue for each packet in turn, all at time now. It
// returns how many were queued, and errs[i] is packet i's error for each i
// within errs (nil errs: none wanted). With thousands of clients,
// most of Enqueue's time is waiting for the client's memory: a batch lets
// the next packets' clients load meanwhile.
func (s *Scheduler[P]) EnqueueBatch(pkts []Outgoing[P], errs []error, now time.Time) (queued int) {
	ns := s.clock(now)
	for k := range min(enqueueLookahead, len(pkts)) {
		s.prefetchQueue(pkts[k].Client, pkts[k].Channel)
	}
	for k := range pkts {
		if ahead := k + enqueueLookahead; ahead < len(pkts) {
			s.prefetchQueue(pkts[ahead].Client, pkts[ahead].Channel)
		}
		pk := &pkts[k]
		err := s.enqueue(pk.Client, pk.Channel, pk.Size, pk.Packet, pk.Resend, ns)
		if err == nil {
			queued++
		}
		if k < len(errs) {
			errs[k] = err
		}
	}
	return queued
}

// prefetchQueue starts loading what Enqueue reads of a client's channel.
func (s *Scheduler[P]) prefetchQueue(id ClientID, ch Channel) {
	if i := id.slot(); int(i) < len(s.clients) && ch < NumChannels {
		c := &s.clients[i]
		prefetch(unsafe.Pointer(c), 2) // the header and the bucket
		prefetch(unsafe.Pointer(&c.queues[ch]), 2)
	}
}

func (s *Scheduler[P]) enqueue(id ClientID, ch Channel, size int, p P, resend bool, ns int64) error {
	c := s.lookup(id)
	switch {
	case c == nil:
		s.stats.UnknownClient++
		return ErrUnknownClient
	case ch >= NumChannels:
		s.stats.BadPackets++
		return ErrChannel
	case size < 1 || size > s.cfg.MaxPacket:
		s.stats.BadPackets++
		return ErrPacketSize
	}
	q := &c.queues[ch]
	if !resend && (int(q.n) >= s.cfg.QueuePackets || q.bytes+int64(size) > s.cfg.QueueBytes) {
		cs := &s.cold[id.slot()].stats.Channels[ch]
		cs.RefusedPackets++
		cs.RefusedBytes += uint64(size)
		s.stats.RefusedBytes += uint64(size)
		return ErrQueueFull
	}
	e := entry[P]{p: p, size: int32(size), resend: resend}
	if resend {
		q.pushFront(e)
		s.cold[id.slot()].stats.Channels[ch].Resends++
	} else {
		q.pushBack(e)
	}
	s.stats.EnqueuedBytes += uint64(size)
	c.queued++
	was := c.backlog
	c.backlog |= 1 << ch
	switch {
	case c.state == stateIdle:
		// A client that was idle starts at the current virtual time: it
		// gets no credit for the time it had nothing to send.
		c.start = maxTag(s.vt, c.finish)
		s.park(c, id.slot(), ns)
	case s.cfg.ChannelBuckets && c.state == stateWaiting && was&(1<<ch) == 0:
		// It waits for the buckets of its other channels; this one's may
		// let it send sooner. It rejoins as one the timer wakes would.
		s.leave(c, id.slot())
		c.start = maxTag(s.vt, c.finish)
		s.park(c, id.slot(), ns)
	}
	return nil
}

// prefetchClient starts loading the hot memory of client i, which the next
// call will most likely need: with thousands of clients it is not in the
// cache, and a miss costs more than the rest of a packet's work.
func (s *Scheduler[P]) prefetchClient(i uint32) {
	c := &s.clients[i]
	prefetch(unsafe.Pointer(c), int(unsafe.Sizeof(*c))/64+1)
	if s.cfg.ChannelBuckets {
		prefetch(unsafe.Pointer(&s.chb[i]), int(unsafe.Sizeof(s.chb[i]))/64+1)
	}
}

// park puts a backlogged client where it belongs: ready if its bucket has
// tokens, else waiting until it will.
func (s *Scheduler[P]) park(c *client[P], i uint32, ns int64) {
	c.bucket.refill(ns)
	if s.cfg.ChannelBuckets {
		s.parkChannels(c, i, ns)
		return
	}
	if c.bucket.ready() {
		c.state = stateReady
		s.push(s.ready, i, c.start>>readyShift)
		return
	}
	c.state = stateWaiting
	wake := uint64(ns + c.bucket.wait())
	s.push(s.waiting, i, (wake+1<<waitingShift-1)>>waitingShift) // rounded up
}

// leave takes a client out of whichever calendar holds it.
func (s *Scheduler[P]) leave(c *client[P], i uint32) {
	switch c.state {
	case stateReady:
		s.unlink(s.ready, i)
	case stateWaiting:
		s.unlink(s.waiting, i)
	}
	c.state = stateIdle
}

func maxTag(a, b uint64) uint64 {
	if int64(a-b) < 0 {
		return b
	}
	return a
}

// inverse returns ⌊2^63/weight⌋, so that advance multiplies where it
// would divide: a 64-bit division costs tens of cycles, twice per packet.
func inverse(weight int64) uint64 { return (1 << 63) / uint64(max(weight, 1)) }

// advance adds size/weight virtual seconds (size·2^virtualShift/weight) to
// tag, given inverse(weight): size·inverse = size·2^63/weight, shifted
// down by 63−virtualShift. The 128-bit product keeps every bit; sizes are at
// most 2^16 and weights at least 1, so the result fits.
func advance(tag uint64, size int64, inverse uint64) uint64 {
	hi, lo := bits.Mul64(uint64(size), inverse)
	return tag + (hi<<(64-(63-virtualShift)) | lo>>(63-virtualShift))
}

// Next returns the next packet allowed to leave at now. If none may, ok is
// false and a packet may leave at now + wait; wait is Idle when nothing is
// queued. A wait for a client's bucket may name a time up to 131 µs after
// the exact refill (the waiting calendar's slot width); tokens accrue
// meanwhile, so nothing is lost by it. When now is earlier than a previous
// call's time, the scheduler's clock holds still, and wait still counts
// from the now given.
func (s *Scheduler[P]) Next(now time.Time) (it Item[P], wait time.Duration, ok bool) {
	var out [1]Item[P]
	n, wait := s.NextBatch(out[:], now)
	return out[0], wait, n == 1
}

// NextBatch is Next until out is full or no packet may leave: it fills
// out[:n] in the order Next would return them. When n < len(out), wait is
// what Next's would be for the packet after them. A sender that sends
// several datagrams per system call (sendmmsg) wants them so, and each
// packet's work hides the memory latency of the next client's.
func (s *Scheduler[P]) NextBatch(out []Item[P], now time.Time) (n int, wait time.Duration) {
	ns := s.clock(now)
	for n < len(out) {
		it, w, ok := s.next(ns)
		s.prefetchFirst()
		if !ok {
			if w != Idle {
				w += time.Duration(ns - now.UnixNano()) // > 0 only when now went backwards
			}
			return n, w
		}
		out[n] = it
		n++
	}
	return n, 0
}

// prefetchFirst starts loading what the next two calls will most likely
// need, a software pipeline two packets deep: the second client in line
// (its memory), and the first client's queued packets behind the ones it
// is about to send. The first client was the second in line at the call
// before, so reading it to find those is most likely a cache hit.
func (s *Scheduler[P]) prefetchFirst() {
	i, _, ok := s.first(s.ready)
	if !ok {
		return
	}
	c := &s.clients[i]
	for b := c.backlog; b != 0; b &= b - 1 {
		q := &c.queues[bits.TrailingZeros8(b)]
		if q.n > 1 {
			prefetch(unsafe.Pointer(&q.ring[q.first]), 1)
		}
	}
	if c.linked == linkedInSlot && c.next != 0 {
		s.prefetchClient(c.next - 1)
	}
}

func (s *Scheduler[P]) next(ns int64) (it Item[P], wait time.Duration, ok bool) {
	// Clients whose buckets have refilled become ready.
	nowSlot := uint64(ns) >> waitingShift
	for {
		i, slot, ok := s.first(s.waiting)
		if !ok || int64(slot-nowSlot) > 0 {
			break
		}
		c := &s.clients[i]
		s.leave(c, i)
		c.start = maxTag(s.vt, c.finish)
		s.park(c, i, ns)
	}
	s.waiting.advance(nowSlot + 1)
	if i, slot, ok := s.first(s.ready); ok {
		s.scene.refill(ns)
		if !s.scene.ready() {
			return it, time.Duration(s.scene.wait()), false
		}
		s.ready.advance(slot)
		return s.send(&s.clients[i], i, ns), 0, true
	}
	if _, slot, ok := s.first(s.waiting); ok {
		return it, time.Duration(int64(slot<<waitingShift) - ns), false
	}
	return it, Idle, false
}

// send takes the next packet of a ready client: Avatar first while its
// guarantee lasts (if AvatarPriority), else the backlogged channel with the
// smallest start tag — start-time fair queuing with the channel rates as
// weights, so an idle channel's share goes to the busy ones. Under
// ChannelBuckets only channels whose category bucket holds tokens take
// part, and the packet is charged to that bucket too.
func (s *Scheduler[P]) send(c *client[P], i uint32, ns int64) Item[P] {
	ch, priority := -1, false
	if s.cfg.AvatarPriority && c.queues[Avatar].n > 0 {
		c.avatar.refill(ns)
		if c.avatar.ready() && (!s.cfg.ChannelBuckets || s.channelReady(i, Avatar, ns)) {
			ch, priority = int(Avatar), true
		}
	}
	var start uint64
	if ch < 0 && s.cfg.ChannelBuckets {
		ch, start = s.pickChannel(c, i, ns)
	} else if ch < 0 {
		for k := range NumChannels {
			if c.backlog&(1<<k) == 0 {
				continue
			}
			st := maxTag(c.vt, c.chFinish[k])
			if ch < 0 || int64(st-start) < 0 {
				ch, start = k, st
			}
		}
	}
	q := &c.queues[ch]
	e := q.pop()
	if q.n == 0 {
		c.backlog &^= 1 << ch
	}
	size := int64(e.size)
	c.queued--
	if priority {
		// The guarantee's bucket polices priority sends only, and they are
		// not charged to Avatar's fair share: up to its rate Avatar goes
		// first, beyond it Avatar competes like any channel.
		c.avatar.take(size)
	} else {
		c.vt = start
		c.chFinish[ch] = advance(start, size, c.chInverse[ch])
	}
	// Charged now, not when the client joined the ready calendar: a client
	// that waited its turn with a full bucket earned nothing meanwhile. The
	// refill is one park would do anyway, so it costs nothing more.
	c.bucket.refill(ns)
	c.bucket.take(size)
	if s.cfg.ChannelBuckets {
		s.chb[i][bucketOf[ch]].take(size)
	}
	s.scene.take(size)
	s.vt = c.start
	c.finish = advance(c.start, size, c.inverse)
	q.sentPackets++
	q.sentBytes += uint64(size)
	s.stats.SentBytes += uint64(size)
	s.leave(c, i)
	if c.queued > 0 {
		c.start = c.finish
		s.park(c, i, ns)
	}
	return Item[P]{Client: makeID(c.gen, i), Channel: Channel(ch), Size: int(size), Packet: e.p, Resend: e.resend}
}

package opensim

import (
	"errors"
	"fmt"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
)

// ClientID names a client of a Scheduler. IDs are not reused: a removed
// client's ID stays unknown.
type ClientID uint64

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
	stateReady                // queued, may send: in the ready heap
	stateWaiting              // queued, its bucket is empty: in the timer heap
)

// client holds the fields every packet touches first, so that serving a
// client reads as few cache lines as possible; statistics come last.
type client[P any] struct {
	state   uint8
	backlog uint8 // bit ch: channel ch has packets queued
	used    bool
	gen     uint32
	ticket  uint32
	queued  int32 // packets in all queues

	start, finish uint64 // scene-level tags
	vt            uint64 // the client's virtual time, across its channels
	rate          int64  // total, bytes/s
	bucket        bucket // level one: the client's total
	chFinish      [NumChannels]uint64
	chRate        [NumChannels]int64
	avatar        bucket // Avatar's strict-priority guarantee
	queues        [NumChannels]queue[P]

	stats ClientStats
}

// Scheduler decides which packet leaves next. It is deterministic and
// single-threaded: every method takes the time, none reads the clock or
// starts a goroutine, and the caller serialises calls.
type Scheduler[P any] struct {
	cfg     Config
	clients []client[P]
	free    []uint32
	ready   minHeap // by start tag
	waiting minHeap // by time the bucket refills
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
	s := &Scheduler[P]{cfg: c, ready: minHeap{wrap: true}}
	s.scene = newBucket(c.SceneMax, s.burstFor(c.SceneMax), 0)
	return s, nil
}

// Config returns the validated configuration, defaults filled in.
func (s *Scheduler[P]) Config() Config { return s.cfg }

func (s *Scheduler[P]) burstFor(rate int64) int64 {
	return max(rate*int64(s.cfg.BurstTime)/int64(time.Second), s.cfg.MinBurst)
}

// clock turns now into nanoseconds and holds time still when it goes
// backwards (counted): buckets never lose tokens to a clock step.
func (s *Scheduler[P]) clock(now time.Time) int64 {
	ns := now.UnixNano()
	if !s.started {
		s.started, s.now = true, ns
		s.scene.last = ns
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
		i = uint32(len(s.clients) - 1)
	}
	c := &s.clients[i]
	gen, ticket := c.gen+1, c.ticket+1 // a stale heap entry of the slot's last client must not match
	queues := c.queues                 // keep grown buffers of a reused slot
	*c = client[P]{gen: gen, ticket: ticket, used: true, queues: queues, start: s.vt, finish: s.vt}
	s.applyRates(c, s.cfg.DefaultRates, ns)
	c.bucket.tokens, c.avatar.tokens = c.bucket.burst, c.avatar.burst
	s.stats.Clients++
	return ClientID(uint64(gen)<<32 | uint64(i))
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
		c.stats.Channels[ch].DiscardedPackets += uint64(q.n)
		c.stats.Channels[ch].DiscardedBytes += uint64(q.bytes)
		s.stats.DiscardedBytes += uint64(q.bytes)
		for q.n > 0 {
			q.pop()
		}
	}
	c.used, c.queued, c.state, c.backlog = false, 0, stateIdle, 0
	c.ticket++ // invalidates heap entries
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
	s.applyRates(c, clamped, ns)
	if c.state == stateWaiting {
		// The refill time was computed at the old rate: look again.
		c.ticket++
		s.park(c, id.slot(), ns)
	}
	return rep, nil
}

func (s *Scheduler[P]) applyRates(c *client[P], rates [NumChannels]int64, ns int64) {
	c.chRate = rates
	c.rate = 0
	for _, r := range rates {
		c.rate += r
	}
	if c.bucket.rate == 0 {
		c.bucket = newBucket(c.rate, s.burstFor(c.rate), ns)
		c.avatar = newBucket(rates[lludp.Avatar], s.burstFor(rates[lludp.Avatar]), ns)
		return
	}
	c.bucket.set(c.rate, s.burstFor(c.rate), ns)
	c.avatar.set(rates[lludp.Avatar], s.burstFor(rates[lludp.Avatar]), ns)
}

// Rates returns a client's channel rates and total, in bytes/s.
func (s *Scheduler[P]) Rates(id ClientID) (channels [NumChannels]int64, total int64, ok bool) {
	c := s.lookup(id)
	if c == nil {
		return channels, 0, false
	}
	return c.chRate, c.rate, true
}

// Enqueue queues a packet of size bytes on a client's channel. A resend
// goes to the head of its channel — the channel of its original packet —
// and is never refused for space: dropping it would lose a reliable packet
// for good. New packets are refused (tail drop, counted) when the channel
// holds QueueBytes or QueuePackets already.
func (s *Scheduler[P]) Enqueue(id ClientID, ch Channel, size int, p P, resend bool, now time.Time) error {
	ns := s.clock(now)
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
	cs := &c.stats.Channels[ch]
	if !resend && (q.n >= s.cfg.QueuePackets || q.bytes+int64(size) > s.cfg.QueueBytes) {
		cs.RefusedPackets++
		cs.RefusedBytes += uint64(size)
		s.stats.RefusedBytes += uint64(size)
		return ErrQueueFull
	}
	e := entry[P]{p: p, size: int32(size), resend: resend}
	if resend {
		q.pushFront(e)
		cs.Resends++
	} else {
		q.pushBack(e)
	}
	cs.EnqueuedBytes += uint64(size)
	s.stats.EnqueuedBytes += uint64(size)
	c.queued++
	c.backlog |= 1 << ch
	if c.state == stateIdle {
		// A client that was idle starts at the current virtual time: it
		// gets no credit for the time it had nothing to send.
		c.start = maxTag(s.vt, c.finish)
		s.park(c, id.slot(), ns)
	}
	return nil
}

// park puts a backlogged client where it belongs: ready if its bucket has
// tokens, else waiting until it will.
func (s *Scheduler[P]) park(c *client[P], i uint32, ns int64) {
	c.bucket.refill(ns)
	if c.bucket.ready() {
		c.state = stateReady
		s.ready.push(heapItem{key: c.start, client: i, ticket: c.ticket})
		return
	}
	c.state = stateWaiting
	s.waiting.push(heapItem{key: uint64(ns + c.bucket.wait()), client: i, ticket: c.ticket})
}

func maxTag(a, b uint64) uint64 {
	if int64(a-b) < 0 {
		return b
	}
	return a
}

func advance(tag uint64, size, weight int64) uint64 {
	return tag + uint64(size)<<virtualShift/uint64(max(weight, 1))
}

// Next returns the next packet allowed to leave at now. If none may, ok is
// false and a packet may leave at now + wait; wait is Idle when nothing is
// queued. When now is earlier than a previous call's time, the scheduler's
// clock holds still, and wait still counts from the now given.
func (s *Scheduler[P]) Next(now time.Time) (it Item[P], wait time.Duration, ok bool) {
	ns := s.clock(now)
	it, wait, ok = s.next(ns)
	if !ok && wait != Idle {
		wait += time.Duration(ns - now.UnixNano()) // > 0 only when now went backwards
	}
	return it, wait, ok
}

func (s *Scheduler[P]) next(ns int64) (it Item[P], wait time.Duration, ok bool) {
	// Clients whose buckets have refilled become ready.
	for s.waiting.len() > 0 && int64(s.waiting.top().key) <= ns {
		h := s.waiting.pop()
		c := &s.clients[h.client]
		if c.ticket != h.ticket || c.state != stateWaiting {
			continue // stale
		}
		c.start = maxTag(s.vt, c.finish)
		s.park(c, h.client, ns)
	}
	for s.ready.len() > 0 {
		h := s.ready.top()
		c := &s.clients[h.client]
		if c.ticket != h.ticket || c.state != stateReady {
			s.ready.pop() // stale
			continue
		}
		s.scene.refill(ns)
		if !s.scene.ready() {
			return it, time.Duration(s.scene.wait()), false
		}
		return s.send(c, h.client, ns), 0, true
	}
	for s.waiting.len() > 0 {
		h := s.waiting.top()
		c := &s.clients[h.client]
		if c.ticket != h.ticket || c.state != stateWaiting {
			s.waiting.pop()
			continue
		}
		return it, time.Duration(int64(h.key) - ns), false
	}
	return it, Idle, false
}

// send takes the next packet of a ready client: Avatar first while its
// guarantee lasts (if AvatarPriority), else the backlogged channel with the
// smallest start tag — start-time fair queuing with the channel rates as
// weights, so an idle channel's share goes to the busy ones.
func (s *Scheduler[P]) send(c *client[P], slot uint32, ns int64) Item[P] {
	ch, priority := -1, false
	if s.cfg.AvatarPriority && c.queues[lludp.Avatar].n > 0 {
		c.avatar.refill(ns)
		if c.avatar.ready() {
			ch, priority = int(lludp.Avatar), true
		}
	}
	var start uint64
	if ch < 0 {
		for i := range NumChannels {
			if c.backlog&(1<<i) == 0 {
				continue
			}
			st := maxTag(c.vt, c.chFinish[i])
			if ch < 0 || int64(st-start) < 0 {
				ch, start = i, st
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
		c.chFinish[ch] = advance(start, size, c.chRate[ch])
	}
	c.bucket.take(size)
	s.scene.take(size)
	s.vt = c.start
	c.finish = advance(c.start, size, c.rate)
	cs := &c.stats.Channels[ch]
	cs.SentPackets++
	cs.SentBytes += uint64(size)
	s.stats.SentBytes += uint64(size)
	// The client is the ready heap's top: re-key it in place if it may go
	// on sending, else take it off.
	switch {
	case c.queued == 0:
		c.state = stateIdle
		s.ready.pop()
	case c.bucket.ready():
		c.start = c.finish
		s.ready.replaceTop(c.start)
	default:
		s.ready.pop()
		c.start = c.finish
		s.park(c, slot, ns)
	}
	return Item[P]{Client: ClientID(uint64(c.gen)<<32 | uint64(slot)), Channel: Channel(ch), Size: int(size), Packet: e.p, Resend: e.resend}
}

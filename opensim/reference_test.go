package opensim

import (
	"cmp"
	"math"
	"math/big"
	"slices"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
)

// refScheduler is the model of doc.go written as plainly as it can be, to
// run beside the fast Scheduler packet by packet (differential_test.go): a
// slice of clients, a loop over them for every decision, slices for
// queues, math/big wherever a product could leave int64. It shares no code
// with the fast scheduler; it takes only the validated Config.
//
// Its arithmetic is the documented one, exact where the fast scheduler is
// exact:
//
//   - Tokens are integer nano-bytes; a bucket at rate r gains r tokens per
//     nanosecond up to its burst, rate × BurstTime (at least MinBurst, at
//     most 2^30 bytes), and a packet takes its whole size when the bucket
//     is positive.
//   - Tags count virtual time in units of 2^-32 s. A packet of L bytes at
//     weight w spans ⌊L·⌊2^63/w⌋ / 2^31⌋ units: L/w rounded down, and one
//     unit less when L·2^32/w lies within L·2^-31 of a whole number. That
//     is the fast scheduler's chosen arithmetic (a multiply by a truncated
//     reciprocal, TestAdvanceExact), modelled exactly so that ties between
//     channels stay exact ties instead of a tolerance that grows with every
//     packet.
//   - A client that turns ready takes start tag max(v, F): v is the start
//     tag of the packet last sent, F the client's previous finish tag.
//   - With ChannelBuckets, each OpenSim category has a bucket too (Layer,
//     Texture, Asset, and Task for the Avatar and Task channels at their
//     sum), rate × BurstTime deep but at most 7,500 bytes and at least
//     MinBurst. A client is ready when its own bucket and the bucket of
//     some backlogged channel are positive; only such channels may send,
//     and a packet takes its size from its category's bucket as well. A
//     waiting client that gets a packet on a channel that had none looks
//     again at once, as if woken.
//
// The two places where the fast scheduler rounds by design are part of the
// model, stated exactly in differential_test.go: which of the ready
// clients may go first (refCandidates), and when a waiting client becomes
// ready (refWakeTime).
type refScheduler struct {
	cfg     Config
	clients []*refClient // every client ever added, removed ones too
	scene   refBucket
	v       uint64 // the scene's virtual time: start tag of the last packet sent
	now     int64
	started bool
	stats   Stats
	// skipped counts the backlogged channels headOf passed over because
	// their category bucket was empty (ChannelBuckets), for coverage.
	skipped int
}

type refState int

const (
	refIdle    refState = iota // nothing queued
	refReady                   // queued, bucket positive when it last looked
	refWaiting                 // queued, bucket empty
)

type refClient struct {
	live     bool
	rates    [NumChannels]int64
	bucket   refBucket              // the client's total
	avatar   refBucket              // Avatar's priority guarantee
	category [NumChannels]refBucket // with ChannelBuckets: by refCategory; Avatar's unused
	queues   [NumChannels][]refPacket
	state    refState
	start    uint64 // scene-level tags
	finish   uint64
	vt       uint64 // virtual time across the client's channels
	chFinish [NumChannels]uint64
	stats    ClientStats
}

type refPacket struct {
	packet int
	size   int
	resend bool
}

// refBucket is a token bucket in nano-bytes with the time it was last
// brought up to date.
type refBucket struct {
	rate, burst, tokens, last int64
}

const refNanoPerByte = 1_000_000_000

func newRefBucket(rate, burstBytes, now int64) refBucket {
	b := refBucket{last: now}
	b.configure(rate, burstBytes)
	b.tokens = b.burst
	return b
}

func (b *refBucket) configure(rate, burstBytes int64) {
	b.rate = max(rate, 1)
	b.burst = min(max(burstBytes, 1), 1<<30) * refNanoPerByte
}

// catchUp adds what the bucket earned until t, up to its burst.
func (b *refBucket) catchUp(t int64) {
	if t <= b.last {
		return
	}
	sum := new(big.Int).Mul(big.NewInt(b.rate), big.NewInt(t-b.last))
	sum.Add(sum, big.NewInt(b.tokens))
	if sum.Cmp(big.NewInt(b.burst)) > 0 {
		b.tokens = b.burst
	} else {
		b.tokens = sum.Int64()
	}
	b.last = t
}

// firstPositive is the first nanosecond at which the bucket holds a
// positive number of tokens: the smallest k ≥ 0 with tokens + rate·k > 0.
func (b *refBucket) firstPositive() int64 {
	if b.tokens > 0 {
		return b.last
	}
	return b.last + (-b.tokens)/b.rate + 1
}

func (b *refBucket) take(size int) { b.tokens -= int64(size) * refNanoPerByte }

// retune changes rate and burst at t, keeping what was earned until then
// up to the new burst.
func (b *refBucket) retune(rate, burstBytes, t int64) {
	b.catchUp(t)
	b.configure(rate, burstBytes)
	b.tokens = min(b.tokens, b.burst)
}

// refSpan is L/w in units of 2^-32 virtual seconds, as the package comment
// above states: ⌊L·⌊2^63/w⌋ / 2^31⌋.
func refSpan(size int, weight int64) uint64 {
	reciprocal := new(big.Int).Lsh(big.NewInt(1), 63)
	reciprocal.Quo(reciprocal, big.NewInt(max(weight, 1)))
	span := new(big.Int).Mul(big.NewInt(int64(size)), reciprocal)
	span.Rsh(span, 31)
	return span.Uint64()
}

func newRefScheduler(cfg Config) *refScheduler {
	return &refScheduler{cfg: cfg}
}

func (r *refScheduler) burstFor(rate int64) int64 {
	b := new(big.Int).Mul(big.NewInt(rate), big.NewInt(int64(r.cfg.BurstTime)))
	b.Quo(b, big.NewInt(int64(time.Second)))
	if b.Cmp(big.NewInt(r.cfg.MinBurst)) < 0 {
		return r.cfg.MinBurst
	}
	if !b.IsInt64() {
		return math.MaxInt64
	}
	return b.Int64()
}

// clock is the scheduler's time: it never goes back, and a call whose time
// is earlier than an earlier call's is counted.
func (r *refScheduler) clock(now time.Time) int64 {
	ns := now.UnixNano()
	if !r.started {
		r.started, r.now = true, ns
		r.scene = newRefBucket(r.cfg.SceneMax, r.burstFor(r.cfg.SceneMax), ns)
	}
	if ns < r.now {
		r.stats.TimeBackwards++
		return r.now
	}
	r.now = ns
	return ns
}

func (r *refScheduler) client(h int) *refClient {
	if h < 0 || h >= len(r.clients) || !r.clients[h].live {
		return nil
	}
	return r.clients[h]
}

func sumRates(rates [NumChannels]int64) (total int64) {
	for _, x := range rates {
		total += x
	}
	return total
}

func (r *refScheduler) addClient(now time.Time) int {
	t := r.clock(now)
	c := &refClient{live: true, start: r.v, finish: r.v}
	r.setRates(c, r.cfg.DefaultRates, t)
	c.bucket.tokens, c.avatar.tokens = c.bucket.burst, c.avatar.burst
	r.clients = append(r.clients, c)
	r.stats.Clients++
	return len(r.clients) - 1
}

// refCategory is the category bucket of a channel: Avatar's packets take
// Task's tokens.
func refCategory(ch Channel) Channel {
	if ch == Avatar {
		return Task
	}
	return ch
}

// categoryBurst is a category bucket's depth in bytes: rate × BurstTime,
// at most OpenSim's MAXBURST of 7,500, at least MinBurst.
func (r *refScheduler) categoryBurst(rate int64) int64 {
	b := new(big.Int).Mul(big.NewInt(rate), big.NewInt(int64(r.cfg.BurstTime)))
	b.Quo(b, big.NewInt(int64(time.Second)))
	if b.Cmp(big.NewInt(7500)) > 0 {
		b.SetInt64(7500)
	}
	return max(b.Int64(), r.cfg.MinBurst)
}

func (r *refScheduler) setRates(c *refClient, rates [NumChannels]int64, t int64) {
	total := sumRates(rates)
	if r.cfg.ChannelBuckets {
		for _, ch := range []Channel{Task, Texture, Layer, Asset} {
			rate := rates[ch]
			if ch == Task {
				rate += rates[Avatar]
			}
			if c.bucket.rate == 0 {
				c.category[ch] = newRefBucket(rate, r.categoryBurst(rate), t)
			} else {
				c.category[ch].retune(rate, r.categoryBurst(rate), t)
			}
		}
	}
	if c.bucket.rate == 0 {
		c.bucket = newRefBucket(total, r.burstFor(total), t)
		c.avatar = newRefBucket(rates[Avatar], r.burstFor(rates[Avatar]), t)
	} else {
		c.bucket.retune(total, r.burstFor(total), t)
		c.avatar.retune(rates[Avatar], r.burstFor(rates[Avatar]), t)
	}
	c.rates = rates
}

func (r *refScheduler) removeClient(h int, now time.Time) bool {
	r.clock(now)
	c := r.client(h)
	if c == nil {
		r.stats.UnknownClient++
		return false
	}
	for ch, q := range c.queues {
		for _, p := range q {
			c.stats.Channels[ch].DiscardedPackets++
			c.stats.Channels[ch].DiscardedBytes += uint64(p.size)
			r.stats.DiscardedBytes += uint64(p.size)
		}
		c.queues[ch] = nil
	}
	c.live, c.state = false, refIdle
	r.stats.Clients--
	return true
}

// refChannelRates is doc.go's mapping of the seven categories (bits/s) to
// the five channels (bytes/s), before clamping.
func refChannelRates(categories [lludp.NumCategories]float32, avatarShare float64) (rates [NumChannels]float64, invalid int) {
	var b [lludp.NumCategories]float64
	for i, v := range categories {
		x := float64(v) / 8
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			x = 0
			invalid++
		}
		b[i] = x
	}
	rates[Layer] = b[lludp.Land] + b[lludp.Wind] + b[lludp.Cloud]
	rates[Texture] = b[lludp.Texture]
	rates[Asset] = b[lludp.Asset]
	rates[Avatar] = b[lludp.Task] * avatarShare
	rates[Task] = b[lludp.Task] * (1 - avatarShare)
	var sum float64
	for _, x := range rates {
		sum += x
	}
	resend := b[lludp.Resend]
	if resend > 0 {
		for ch := range rates {
			if sum > 0 {
				rates[ch] += resend * rates[ch] / sum
			} else {
				rates[ch] += resend / NumChannels
			}
		}
	}
	return rates, invalid
}

// refClamp bounds each channel to [ChannelMin, ChannelMax] and scales the
// total down to ClientMax, never below a minimum; it counts each clamped
// channel and a scaled total.
func (r *refScheduler) refClamp(rates [NumChannels]float64) (out [NumChannels]int64, clamped int) {
	var sum float64
	for ch := range rates {
		lo, hi := float64(r.cfg.ChannelMin[ch]), float64(r.cfg.ChannelMax[ch])
		if math.IsNaN(rates[ch]) || rates[ch] < lo {
			rates[ch] = lo
			clamped++
		} else if rates[ch] > hi {
			rates[ch] = hi
			clamped++
		}
		sum += rates[ch]
	}
	if sum > float64(r.cfg.ClientMax) {
		clamped++
		scale := float64(r.cfg.ClientMax) / sum
		for ch := range rates {
			rates[ch] = max(rates[ch]*scale, float64(r.cfg.ChannelMin[ch]))
		}
	}
	for ch := range rates {
		out[ch] = int64(rates[ch])
	}
	return out, clamped
}

func (r *refScheduler) setThrottle(h int, raw []byte, now time.Time) (ThrottleReport, error) {
	var cats [lludp.NumCategories]float32
	for i := range cats {
		if len(raw) >= 4*i+4 {
			cats[i] = math.Float32frombits(uint32(raw[4*i]) | uint32(raw[4*i+1])<<8 | uint32(raw[4*i+2])<<16 | uint32(raw[4*i+3])<<24)
		}
	}
	rep, err := r.setThrottleValues(h, cats, now)
	if len(raw) != 4*lludp.NumCategories {
		rep.Malformed = true
		r.stats.ThrottleMalformed++
	}
	return rep, err
}

func (r *refScheduler) setThrottleValues(h int, cats [lludp.NumCategories]float32, now time.Time) (ThrottleReport, error) {
	t := r.clock(now)
	c := r.client(h)
	if c == nil {
		r.stats.UnknownClient++
		return ThrottleReport{}, ErrUnknownClient
	}
	floats, invalid := refChannelRates(cats, r.cfg.AvatarShare)
	rates, clamped := r.refClamp(floats)
	r.stats.ThrottleInvalid += uint64(invalid)
	r.stats.ThrottleClamped += uint64(clamped)
	r.setRates(c, rates, t)
	if c.state == refWaiting {
		// Its refill time was reckoned at the old rate. If the bucket is
		// positive already, the client has refilled and rejoins at the
		// current virtual time, as one woken by the timer does.
		c.start = max(r.v, c.finish)
		r.park(c, t)
	}
	return ThrottleReport{Invalid: invalid, Clamped: clamped}, nil
}

func (r *refScheduler) enqueue(h int, ch Channel, size int, p int, resend bool, t int64) error {
	c := r.client(h)
	switch {
	case c == nil:
		r.stats.UnknownClient++
		return ErrUnknownClient
	case int(ch) < 0 || int(ch) >= NumChannels:
		r.stats.BadPackets++
		return ErrChannel
	case size < 1 || size > r.cfg.MaxPacket:
		r.stats.BadPackets++
		return ErrPacketSize
	}
	var queuedBytes int64
	for _, q := range c.queues[ch] {
		queuedBytes += int64(q.size)
	}
	if !resend && (len(c.queues[ch]) >= r.cfg.QueuePackets || queuedBytes+int64(size) > r.cfg.QueueBytes) {
		c.stats.Channels[ch].RefusedPackets++
		c.stats.Channels[ch].RefusedBytes += uint64(size)
		r.stats.RefusedBytes += uint64(size)
		return ErrQueueFull
	}
	pk := refPacket{packet: p, size: size, resend: resend}
	if resend {
		c.queues[ch] = append([]refPacket{pk}, c.queues[ch]...)
		c.stats.Channels[ch].Resends++
	} else {
		c.queues[ch] = append(c.queues[ch], pk)
	}
	c.stats.Channels[ch].EnqueuedBytes += uint64(size)
	r.stats.EnqueuedBytes += uint64(size)
	if c.state == refIdle || (r.cfg.ChannelBuckets && c.state == refWaiting && len(c.queues[ch]) == 1) {
		c.start = max(r.v, c.finish)
		r.park(c, t)
	}
	return nil
}

func (c *refClient) queued() int {
	n := 0
	for _, q := range c.queues {
		n += len(q)
	}
	return n
}

// park makes a backlogged client ready if its bucket is positive at t
// (and, with ChannelBuckets, some backlogged channel's category bucket),
// else waiting.
func (r *refScheduler) park(c *refClient, t int64) {
	c.bucket.catchUp(t)
	ready := c.bucket.tokens > 0
	if r.cfg.ChannelBuckets {
		some := false
		for ch := range Channel(NumChannels) {
			if len(c.queues[ch]) > 0 {
				b := &c.category[refCategory(ch)]
				b.catchUp(t)
				some = some || b.tokens > 0
			}
		}
		ready = ready && some
	}
	if ready {
		c.state = refReady
	} else {
		c.state = refWaiting
	}
}

// mayUse reports whether channel ch of c may send at t: always, unless
// ChannelBuckets and its category bucket is not positive.
func (r *refScheduler) mayUse(c *refClient, ch Channel, t int64) bool {
	if !r.cfg.ChannelBuckets {
		return true
	}
	b := &c.category[refCategory(ch)]
	b.catchUp(t)
	return b.tokens > 0
}

// waitingSlot is the width of the fast scheduler's waiting calendar's
// slots (2^17 ns), slot boundaries counted from the Unix epoch.
const waitingSlot = 1 << 17

// readySlot is the width of its ready calendar's slots: 2^-12 virtual
// seconds, 2^20 units of 2^-32 s.
const readySlot = 1 << 20

// refWakeTime is when a waiting client becomes ready: the first
// nanosecond its bucket is positive (with ChannelBuckets, and also the
// category bucket of some backlogged channel), rounded up to the end of
// its slot in the waiting calendar (a multiple of 2^17 ns).
func refWakeTime(c *refClient) int64 {
	w := c.bucket.firstPositive()
	if c.category[Task].rate > 0 { // ChannelBuckets
		first := int64(math.MaxInt64)
		for ch := range Channel(NumChannels) {
			if len(c.queues[ch]) > 0 {
				first = min(first, c.category[refCategory(ch)].firstPositive())
			}
		}
		w = max(w, first)
	}
	return (w + waitingSlot - 1) / waitingSlot * waitingSlot
}

// refOutcome is what the reference allows a call of Next at some time: one
// of the candidates' packets (each client's next packet is determined, the
// client among them is the freedom), or, when there are none, wait.
type refOutcome struct {
	candidates []refCandidate
	wait       time.Duration
	waitFor    string // "scene", "client" or "nothing": what the wait is for
}

type refCandidate struct {
	client   int
	channel  Channel
	priority bool // sent on Avatar's guarantee, not charged to its tags
	packet   refPacket
}

// step wakes the waiting clients whose time has come and says what may
// leave at t: every ready client whose start tag is in the same ready slot
// as the smallest start tag, if the scene bucket is positive.
func (r *refScheduler) step(t int64) refOutcome {
	for _, c := range r.clients {
		if c.live && c.state == refWaiting && refWakeTime(c) <= t {
			c.start = max(r.v, c.finish)
			r.park(c, t)
			if c.state != refReady {
				panic("reference: a client woken at its refill time is not ready")
			}
		}
	}
	var ready []int
	for h, c := range r.clients {
		if c.live && c.state == refReady {
			ready = append(ready, h)
		}
	}
	if len(ready) > 0 {
		r.scene.catchUp(t)
		if r.scene.tokens <= 0 {
			return refOutcome{wait: time.Duration(r.scene.firstPositive() - t), waitFor: "scene"}
		}
		slices.SortStableFunc(ready, func(a, b int) int { return cmp.Compare(r.clients[a].start, r.clients[b].start) })
		minSlot := r.clients[ready[0]].start / readySlot
		var out refOutcome
		for _, h := range ready {
			if r.clients[h].start/readySlot != minSlot {
				break
			}
			out.candidates = append(out.candidates, r.headOf(h, t))
		}
		return out
	}
	wake := int64(-1)
	for _, c := range r.clients {
		if c.live && c.state == refWaiting {
			if w := refWakeTime(c); wake < 0 || w < wake {
				wake = w
			}
		}
	}
	if wake < 0 {
		return refOutcome{wait: Idle, waitFor: "nothing"}
	}
	return refOutcome{wait: time.Duration(wake - t), waitFor: "client"}
}

// headOf is the packet client h sends when its turn comes at t: Avatar's
// head while its guarantee lasts (with AvatarPriority), else the head of
// the backlogged channel with the smallest start tag, the lowest channel
// on a tie.
func (r *refScheduler) headOf(h int, t int64) refCandidate {
	c := r.clients[h]
	if r.cfg.AvatarPriority && len(c.queues[Avatar]) > 0 {
		c.avatar.catchUp(t)
		if c.avatar.tokens > 0 && r.mayUse(c, Avatar, t) {
			return refCandidate{client: h, channel: Avatar, priority: true, packet: c.queues[Avatar][0]}
		}
	}
	best, bestTag := -1, uint64(0)
	for ch := range NumChannels {
		if len(c.queues[ch]) == 0 {
			continue
		}
		if !r.mayUse(c, Channel(ch), t) {
			r.skipped++
			continue
		}
		if tag := max(c.vt, c.chFinish[ch]); best < 0 || tag < bestTag {
			best, bestTag = ch, tag
		}
	}
	return refCandidate{client: h, channel: Channel(best), packet: c.queues[best][0]}
}

// send lets the candidate's packet leave at t.
func (r *refScheduler) send(cand refCandidate, t int64) {
	c := r.clients[cand.client]
	ch := cand.channel
	c.queues[ch] = c.queues[ch][1:]
	size := cand.packet.size
	if cand.priority {
		c.avatar.take(size)
	} else {
		start := max(c.vt, c.chFinish[ch])
		c.vt = start
		c.chFinish[ch] = start + refSpan(size, c.rates[ch])
	}
	c.bucket.catchUp(t)
	c.bucket.take(size)
	if r.cfg.ChannelBuckets {
		b := &c.category[refCategory(ch)]
		b.catchUp(t)
		b.take(size)
	}
	r.scene.take(size)
	r.v = c.start
	c.finish = c.start + refSpan(size, sumRates(c.rates))
	c.stats.Channels[ch].SentPackets++
	c.stats.Channels[ch].SentBytes += uint64(size)
	r.stats.SentBytes += uint64(size)
	if c.queued() > 0 {
		c.start = c.finish
		r.park(c, t)
	} else {
		c.state = refIdle
	}
}

// clientStats is what ClientStats reports for client h.
func (r *refScheduler) clientStats(h int) (st ClientStats, queuedBytes [NumChannels]int64, ok bool) {
	c := r.client(h)
	if c == nil {
		return st, queuedBytes, false
	}
	for ch, q := range c.queues {
		for _, p := range q {
			queuedBytes[ch] += int64(p.size)
		}
	}
	return c.stats, queuedBytes, true
}

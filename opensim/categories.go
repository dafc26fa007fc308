package opensim

import (
	"math"
	"math/bits"
	"time"
)

// openSimMaxBurst is OpenSim's MAXBURST: a category bucket holds at most
// 7,500 bytes (OpenSim 0.9.2.2 TokenBucket.cs:54, applied in the
// RequestedBurst setter, :98-108). Used under Config.ChannelBuckets only.
const openSimMaxBurst = 7500

// bucketOf is the bucket each channel's packets take their tokens from
// under Config.ChannelBuckets: OpenSim's categories, so Avatar shares
// Task's, as OpenSim's Task category carries avatar updates too. Avatar's
// own entry in channelBuckets is unused.
var bucketOf = [NumChannels]uint8{Avatar: uint8(Task), Task: uint8(Task), Texture: uint8(Texture), Layer: uint8(Layer), Asset: uint8(Asset)}

// channelBuckets are one client's category buckets, indexed by bucketOf.
// They live in a slice of their own, allocated only under ChannelBuckets,
// so that the default mode's clients stay as small as they were.
type channelBuckets [NumChannels]bucket

// channelBurstFor is a category bucket's depth: rate × BurstTime, at most
// MAXBURST, at least MinBurst.
func (s *Scheduler[P]) channelBurstFor(rate int64) int64 {
	burstTime := int64(s.cfg.BurstTime)
	b := int64(openSimMaxBurst)
	if rate <= openSimMaxBurst*int64(time.Second)/burstTime { // else rate × BurstTime > MAXBURST, and might overflow
		b = rate * burstTime / int64(time.Second)
	}
	return max(b, s.cfg.MinBurst)
}

// applyChannelRates sets client i's category buckets to its channel rates;
// fresh buckets start full, as the client's own does.
func (s *Scheduler[P]) applyChannelRates(i uint32, rates [NumChannels]int64, ns int64, fresh bool) {
	cb := &s.chb[i]
	for k := range NumChannels {
		if k == int(Avatar) {
			continue
		}
		r := rates[k]
		if k == int(Task) {
			r += rates[Avatar]
		}
		if fresh {
			cb[k] = newBucket(r, s.channelBurstFor(r), ns)
		} else {
			cb[k].set(r, s.channelBurstFor(r), ns)
		}
	}
}

// parkChannels is park under ChannelBuckets: the client is ready when its
// own bucket and the bucket of at least one backlogged channel hold
// tokens, else it waits until both will. O(NumChannels).
func (s *Scheduler[P]) parkChannels(c *client[P], i uint32, ns int64) {
	cb := &s.chb[i]
	w := int64(math.MaxInt64)
	for b := c.backlog; b != 0; b &= b - 1 {
		k := &cb[bucketOf[bits.TrailingZeros8(b)]]
		k.refill(ns)
		w = min(w, k.wait())
	}
	w = max(w, c.bucket.wait())
	if w == 0 {
		c.state = stateReady
		s.push(s.ready, i, c.start>>readyShift)
		return
	}
	c.state = stateWaiting
	wake := uint64(ns + w)
	s.push(s.waiting, i, (wake+1<<waitingShift-1)>>waitingShift) // rounded up
}

// channelReady reports whether channel ch of client i may send under
// ChannelBuckets.
func (s *Scheduler[P]) channelReady(i uint32, ch Channel, ns int64) bool {
	k := &s.chb[i][bucketOf[ch]]
	k.refill(ns)
	return k.ready()
}

// pickChannel is send's choice under ChannelBuckets: the backlogged
// channel with the smallest start tag among those whose bucket holds
// tokens. park made the client ready only with one such channel, and a
// bucket only gains tokens until the client sends, so there is one.
func (s *Scheduler[P]) pickChannel(c *client[P], i uint32, ns int64) (ch int, start uint64) {
	ch = -1
	for b := c.backlog; b != 0; b &= b - 1 {
		k := bits.TrailingZeros8(b)
		if !s.channelReady(i, Channel(k), ns) {
			continue
		}
		st := maxTag(c.vt, c.chFinish[k])
		if ch < 0 || int64(st-start) < 0 {
			ch, start = k, st
		}
	}
	return ch, start
}

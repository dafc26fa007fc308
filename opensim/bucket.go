package opensim

// Token buckets count in integer nano-bytes (bytes × 1e9) so that a rate in
// bytes/s times an interval in nanoseconds adds tokens exactly, with no
// float drift and no division on the hot path.
const nanoPerByte = 1_000_000_000

// maxBurstBytes keeps burst × 1e9 well inside int64.
const maxBurstBytes = 1 << 30

// bucket is a token bucket. A packet may leave while tokens are positive
// and takes its whole size, so tokens go negative after a packet larger
// than what was left — OpenSim's TokenBucket.RemoveTokens does the same
// (protocol.md §8.4) — and a packet larger than the burst is sent from a
// full bucket rather than never.
type bucket struct {
	rate   int64 // bytes/s, ≥ 1
	burst  int64 // nano-bytes
	tokens int64 // nano-bytes
	last   int64 // ns of the latest refill
}

func newBucket(rate, burstBytes, now int64) bucket {
	b := bucket{rate: max(rate, 1), burst: min(max(burstBytes, 1), maxBurstBytes) * nanoPerByte, last: now}
	b.tokens = b.burst // a new client may send at once
	return b
}

// refill adds the tokens earned since the last refill, up to the burst.
func (b *bucket) refill(now int64) {
	el := now - b.last
	if el <= 0 {
		return
	}
	b.last = now
	need := b.burst - b.tokens
	if need <= 0 {
		return
	}
	if el > need/b.rate { // would pass the burst; also keeps rate×el in range
		b.tokens = b.burst
		return
	}
	b.tokens += b.rate * el
}

func (b *bucket) ready() bool      { return b.tokens > 0 }
func (b *bucket) take(bytes int64) { b.tokens -= bytes * nanoPerByte }

// wait is the time in ns until tokens are positive again.
func (b *bucket) wait() int64 {
	if b.tokens > 0 {
		return 0
	}
	return -b.tokens/b.rate + 1
}

// set changes the rate and burst, keeping the tokens earned so far (capped
// at the new burst).
func (b *bucket) set(rate, burstBytes, now int64) {
	b.refill(now)
	b.rate = max(rate, 1)
	b.burst = min(max(burstBytes, 1), maxBurstBytes) * nanoPerByte
	b.tokens = min(b.tokens, b.burst)
}

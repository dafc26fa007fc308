package region

import (
	"container/list"
	"net/netip"
	"time"
)

// Source prefixes that share a new-circuit budget: a /24 is the smallest
// IPv4 block routed on the Internet, a /64 the smallest IPv6 subnet a
// host is given, so an attacker who owns one address usually owns the
// whole block.
const (
	prefixBitsV4 = 24
	prefixBitsV6 = 64
)

// sourcePrefix is the block whose budget a source address draws on.
func sourcePrefix(a netip.Addr) netip.Prefix {
	a = a.Unmap()
	bits := prefixBitsV6
	if a.Is4() {
		bits = prefixBitsV4
	}
	p, _ := a.Prefix(bits)
	return p
}

// prefixLimiter is a token bucket of new circuits per source prefix, with
// a bounded table: when it is full the least recently used prefix makes
// room. An entry whose bucket has refilled carries no information (a new
// entry starts full), so evicting it changes nothing; evicting one that is
// still draining hands its prefix a fresh burst, which is counted, and
// which the cap on pending circuits still bounds.
type prefixLimiter struct {
	rate    float64 // tokens a second
	burst   float64
	max     int
	entries map[netip.Prefix]*list.Element
	lru     list.List // of *prefixBucket, least recently used first
	evicted uint64    // entries evicted before their bucket had refilled
}

type prefixBucket struct {
	prefix netip.Prefix
	tokens float64
	at     time.Time
}

func newPrefixLimiter(rate float64, burst, max int) *prefixLimiter {
	return &prefixLimiter{rate: rate, burst: float64(burst), max: max, entries: map[netip.Prefix]*list.Element{}}
}

// allow takes a token from the bucket of addr's prefix, if it has one.
// Time that stands still or goes backwards refills nothing.
func (l *prefixLimiter) allow(addr netip.Addr, now time.Time) bool {
	p := sourcePrefix(addr)
	var b *prefixBucket
	if e, ok := l.entries[p]; ok {
		b = e.Value.(*prefixBucket)
		l.refill(b, now)
		l.lru.MoveToBack(e)
	} else {
		if len(l.entries) >= l.max {
			l.evictOldest(now)
		}
		b = &prefixBucket{prefix: p, tokens: l.burst, at: now}
		l.entries[p] = l.lru.PushBack(b)
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

func (l *prefixLimiter) refill(b *prefixBucket, now time.Time) {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(l.burst, b.tokens+l.rate*d.Seconds())
		b.at = now
	}
}

func (l *prefixLimiter) evictOldest(now time.Time) {
	e := l.lru.Front()
	b := e.Value.(*prefixBucket)
	l.refill(b, now)
	if b.tokens < l.burst {
		l.evicted++
	}
	l.lru.Remove(e)
	delete(l.entries, b.prefix)
}

// len is the number of prefixes tracked.
func (l *prefixLimiter) len() int { return len(l.entries) }

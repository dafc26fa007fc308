package opensim

import "math/bits"

// calendarSlots is the number of slots of a calendar: a power of two, so
// slot numbers wrap with a mask, and a multiple of 64×64, so the two-level
// bitmap has whole words.
const calendarSlots = 1 << 13

const (
	calendarMask  = calendarSlots - 1
	calendarWords = calendarSlots / 64
)

// Where a client is linked: in no calendar, in a slot's list, or in a
// calendar's overflow heap.
const (
	linkedNowhere uint8 = iota
	linkedInSlot
	linkedFar
)

// calendar is a bucketed priority queue of clients: a calendar queue
// (Brown, CACM 1988) with the find-first-set bitmaps of Eiffel (Saeed et
// al., NSDI 2019). A key falls in slot key>>shift; each slot is a FIFO list
// threaded through the clients (client.next, client.prev), and a two-level
// bitmap finds the first non-empty slot in a few instructions. Insert,
// remove and find-first are O(1), where a binary heap of 10,000 clients
// sifts 13 levels per packet. The price is order within a slot: keys less
// than one slot apart leave first-come first-served.
//
// Slots are numbered from base, the earliest slot still in use, up to
// calendarSlots−1 past it; a key beyond that horizon waits in an overflow
// heap (far) until base comes near enough. Slot numbers compare in
// wrap-around arithmetic.
type calendar struct {
	shift   uint
	base    uint64
	n       int // clients in slots, not counting far
	slots   [calendarSlots]slotList
	words   [calendarWords]uint64      // bit s: slot s is not empty
	summary [calendarWords / 64]uint64 // bit w: words[w] is not 0
	far     minHeap                    // keyed by slot number
}

type slotList struct{ head, tail uint32 } // client index + 1; 0 means none

func newCalendar(shift uint) *calendar { return &calendar{shift: shift} }

func (q *calendar) mark(s int) {
	q.words[s>>6] |= 1 << (s & 63)
	q.summary[s>>12] |= 1 << ((s >> 6) & 63)
}

func (q *calendar) unmark(s int) {
	w := s >> 6
	q.words[w] &^= 1 << (s & 63)
	if q.words[w] == 0 {
		q.summary[w>>6] &^= 1 << (w & 63)
	}
}

// firstFrom returns the first set bit of a ring of bits at or after from,
// wrapping round; the ring must have a bit set.
func firstFrom(ring []uint64, from int) int {
	w := from >> 6
	if m := ring[w] >> (from & 63); m != 0 {
		return from + bits.TrailingZeros64(m)
	}
	for k := 1; k <= len(ring); k++ {
		j := (w + k) & (len(ring) - 1)
		if ring[j] != 0 {
			return j<<6 + bits.TrailingZeros64(ring[j])
		}
	}
	panic("opensim: calendar bitmap empty") // unreachable: callers check n > 0
}

// firstSlot returns the index of the first non-empty slot at or after
// base; q.n must be positive.
func (q *calendar) firstSlot() int {
	from := int(q.base & calendarMask)
	w := from >> 6
	if m := q.words[w] >> (from & 63); m != 0 {
		return from + bits.TrailingZeros64(m)
	}
	// The next non-empty word after w; coming back to w itself means the
	// only slots left are behind from in that word, which wraps round.
	j := firstFrom(q.summary[:], (w+1)&(calendarWords-1))
	return j<<6 + bits.TrailingZeros64(q.words[j])
}

// push links client i in at slot number slot: at the back of its list, or
// in the overflow heap when the slot lies beyond the horizon. A slot before
// base is taken as base.
func (s *Scheduler[P]) push(q *calendar, i uint32, slot uint64) {
	c := &s.clients[i]
	if int64(slot-q.base) < 0 {
		slot = q.base
	}
	if slot-q.base >= calendarSlots {
		c.linked = linkedFar
		q.far.push(heapItem{key: slot, client: i, ticket: c.ticket})
		return
	}
	idx := int(slot & calendarMask)
	l := &q.slots[idx]
	c.linked, c.slot, c.next, c.prev = linkedInSlot, uint32(idx), 0, l.tail
	if l.tail == 0 {
		l.head = i + 1
		q.mark(idx)
	} else {
		s.clients[l.tail-1].next = i + 1
	}
	l.tail = i + 1
	q.n++
}

// unlink takes client i out of the calendar it is in. O(1): a client in the
// overflow heap is left there, its ticket bumped so that the entry is
// skipped when it surfaces.
func (s *Scheduler[P]) unlink(q *calendar, i uint32) {
	c := &s.clients[i]
	switch c.linked {
	case linkedFar:
		c.ticket++
	case linkedInSlot:
		l := &q.slots[c.slot]
		if c.prev == 0 {
			l.head = c.next
		} else {
			s.clients[c.prev-1].next = c.next
		}
		if c.next == 0 {
			l.tail = c.prev
		} else {
			s.clients[c.next-1].prev = c.prev
		}
		if l.head == 0 {
			q.unmark(int(c.slot))
		}
		q.n--
	}
	c.linked = linkedNowhere
}

// first returns the client with the earliest slot and that slot's number,
// or ok false when the calendar is empty. Overflow entries that have come
// within the horizon are moved into their slots first; when only overflow
// entries are left, the earliest of them is returned (still linked far).
func (s *Scheduler[P]) first(q *calendar) (i uint32, slot uint64, ok bool) {
	for q.far.len() > 0 {
		h := q.far.top()
		c := &s.clients[h.client]
		if c.ticket != h.ticket || c.linked != linkedFar {
			q.far.pop() // stale
			continue
		}
		if h.key-q.base >= calendarSlots { // beyond the horizon still
			if q.n == 0 {
				return h.client, h.key, true
			}
			break
		}
		q.far.pop()
		c.linked = linkedNowhere
		s.push(q, h.client, h.key)
	}
	if q.n == 0 {
		return 0, 0, false
	}
	idx := q.firstSlot()
	return q.slots[idx].head - 1, q.base + uint64((idx-int(q.base&calendarMask))&calendarMask), true
}

// advance moves base forward to slot; base never goes back.
func (q *calendar) advance(slot uint64) {
	if int64(slot-q.base) > 0 {
		q.base = slot
	}
}

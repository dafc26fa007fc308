package opensim

// queue is a channel's FIFO. Its head entry is kept in the queue itself,
// inside the client, so that sending a packet reads only the client's own
// memory; the rest wait in a ring buffer whose length is a power of two, so
// positions wrap with a mask. The ring grows by doubling and never shrinks,
// so a busy channel stops allocating. Refilling the head from the ring
// after a pop is a load nothing waits on, so the processor overlaps it with
// what follows.
type queue[P any] struct {
	head  entry[P] // valid when n > 0
	ring  []entry[P]
	first uint32 // the ring's first position
	n     uint32 // entries, head included
	bytes int64

	// Sent counters live here, in the memory sending touches anyway.
	sentPackets, sentBytes uint64
}

type entry[P any] struct {
	p      P
	size   int32
	resend bool
}

// reset empties the queue and its counters for a new client, keeping the
// ring's storage.
func (q *queue[P]) reset() {
	ring := q.ring
	clear(ring)
	*q = queue[P]{ring: ring}
}

func (q *queue[P]) ringLen() uint32 { return q.n - 1 }

// grow doubles a full ring.
func (q *queue[P]) grow() {
	nr := make([]entry[P], max(2*len(q.ring), 4))
	for i := range uint32(len(q.ring)) {
		nr[i] = q.ring[(q.first+i)&uint32(len(q.ring)-1)]
	}
	q.ring, q.first = nr, 0
}

// admit counts e in and, if the queue was empty, makes it the head,
// reporting whether it did; otherwise it makes room in the ring for one
// more.
func (q *queue[P]) admit(e entry[P]) (isHead bool) {
	q.bytes += int64(e.size)
	q.n++
	if q.n == 1 {
		q.head = e
		return true
	}
	if q.ringLen() > uint32(len(q.ring)) {
		q.grow()
	}
	return false
}

func (q *queue[P]) pushBack(e entry[P]) {
	if !q.admit(e) {
		q.ring[(q.first+q.ringLen()-1)&uint32(len(q.ring)-1)] = e
	}
}

// pushFront queues a resend ahead of new data: it is the oldest data the
// client is waiting for.
func (q *queue[P]) pushFront(e entry[P]) {
	if !q.admit(e) {
		q.first = (q.first - 1) & uint32(len(q.ring)-1)
		q.ring[q.first] = q.head
		q.head = e
	}
}

func (q *queue[P]) pop() entry[P] {
	e := q.head
	q.n--
	q.bytes -= int64(e.size)
	if q.n == 0 {
		q.head = entry[P]{} // drop the reference for the garbage collector
		return e
	}
	q.head = q.ring[q.first]
	q.ring[q.first] = entry[P]{}
	q.first = (q.first + 1) & uint32(len(q.ring)-1)
	return e
}

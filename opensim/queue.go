package opensim

// queue is a channel's FIFO: a ring buffer whose length is a power of two,
// so positions wrap with a mask; it grows by doubling and never shrinks, so
// a busy channel stops allocating.
type queue[P any] struct {
	buf   []entry[P]
	head  int
	n     int
	bytes int64
}

type entry[P any] struct {
	p      P
	size   int32
	resend bool
}

func (q *queue[P]) grow() {
	nb := make([]entry[P], max(2*len(q.buf), 4))
	for i := range q.n {
		nb[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
	}
	q.buf, q.head = nb, 0
}

func (q *queue[P]) pushBack(e entry[P]) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = e
	q.n++
	q.bytes += int64(e.size)
}

// pushFront queues a resend ahead of new data: it is the oldest data the
// client is waiting for.
func (q *queue[P]) pushFront(e entry[P]) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.head = (q.head - 1) & (len(q.buf) - 1)
	q.buf[q.head] = e
	q.n++
	q.bytes += int64(e.size)
}

func (q *queue[P]) pop() entry[P] {
	e := q.buf[q.head]
	var zero entry[P]
	q.buf[q.head] = zero // drop the reference for the garbage collector
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	q.bytes -= int64(e.size)
	return e
}

package gateway

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/fairgrid/fairgrid/opensim/udpbatch"
)

// sendQueue sends what leaves towards viewers on one public socket. The
// core's lock held, datagrams are added in the order the scheduler lets
// them leave; the goroutine that added them flushes once it has let the
// lock go, unless another is flushing already, which then sends them
// too. So the system calls are made outside the core's lock — the
// readers wait less for it — several datagrams a sendmmsg when several
// wait, in their order.
type sendQueue struct {
	// write sends a batch and returns how many the kernel refused: a
	// udpbatch.Writer's, called by the flushing goroutine only.
	write func([]udpbatch.Datagram) (failed int)
	errs  atomic.Uint64 // datagrams the kernel refused

	mu       sync.Mutex // guards the fields below
	pending  []udpbatch.Datagram
	spare    []udpbatch.Datagram
	flushing bool
}

func newSendQueue(c *net.UDPConn) *sendQueue {
	return &sendQueue{write: udpbatch.NewWriter(c).Write}
}

// add queues b for to; b is the queue's until sent.
func (q *sendQueue) add(b []byte, to netip.AddrPort) {
	q.mu.Lock()
	q.pending = append(q.pending, udpbatch.Datagram{B: b, To: to})
	q.mu.Unlock()
}

// flush sends everything added, unless another goroutine is flushing:
// that one sends it.
func (q *sendQueue) flush() {
	q.mu.Lock()
	if q.flushing {
		q.mu.Unlock()
		return
	}
	q.flushing = true
	for len(q.pending) > 0 {
		batch := q.pending
		q.pending = q.spare[:0]
		q.mu.Unlock()
		q.errs.Add(uint64(q.write(batch)))
		clear(batch)
		q.mu.Lock()
		q.spare = batch[:0]
	}
	q.flushing = false
	q.mu.Unlock()
}

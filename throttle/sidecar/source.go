package sidecar

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
)

// ErrSourceClosed is what a closed PushSource's Next returns once it is
// drained.
var ErrSourceClosed = errors.New("source closed")

// PushSource is a Source fed by pushing: a proxy's relay goroutines or the
// link emulator's tap hand it the datagrams they forward, and the sidecar
// reads them. Push never blocks the relay: when the buffer is full the
// datagram is dropped and counted, since a relay that waited for
// measurement would delay the traffic it measures. Payloads are copied into
// an arena the source reuses once the reader has read them, so measuring
// allocates nothing per datagram.
//
// With a gathering time (NewPushSource's gather), the reader lets
// datagrams gather that long between batches, woken only by its timer:
// woken per datagram, it would cost the relay a goroutine hand-off each.
// Each datagram carries its relay time, so measurement is as exact; the
// loop sees it at most gather later, which nothing it decides at
// intervals of seconds notices. A buffer half full ends the gathering
// early, so nothing is dropped at a relay's full rate. After a batch comes
// up empty the reader waits for the next push, so an idle source does not
// wake at all.
type PushSource struct {
	gather     time.Duration
	mu         sync.Mutex
	pending    []lludp.Datagram
	arena      []byte // pending's payloads
	limit      int
	limitBytes int
	closed     bool
	wake       chan struct{} // a datagram arrived while the reader may wait
	half       chan struct{} // half the buffer is queued: the gathering ends
	done       chan struct{}
	once       sync.Once
	dropped    atomic.Uint64

	// The reader's own: the batch it is handing out and its payloads.
	batch      []lludp.Datagram
	batchArena []byte
	next       int
	timer      *time.Timer
}

// NewPushSource returns a source holding up to limit datagrams (at least
// 1) and limitBytes of their payloads not yet read, whose reader lets
// pushes gather for gather between batches (0: it takes each as it comes).
func NewPushSource(limit, limitBytes int, gather time.Duration) *PushSource {
	return &PushSource{limit: max(limit, 1), limitBytes: max(limitBytes, 1), gather: gather,
		wake: make(chan struct{}, 1), half: make(chan struct{}, 1), done: make(chan struct{})}
}

// chanSourceBytes bounds NewChanSource's payloads per datagram held: an
// LLUDP datagram is at most a few kilobytes (an MTU, or a 4 KB
// zero-coded message).
const chanSourceBytes = 4096

// NewChanSource returns a PushSource holding up to buffer datagrams that
// wakes its reader at each push: the lab's rigs, whose taps are slower than
// a proxy's relay and whose tests read what the loop saw at once.
func NewChanSource(buffer int) *PushSource {
	return NewPushSource(buffer, max(buffer, 1)*chanSourceBytes, 0)
}

// Push queues a copy of d and reports whether it was queued: false when
// the buffer is full (counted in Dropped) or the source is closed. d.At is
// the time the datagram was relayed, Src and Dst its endpoints as the
// simulator and the viewer know them. A relay that rewrites a datagram
// pushes it as forwarded: the loop recognises its own request in a
// rewritten AgentThrottle and does not re-assert over it. It is safe for
// concurrent use.
func (s *PushSource) Push(d lludp.Datagram) bool {
	return s.PushBatch([]lludp.Datagram{d}) == 1
}

// PushBatch queues copies of ds, in order, under one lock, and returns how
// many it queued: those that do not fit are dropped and counted; none is
// queued once the source is closed.
func (s *PushSource) PushBatch(ds []lludp.Datagram) int {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return 0
	}
	first := len(s.pending) == 0
	queued := 0
	for _, d := range ds {
		if len(s.pending) >= s.limit || len(s.arena)+len(d.Payload) > s.limitBytes {
			break
		}
		// A slice into an arena that append later moves still holds the
		// bytes copied here: the old array lives on as long as it does.
		start := len(s.arena)
		s.arena = append(s.arena, d.Payload...)
		d.Payload = s.arena[start:len(s.arena):len(s.arena)]
		s.pending = append(s.pending, d)
		queued++
	}
	half := len(s.pending) >= s.limit/2 || len(s.arena) >= s.limitBytes/2
	s.mu.Unlock()
	if half {
		select {
		case s.half <- struct{}{}:
		default:
		}
	}
	if queued < len(ds) {
		s.dropped.Add(uint64(len(ds) - queued))
	}
	if first && queued > 0 {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	return queued
}

// Next returns the next datagram pushed, in order, and ErrSourceClosed
// once the source is closed and drained. Its payload is valid until the
// following call.
func (s *PushSource) Next() (lludp.Datagram, error) {
	for s.next >= len(s.batch) {
		flowing := len(s.batch) > 0
		// The batch handed out is read: its memory goes back to the pushers.
		clear(s.batch)
		s.batch, s.next = s.batch[:0], 0
		if flowing && s.gather > 0 && !s.sleep() {
			continue // closed: drain what is queued
		}
		s.mu.Lock()
		s.batch, s.pending = s.pending, s.batch
		s.batchArena, s.arena = s.arena, s.batchArena[:0]
		closed := s.closed
		s.mu.Unlock()
		if len(s.batch) > 0 {
			break
		}
		if closed {
			return lludp.Datagram{}, ErrSourceClosed
		}
		select {
		case <-s.wake:
		case <-s.done:
		}
	}
	d := s.batch[s.next]
	s.next++
	return d, nil
}

// sleep lets datagrams gather for s.gather, or until half the buffer is
// queued; false if the source closed meanwhile.
func (s *PushSource) sleep() bool {
	if s.timer == nil {
		s.timer = time.NewTimer(s.gather)
	} else {
		s.timer.Reset(s.gather)
	}
	select {
	case <-s.timer.C:
		return true
	case <-s.half:
		s.timer.Stop()
		return true
	case <-s.done:
		return false
	}
}

// Close ends the source: Push refuses, Next returns what is queued, then
// ErrSourceClosed. Closing twice is harmless.
func (s *PushSource) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(s.done)
	})
	return nil
}

// Dropped counts datagrams Push dropped because the buffer was full.
func (s *PushSource) Dropped() uint64 { return s.dropped.Load() }

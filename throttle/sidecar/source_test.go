package sidecar

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fairgrid/fairgrid/capture"
)

// testGather is a proxy's gathering time.
const testGather = 100 * time.Millisecond

// TestPushSource: datagrams come out in the order pushed; a full buffer
// drops and counts; after Close, Push refuses and Next drains what was
// queued, then says the source is closed.
func TestPushSource(t *testing.T) {
	s := NewPushSource(3, 1<<20, testGather)
	at := time.Unix(1, 0)
	for i := range 5 {
		ok := s.Push(capture.Datagram{At: at.Add(time.Duration(i)), Payload: []byte{byte(i)}})
		if ok != (i < 3) {
			t.Errorf("push %d: %v", i, ok)
		}
	}
	if s.Dropped() != 2 {
		t.Errorf("dropped %d, want 2", s.Dropped())
	}
	for i := range 2 {
		d, err := s.Next()
		if err != nil || d.Payload[0] != byte(i) {
			t.Fatalf("next %d: %v %v", i, d.Payload, err)
		}
	}
	// Room again while one is still in the reader's batch.
	if !s.Push(capture.Datagram{Payload: []byte{9}}) {
		t.Error("push after a read refused")
	}
	s.Close()
	if s.Push(capture.Datagram{Payload: []byte{10}}) || s.Dropped() != 2 {
		t.Errorf("push after close accepted or counted as dropped (%d)", s.Dropped())
	}
	for _, want := range []byte{2, 9} {
		if d, err := s.Next(); err != nil || d.Payload[0] != want {
			t.Fatalf("draining: %v %v, want %d", d.Payload, err, want)
		}
	}
	if _, err := s.Next(); !errors.Is(err, ErrSourceClosed) {
		t.Errorf("after draining: %v", err)
	}
}

// TestPushSourceCloseWakesReader: a Next waiting for datagrams returns
// when the source closes.
func TestPushSourceCloseWakesReader(t *testing.T) {
	s := NewPushSource(8, 1<<20, testGather)
	done := make(chan error)
	go func() { _, err := s.Next(); done <- err }()
	s.Close()
	if err := <-done; !errors.Is(err, ErrSourceClosed) {
		t.Errorf("got %v", err)
	}
}

// TestPushSourceHalfFullWakesReader: a reader letting datagrams gather
// takes them as soon as half the buffer is queued, not testGather later,
// so a relay at full rate does not overflow it; below half it waits the
// whole testGather (virtual time).
func TestPushSourceHalfFullWakesReader(t *testing.T) {
	const limit = 64
	for _, tc := range []struct {
		name   string
		pushed int
		want   time.Duration
	}{
		{"below half", limit/2 - 1, testGather},
		{"half", limit / 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := NewPushSource(limit, 1<<20, testGather)
				defer s.Close()
				s.Push(capture.Datagram{Payload: []byte{0}})
				if _, err := s.Next(); err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				got := make(chan time.Duration)
				go func() {
					// The batch is read: Next lets the next one gather.
					if _, err := s.Next(); err != nil {
						t.Error(err)
					}
					got <- time.Since(start)
				}()
				synctest.Wait()
				for i := range tc.pushed {
					s.Push(capture.Datagram{Payload: []byte{byte(i)}})
				}
				if d := <-got; d != tc.want {
					t.Errorf("Next returned after %v, want %v", d, tc.want)
				}
			})
		})
	}
}

// TestChanSourceWakesAtEachPush: without a gathering time the reader takes
// each datagram as it is pushed, with no timer between batches (virtual
// time: no time passes).
func TestChanSourceWakesAtEachPush(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewChanSource(4)
		defer s.Close()
		start := time.Now()
		for i := range 3 {
			s.Push(capture.Datagram{Payload: []byte{byte(i)}})
			d, err := s.Next()
			if err != nil || d.Payload[0] != byte(i) {
				t.Fatalf("next %d: %v %v", i, d.Payload, err)
			}
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("reading took %v of virtual time, want none", d)
		}
		got := make(chan byte)
		go func() {
			d, _ := s.Next()
			got <- d.Payload[0]
		}()
		synctest.Wait()
		s.Push(capture.Datagram{Payload: []byte{9}})
		if b := <-got; b != 9 || time.Since(start) != 0 {
			t.Errorf("a waiting reader got %d after %v", b, time.Since(start))
		}
	})
}

// Package lludptest scripts LLUDP traffic for tests: reliable datagrams,
// numbered per direction as a circuit numbers them, at times the test
// chooses, handed to whatever observes them (a throttle.Loop, as a
// capture would).
package lludptest

import (
	"net/netip"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
)

// Script makes the datagrams and hands each to Observe.
type Script struct {
	T       testing.TB
	Start   time.Time // Send's at counts from here
	Observe func(lludp.Datagram)
	seq     map[[2]netip.AddrPort]uint32
}

// Send makes m a reliable datagram from src to dst, numbered after the
// last one that way, and observes it at Start plus at. It is not
// zero-coded: an image's zeros would shrink to nothing.
func (s *Script) Send(at time.Duration, src, dst netip.AddrPort, m lludp.Typed) {
	s.T.Helper()
	if s.seq == nil {
		s.seq = map[[2]netip.AddrPort]uint32{}
	}
	k := [2]netip.AddrPort{src, dst}
	s.seq[k]++
	b, err := lludp.AppendMessage(nil, lludp.Header{Flags: lludp.FlagReliable, Sequence: s.seq[k]}, m, nil)
	if err != nil {
		s.T.Fatal(err)
	}
	s.Observe(lludp.Datagram{At: s.Start.Add(at), Src: src, Dst: dst, Payload: b})
}

// Lose skips the next number from src to dst: a datagram lost on the
// way, which the next Send's number shows.
func (s *Script) Lose(src, dst netip.AddrPort) {
	if s.seq == nil {
		s.seq = map[[2]netip.AddrPort]uint32{}
	}
	s.seq[[2]netip.AddrPort{src, dst}]++
}

//go:build !linux

package socks5

import (
	"errors"
	"net"
	"net/netip"
)

// Without recvmmsg(2) and sendmmsg(2) a batch is one datagram read, and a
// write sends its datagrams one call each.
type (
	readerSys struct{}
	writerSys struct{}
)

func newBatchReader(c *net.UDPConn, headroom int) (*batchReader, error) {
	return &batchReader{conn: c, slots: newSlots(1, headroom), headroom: headroom}, nil
}

// relay reads datagrams until the socket is closed, calling handle with 1
// for each (in r.slots[0], valid until handle returns). Read errors other
// than the socket's closing (such as an ICMP error reported on the socket)
// are passing and skipped.
func (r *batchReader) relay(handle func(n int)) {
	s := &r.slots[0]
	for {
		n, from, err := r.conn.ReadFromUDPAddrPort(s.buf[r.headroom:])
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		s.n, s.from = n, netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		handle(1)
	}
}

func newBatchWriter(c *net.UDPConn) (*batchWriter, error) {
	return &batchWriter{conn: c}, nil
}

// write sends each datagram, marks those the kernel refused and returns
// how many it refused.
func (w *batchWriter) write(out []outgoing) (failed int) {
	for i := range out {
		if _, err := w.conn.WriteToUDPAddrPort(out[i].payload, out[i].to); err != nil {
			out[i].failed = true
			failed++
		}
	}
	return failed
}

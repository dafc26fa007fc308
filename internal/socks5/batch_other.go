//go:build !linux

package socks5

import (
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

// read blocks until a datagram arrives and returns 1, or the read error
// (net.ErrClosed once the socket is closed).
func (r *batchReader) read() (int, error) {
	s := &r.slots[0]
	n, from, err := r.conn.ReadFromUDPAddrPort(s.buf[r.headroom:])
	if err != nil {
		return 0, err
	}
	s.n, s.from = n, netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
	return 1, nil
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

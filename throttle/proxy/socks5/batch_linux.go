//go:build linux

package socks5

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// On Linux a batch is one recvmmsg(2) or sendmmsg(2). The calls are made
// with RawSyscall inside the socket's RawConn: the sockets are
// non-blocking, so a call never blocks (EAGAIN hands the wait to Go's
// poller), and skipping the runtime's system-call bookkeeping matters at a
// viewer's rates, where each datagram otherwise woke the runtime's monitor
// thread out of its idle sleep (profiled: a quarter of the relay's CPU at
// 5 Mbit/s). golang.org/x/net's ipv4/ipv6 ReadBatch makes the same call,
// but through syscall.Syscall and with a *net.UDPAddr allocated for each
// datagram read; this does neither, in the few lines it takes.
//
// The relay runs inside the RawConn's read callback (batchReader.relay),
// so that a batch shorter than the buffer goes straight back to waiting:
// recvmmsg on a non-blocking socket returns short only when the queue ran
// empty (or an error, which the kernel keeps for the next call and
// signals to the poller), so asking again would cost a system call per
// wake-up to hear EAGAIN. That is safe only within one RawConn.Read: each
// new call clears the readiness the poller recorded meanwhile
// (internal/poll's prepareRead), so a datagram that arrived while the
// batch was being relayed would wait for the next one
// (TestRelayWakesForDatagramDuringBatch).

type readerSys struct {
	rc     syscall.RawConn
	hdrs   []unix.Mmsghdr
	iovs   []unix.Iovec
	names  []unix.RawSockaddrInet6 // room for either family's address
	handle func(n int)             // relay's: what to do with each batch
	loopFn func(fd uintptr) bool   // made once: a closure per call would allocate
}

func newBatchReader(c *net.UDPConn, headroom int) (*batchReader, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("batch reader: %w", err)
	}
	r := &batchReader{conn: c, slots: newSlots(relayBatch, headroom), headroom: headroom}
	s := &r.sys
	s.rc = rc
	s.hdrs = make([]unix.Mmsghdr, relayBatch)
	s.iovs = make([]unix.Iovec, relayBatch)
	s.names = make([]unix.RawSockaddrInet6, relayBatch)
	for i := range s.hdrs {
		s.iovs[i].Base = &r.slots[i].buf[headroom]
		s.iovs[i].SetLen(len(r.slots[i].buf) - headroom)
		h := &s.hdrs[i].Hdr
		h.Iov = &s.iovs[i]
		h.SetIovlen(1)
		h.Name = (*byte)(unsafe.Pointer(&s.names[i]))
	}
	s.loopFn = func(fd uintptr) bool {
		for {
			for i := range s.hdrs {
				// The kernel writes back the address's length.
				s.hdrs[i].Hdr.Namelen = unix.SizeofSockaddrInet6
			}
			n, _, errno := unix.RawSyscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&s.hdrs[0])), uintptr(len(s.hdrs)), 0, 0, 0)
			switch errno {
			case 0:
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false // nothing queued: wait in the poller
			default:
				return true // passing: relay asks again
			}
			for i := range int(n) {
				sl := &r.slots[i]
				sl.n = int(s.hdrs[i].Len)
				sl.from = sockaddrAddrPort(&s.names[i])
			}
			s.handle(int(n))
			if int(n) < len(s.hdrs) {
				// The queue ran empty: wait for the next datagram without
				// asking again.
				return false
			}
		}
	}
	return r, nil
}

// relay reads batches until the socket is closed, calling handle with the
// number of datagrams each read into r.slots (valid until handle returns).
// Read errors other than the socket's closing (such as an ICMP error
// reported on the socket) are passing and skipped.
func (r *batchReader) relay(handle func(n int)) {
	s := &r.sys
	s.handle = handle
	for {
		if err := s.rc.Read(s.loopFn); err != nil {
			return // closed
		}
	}
}

// sockaddrAddrPort reads a sockaddr_in or sockaddr_in6, IPv4-mapped
// addresses unmapped. An IPv6 scope (zone) is not kept: simulators are
// not reached over link-local addresses.
func sockaddrAddrPort(sa *unix.RawSockaddrInet6) netip.AddrPort {
	port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:]) // sin_port is in network byte order
	if sa.Family == unix.AF_INET {
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), port)
	}
	return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), port)
}

type writerSys struct {
	rc      syscall.RawConn
	inet6   bool // an AF_INET6 socket: IPv4 destinations are written IPv4-mapped
	hdrs    []unix.Mmsghdr
	iovs    []unix.Iovec
	names   []unix.RawSockaddrInet6
	out     []outgoing // the batch being written
	off     int        // its first datagram not yet sent or refused
	refused int
	writeFn func(fd uintptr) bool
}

func newBatchWriter(c *net.UDPConn) (*batchWriter, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("batch writer: %w", err)
	}
	domain := unix.AF_INET
	var serr error
	if err := rc.Control(func(fd uintptr) { domain, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_DOMAIN) }); err != nil || serr != nil {
		return nil, fmt.Errorf("batch writer: socket domain: %w", errors.Join(err, serr))
	}
	w := &batchWriter{conn: c}
	s := &w.sys
	s.rc = rc
	s.inet6 = domain == unix.AF_INET6
	s.hdrs = make([]unix.Mmsghdr, relayBatch)
	s.iovs = make([]unix.Iovec, relayBatch)
	s.names = make([]unix.RawSockaddrInet6, relayBatch)
	for i := range s.hdrs {
		h := &s.hdrs[i].Hdr
		h.Iov = &s.iovs[i]
		h.SetIovlen(1)
		h.Name = (*byte)(unsafe.Pointer(&s.names[i]))
	}
	s.writeFn = func(fd uintptr) bool {
		for s.off < len(s.out) {
			n, _, errno := unix.RawSyscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&s.hdrs[s.off])), uintptr(len(s.out)-s.off), 0, 0, 0)
			switch {
			case errno == unix.EAGAIN:
				return false // the send buffer is full: wait until it drains
			case errno == unix.EINTR:
			case errno != 0:
				// sendmmsg reports an error only for the first datagram of
				// the call; the rest are tried again after it.
				s.out[s.off].failed = true
				s.refused++
				s.off++
			default:
				s.off += int(n)
			}
		}
		return true
	}
	return w, nil
}

// write sends the datagrams, marks those the kernel refused, and returns
// how many it refused.
func (w *batchWriter) write(out []outgoing) (failed int) {
	s := &w.sys
	for len(out) > 0 {
		chunk := out[:min(len(out), len(s.hdrs))]
		for i := range chunk {
			p := chunk[i].payload
			s.iovs[i].Base = unsafe.SliceData(p)
			s.iovs[i].SetLen(len(p))
			s.hdrs[i].Hdr.Namelen = putSockaddr(&s.names[i], chunk[i].to, s.inet6)
		}
		s.out, s.off, s.refused = chunk, 0, 0
		if err := s.rc.Write(s.writeFn); err != nil {
			// Closed: what was not sent is refused.
			for i := s.off; i < len(chunk); i++ {
				chunk[i].failed = true
				s.refused++
			}
		}
		failed += s.refused
		clear(s.iovs[:len(chunk)]) // payloads are not kept alive by the writer
		s.out = nil
		out = out[len(chunk):]
	}
	return failed
}

// putSockaddr writes to as the socket's family wants it and returns the
// address's length. An IPv6 destination on an IPv4 socket is written as
// IPv6, which the kernel refuses for that datagram alone.
func putSockaddr(sa *unix.RawSockaddrInet6, to netip.AddrPort, inet6 bool) uint32 {
	ip := to.Addr()
	if !inet6 && ip.Unmap().Is4() {
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		*sa4 = unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: ip.Unmap().As4()}
		binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa4.Port))[:], to.Port())
		return unix.SizeofSockaddrInet4
	}
	// As16 writes an IPv4 address IPv4-mapped, as a dual-stack socket
	// wants it.
	*sa = unix.RawSockaddrInet6{Family: unix.AF_INET6, Addr: ip.As16()}
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:], to.Port())
	return unix.SizeofSockaddrInet6
}

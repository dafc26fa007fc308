package viewer

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The shared fleet: one UDP socket per event loop stands in for all of
// that loop's viewers, so the kernel queues the region's datagrams on one
// socket (one wake-up per batch, not one per datagram and socket) and the
// loop reads up to sharedRecvBatch of them with one recvmmsg. All of
// 127.0.0.0/8 is local on Linux (the local routing table's "local
// 127.0.0.0/8 dev lo"), so each viewer still has an endpoint of its own:
// address fleetAddr(i) and its loop's port. The socket is bound to
// 0.0.0.0:port with IP_PKTINFO: the destination of each datagram received
// (ipi_addr) says which viewer it is for, and each datagram sent carries
// ipi_spec_dst, the source address the kernel puts on it (ip(7)). The
// region sees one distinct endpoint per viewer, as with a socket each.

// sharedRecvBatch is how many datagrams one recvmmsg takes.
const sharedRecvBatch = 64

// sharedSendBatch is the most datagrams one sendmmsg takes (UIO_MAXIOV);
// a fuller queue is sent before it grows.
const sharedSendBatch = 1024

// sharedRecvBuffer is each shared socket's receive buffer: the datagrams
// of thousands of viewers wait in it while the loop is busy. A 100-byte
// echo takes about 1 KB of buffer on loopback (its skb's truesize), so
// 32 MB holds half a second of the region's 52,000 echoes a second at
// 5,530 viewers. Set with SO_RCVBUFFORCE (root) or else up to the
// kernel's rmem_max.
const sharedRecvBuffer = 32 << 20

// Fleet addresses: viewer i is 127.(1+i/64000).((i/250) mod 256).(1+i mod
// 250). 127.0.0.x (where the region usually listens) is left alone, no
// address ends in .0 or .255, and 250 viewers share each /24, the prefix
// the region's admission control budgets new circuits by, so a fleet is
// a few dozen prefixes, not one per viewer.
const (
	fleetPerPrefix = 250
	fleetPerSecond = fleetPerPrefix * 256
	maxFleet       = fleetPerSecond * 254
)

// fleetAddr is viewer i's address.
func fleetAddr(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{127, byte(1 + i/fleetPerSecond), byte(i / fleetPerPrefix % 256), byte(1 + i%fleetPerPrefix)})
}

// fleetIndex is the viewer whose address a is.
func fleetIndex(a [4]byte) (int, bool) {
	if a[0] != 127 || a[1] < 1 || a[1] > 254 || a[3] < 1 || a[3] > fleetPerPrefix {
		return 0, false
	}
	return (int(a[1])-1)*fleetPerSecond + int(a[2])*fleetPerPrefix + int(a[3]) - 1, true
}

// sharedFleet is the shared sockets of one stress step.
type sharedFleet struct {
	sockets []*sharedSocket
}

// openShared opens one shared socket per event loop for n viewers of
// sim, and checks on each that a datagram sent from one fleet address to
// another arrives from and to those addresses; if anything fails, the
// caller may use a socket per viewer instead.
func openShared(sim netip.AddrPort, n int) (_ sharedSockets, err error) {
	if !sim.Addr().Is4() || !sim.Addr().IsLoopback() {
		return nil, fmt.Errorf("the region %v is not on IPv4 loopback, where every 127.x.y.z is this host's", sim)
	}
	if n > maxFleet {
		return nil, fmt.Errorf("%d viewers: at most %d addresses", n, maxFleet)
	}
	shards := fleetShards(n)
	f := &sharedFleet{}
	defer func() {
		if err != nil {
			f.close()
		}
	}()
	for s := range shards {
		sock, err := openSharedSocket(sim, s, shards)
		if err != nil {
			return nil, err
		}
		f.sockets = append(f.sockets, sock)
		if err := sock.probe(); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// endpoint is viewer i's address on its loop's socket.
func (f *sharedFleet) endpoint(i int) datagramConn {
	sock := f.sockets[i%len(f.sockets)]
	return &fleetEndpoint{sock: sock, self: netip.AddrPortFrom(fleetAddr(i), sock.port)}
}

// run serves vs, viewer i made on endpoint(i), until ctx ends and they
// have logged out; the sockets are closed when it returns.
func (f *sharedFleet) run(ctx context.Context, vs []*Viewer) error {
	return runShards(ctx, vs, len(f.sockets), func(s int, mine []*Viewer) (fleetIO, error) {
		f.sockets[s].members = mine
		return f.sockets[s], nil
	})
}

func (f *sharedFleet) close() {
	for _, s := range f.sockets {
		s.close()
	}
}

// sendFailures is how many datagrams the kernel refused, and the first
// reason.
func (f *sharedFleet) sendFailures() (uint64, error) {
	var n uint64
	var first error
	for _, s := range f.sockets {
		s.mu.Lock()
		n += s.failed
		first = firstErr(first, s.failedErr)
		s.mu.Unlock()
	}
	return n, first
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// sharedSocket is one event loop's socket and its batches.
type sharedSocket struct {
	conn          *net.UDPConn
	rc            syscall.RawConn
	port          uint16
	simAddrPort   netip.AddrPort
	sim           unix.RawSockaddrInet4 // the same, for sendmmsg and to compare sources with
	shard, shards int
	members       []*Viewer // member j is viewer j*shards+shard
	deadline      time.Time // the read deadline last set

	// receiving: recvmmsg fills a message per datagram
	rmsgs [sharedRecvBatch]unix.Mmsghdr
	riov  [sharedRecvBatch]unix.Iovec
	rfrom [sharedRecvBatch]unix.RawSockaddrInet4
	rctl  []byte // sharedRecvBatch control buffers of pktinfoSpace
	rbuf  []byte // sharedRecvBatch buffers of maxUDPDatagram

	mu sync.Mutex // guards the send queue: viewers write holding their own lock
	// sending: datagrams queued since the last flush, each with its source
	smsgs     []unix.Mmsghdr
	siov      []unix.Iovec
	sctl      []byte
	sbuf      [][]byte
	ssrc      [][4]byte
	queued    int
	failed    uint64 // datagrams the kernel refused
	failedErr error
}

// maxUDPDatagram: nothing the region sends is cut short.
const maxUDPDatagram = 65535

var pktinfoSpace = unix.CmsgSpace(unix.SizeofInet4Pktinfo)

func openSharedSocket(sim netip.AddrPort, shard, shards int) (*sharedSocket, error) {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4zero})
	if err != nil {
		return nil, fmt.Errorf("shared fleet: %w", err)
	}
	rc, err := conn.SyscallConn()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("shared fleet: %w", err)
	}
	var optErr error
	err = rc.Control(func(fd uintptr) {
		optErr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_PKTINFO, 1)
		if optErr == nil && unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, sharedRecvBuffer) != nil {
			conn.SetReadBuffer(sharedRecvBuffer) // not root: what rmem_max allows
		}
	})
	if err = errors.Join(err, optErr); err != nil {
		conn.Close()
		return nil, fmt.Errorf("shared fleet: IP_PKTINFO: %w", err)
	}
	s := &sharedSocket{conn: conn, rc: rc, port: uint16(conn.LocalAddr().(*net.UDPAddr).Port), shard: shard, shards: shards,
		simAddrPort: sim, sim: sockaddr4(sim), rctl: make([]byte, sharedRecvBatch*pktinfoSpace), rbuf: make([]byte, sharedRecvBatch*maxUDPDatagram)}
	for i := range s.rmsgs {
		s.riov[i].Base = &s.rbuf[i*maxUDPDatagram]
		s.riov[i].SetLen(maxUDPDatagram)
	}
	return s, nil
}

func sockaddr4(a netip.AddrPort) unix.RawSockaddrInet4 {
	sa := unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: a.Addr().As4()}
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:], a.Port())
	return sa
}

func (s *sharedSocket) close() { s.conn.Close() }

// probeTimeout bounds the wait for the probe's datagram, which loopback
// delivers before sendmsg returns.
const probeTimeout = time.Second

// probe sends a datagram from fleet address 0 to fleet address 1 on this
// socket's port and checks that it arrives from the one, to the other:
// that the kernel takes the source address and reports the destination.
func (s *sharedSocket) probe() error {
	src, dst := fleetAddr(0), fleetAddr(1)
	token := []byte(fmt.Sprintf("fairgrid fleet probe %d/%d", s.port, s.shard))
	to := &unix.SockaddrInet4{Port: int(s.port), Addr: dst.As4()}
	oob := pktinfoCmsg(src.As4())
	var sendErr error
	err := s.rc.Write(func(fd uintptr) bool {
		_, sendErr = unix.SendmsgN(int(fd), token, oob, to, 0)
		return sendErr != unix.EAGAIN
	})
	if err = errors.Join(err, sendErr); err != nil {
		return fmt.Errorf("shared fleet: a datagram from %v: %w", src, err)
	}
	if err := s.conn.SetReadDeadline(time.Now().Add(probeTimeout)); err != nil {
		return fmt.Errorf("shared fleet: %w", err)
	}
	defer s.conn.SetReadDeadline(time.Time{})
	buf, ctl := make([]byte, 256), make([]byte, pktinfoSpace)
	for {
		var n, ctlN int
		var from unix.Sockaddr
		var recvErr error
		err := s.rc.Read(func(fd uintptr) bool {
			n, ctlN, _, from, recvErr = unix.Recvmsg(int(fd), buf, ctl, 0)
			return recvErr != unix.EAGAIN
		})
		if err = errors.Join(err, recvErr); err != nil {
			return fmt.Errorf("shared fleet: the probe from %v to %v did not arrive: %w", src, dst, err)
		}
		if !bytes.Equal(buf[:n], token) {
			continue // not ours: the port is the whole host's
		}
		f, ok := from.(*unix.SockaddrInet4)
		got, gotOK := pktinfoDst(ctl[:ctlN])
		if !ok || f.Addr != src.As4() || f.Port != int(s.port) || !gotOK || got != dst.As4() {
			return fmt.Errorf("shared fleet: the probe from %v to %v arrived from %v to %v (pktinfo %v)", src, dst, from, netip.AddrFrom4(got), gotOK)
		}
		return nil
	}
}

// pktinfoCmsg is a control message that sends from src.
func pktinfoCmsg(src [4]byte) []byte {
	b := make([]byte, pktinfoSpace)
	putPktinfo(b, src)
	return b
}

// putPktinfo writes an IP_PKTINFO control message with ipi_spec_dst src
// (the source address; ipi_ifindex 0: the route decides) into b.
func putPktinfo(b []byte, src [4]byte) {
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = unix.IPPROTO_IP, unix.IP_PKTINFO
	h.SetLen(unix.CmsgLen(unix.SizeofInet4Pktinfo))
	info := (*unix.Inet4Pktinfo)(unsafe.Pointer(&b[unix.CmsgLen(0)]))
	*info = unix.Inet4Pktinfo{Spec_dst: src}
}

// pktinfoDst finds the IP_PKTINFO control message in b and returns the
// datagram's destination address (ipi_addr).
func pktinfoDst(b []byte) ([4]byte, bool) {
	hdrLen := unix.CmsgLen(0)
	for len(b) >= hdrLen {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
		l := int(h.Len)
		if l < hdrLen || l > len(b) {
			return [4]byte{}, false
		}
		if h.Level == unix.IPPROTO_IP && h.Type == unix.IP_PKTINFO && l >= unix.CmsgLen(unix.SizeofInet4Pktinfo) {
			return (*unix.Inet4Pktinfo)(unsafe.Pointer(&b[hdrLen])).Addr, true
		}
		b = b[min(unix.CmsgSpace(l-hdrLen), len(b)):]
	}
	return [4]byte{}, false
}

// wait reads what has arrived, up to sharedRecvBatch datagrams, waiting
// until deadline at most for the first, and hands each to its viewer.
func (s *sharedSocket) wait(deadline time.Time) error {
	if !deadline.Equal(s.deadline) {
		if err := s.conn.SetReadDeadline(deadline); err != nil {
			return fmt.Errorf("shared fleet: %w", err)
		}
		s.deadline = deadline
	}
	var n int
	var errno syscall.Errno
	err := s.rc.Read(func(fd uintptr) bool {
		n, errno = s.recvmmsg(fd)
		return errno != unix.EAGAIN // nothing yet: park until readable
	})
	if errors.Is(err, os.ErrDeadlineExceeded) || errno == unix.EINTR {
		return nil
	}
	if err != nil {
		return fmt.Errorf("shared fleet: %w", err)
	}
	if errno != 0 {
		return fmt.Errorf("shared fleet: recvmmsg: %w", errno)
	}
	at := time.Now()
	for i := range n {
		m := &s.rmsgs[i]
		if from := &s.rfrom[i]; from.Family != unix.AF_INET || from.Addr != s.sim.Addr || from.Port != s.sim.Port {
			continue // not the region's, as read checks
		}
		ctl := s.rctl[i*pktinfoSpace : i*pktinfoSpace+min(int(m.Hdr.Controllen), pktinfoSpace)]
		v := s.member(ctl)
		if v == nil {
			continue
		}
		off := i * maxUDPDatagram
		v.mu.Lock()
		v.handle(inbound{data: s.rbuf[off : off+int(m.Len)], at: at})
		v.mu.Unlock()
	}
	return nil
}

// member is the viewer of this loop a datagram with control messages ctl
// was sent to, or nil.
func (s *sharedSocket) member(ctl []byte) *Viewer {
	dst, ok := pktinfoDst(ctl)
	if !ok {
		return nil
	}
	i, ok := fleetIndex(dst)
	if !ok || i%s.shards != s.shard || i/s.shards >= len(s.members) {
		return nil
	}
	return s.members[i/s.shards]
}

// recvmmsg reads up to sharedRecvBatch datagrams without waiting.
func (s *sharedSocket) recvmmsg(fd uintptr) (int, syscall.Errno) {
	for i := range s.rmsgs {
		h := &s.rmsgs[i].Hdr
		h.Name = (*byte)(unsafe.Pointer(&s.rfrom[i]))
		h.Namelen = unix.SizeofSockaddrInet4
		h.Iov = &s.riov[i]
		h.SetIovlen(1)
		h.Control = &s.rctl[i*pktinfoSpace]
		h.SetControllen(pktinfoSpace)
		h.Flags = 0
	}
	n, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&s.rmsgs[0])), sharedRecvBatch,
		unix.MSG_DONTWAIT, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), 0
}

// queue copies a datagram from src to the region into the send batch.
func (s *sharedSocket) queue(b []byte, src [4]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queued == sharedSendBatch {
		s.flushLocked()
	}
	if s.queued == len(s.sbuf) {
		s.smsgs = append(s.smsgs, unix.Mmsghdr{})
		s.siov = append(s.siov, unix.Iovec{})
		s.sbuf = append(s.sbuf, make([]byte, 0, 256))
		s.ssrc = append(s.ssrc, [4]byte{})
	}
	s.sbuf[s.queued] = append(s.sbuf[s.queued][:0], b...)
	s.ssrc[s.queued] = src
	s.queued++
}

// flush sends the queued datagrams, in as few sendmmsg calls as the kernel
// takes.
func (s *sharedSocket) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked()
}

func (s *sharedSocket) flushLocked() {
	n := s.queued
	if n == 0 {
		return
	}
	if len(s.sctl) < n*pktinfoSpace {
		s.sctl = make([]byte, len(s.sbuf)*pktinfoSpace)
	}
	for i := range n {
		ctl := s.sctl[i*pktinfoSpace : (i+1)*pktinfoSpace]
		putPktinfo(ctl, s.ssrc[i])
		if len(s.sbuf[i]) > 0 {
			s.siov[i].Base = &s.sbuf[i][0]
		} else {
			s.siov[i].Base = nil
		}
		s.siov[i].SetLen(len(s.sbuf[i]))
		h := &s.smsgs[i].Hdr
		h.Name = (*byte)(unsafe.Pointer(&s.sim))
		h.Namelen = unix.SizeofSockaddrInet4
		h.Iov = &s.siov[i]
		h.SetIovlen(1)
		h.Control = &ctl[0]
		h.SetControllen(pktinfoSpace)
	}
	for sent := 0; sent < n; {
		var k int
		var errno syscall.Errno
		err := s.rc.Write(func(fd uintptr) bool {
			r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&s.smsgs[sent])), uintptr(n-sent), 0, 0, 0)
			k, errno = int(r), e
			return errno != unix.EAGAIN // a full buffer: wait until it drains
		})
		if err == nil && errno == 0 && k > 0 {
			sent += k
			continue
		}
		// The datagram at sent was refused: count it and send the rest,
		// as UDP may lose it.
		s.failed++
		if s.failedErr == nil {
			s.failedErr = firstErr(err, error(errno))
		}
		sent++
	}
	s.queued = 0
}

// fleetEndpoint is a viewer's address on a shared socket: what it writes
// joins the loop's next sendmmsg, from its own address; what it receives
// the loop reads and hands it.
type fleetEndpoint struct {
	sock *sharedSocket
	self netip.AddrPort
}

var errFleetRead = fmt.Errorf("a shared fleet's viewer is read by its event loop: %w", net.ErrClosed)

func (e *fleetEndpoint) WriteToUDPAddrPort(b []byte, to netip.AddrPort) (int, error) {
	if to != e.sock.simAddrPort {
		return 0, fmt.Errorf("shared fleet: a datagram to %v: its socket sends only to the region", to)
	}
	e.sock.queue(b, e.self.Addr().As4())
	return len(b), nil
}

func (e *fleetEndpoint) ReadFromUDPAddrPort([]byte) (int, netip.AddrPort, error) {
	return 0, netip.AddrPort{}, errFleetRead
}

func (e *fleetEndpoint) LocalAddr() net.Addr { return net.UDPAddrFromAddrPort(e.self) }

// Close: the loop closes the shared socket when its viewers are done.
func (e *fleetEndpoint) Close() error { return nil }

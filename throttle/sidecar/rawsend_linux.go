//go:build linux

package sidecar

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/fairgrid/fairgrid/capture/ipsum"
	"github.com/fairgrid/fairgrid/throttle"
	"golang.org/x/sys/unix"
)

// ErrNoRawSocket: the process lacks CAP_NET_RAW (or root).
var ErrNoRawSocket = errors.New("sending as the viewer needs CAP_NET_RAW (run as root, or grant it as configs/fairgrid.service does); --dry-run measures and decides without sending")

// RawSender sends each request from the viewer's own ip:port, the only
// source a simulator accepts an AgentThrottle from (protocol.md §10): an
// IPv4 raw socket with a header fairgrid writes, and for IPv6 a raw UDP
// socket whose source address is set per packet (IPV6_PKTINFO) and whose
// checksum the kernel computes.
type RawSender struct {
	fd4, fd6 int
}

// NewRawSender opens the raw sockets.
func NewRawSender() (*RawSender, error) {
	fd4, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_RAW)
	if err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return nil, ErrNoRawSocket
		}
		return nil, fmt.Errorf("raw IPv4 socket: %w", err)
	}
	fd6, err := unix.Socket(unix.AF_INET6, unix.SOCK_RAW, unix.IPPROTO_UDP)
	if err == nil {
		// The kernel computes the UDP checksum at offset 6 of what we write.
		err = unix.SetsockoptInt(fd6, unix.IPPROTO_IPV6, unix.IPV6_CHECKSUM, 6)
	}
	if err != nil {
		fd6 = -1 // no IPv6 on this host: IPv6 circuits get an error per send
	}
	return &RawSender{fd4: fd4, fd6: fd6}, nil
}

// Close closes the sockets.
func (s *RawSender) Close() error {
	if s.fd6 >= 0 {
		unix.Close(s.fd6)
	}
	return unix.Close(s.fd4)
}

// Send sends r's AgentThrottle from the viewer's endpoint to the simulator.
func (s *RawSender) Send(_ context.Context, r throttle.Request) error {
	payload, err := r.Encode()
	if err != nil {
		return err
	}
	src, dst := r.Circuit.Viewer, r.Circuit.Sim
	if src.Addr().Is4() != dst.Addr().Is4() {
		return fmt.Errorf("send to %v from %v: mixed address families", dst, src)
	}
	if src.Addr().Is4() {
		return s.send4(src, dst, payload)
	}
	return s.send6(src, dst, payload)
}

func udpHeader(src, dst netip.AddrPort, n int) []byte {
	h := make([]byte, 8, 8+n)
	binary.BigEndian.PutUint16(h[0:], src.Port())
	binary.BigEndian.PutUint16(h[2:], dst.Port())
	binary.BigEndian.PutUint16(h[4:], uint16(8+n))
	return h // checksum 0: optional over IPv4, filled by the kernel over IPv6
}

func (s *RawSender) send4(src, dst netip.AddrPort, payload []byte) error {
	total := 20 + 8 + len(payload)
	pkt := make([]byte, 20, total)
	pkt[0] = 0x45 // version 4, 20-byte header
	binary.BigEndian.PutUint16(pkt[2:], uint16(total))
	binary.BigEndian.PutUint16(pkt[6:], 0x4000) // don't fragment
	pkt[8] = 64                                 // TTL
	pkt[9] = unix.IPPROTO_UDP
	a, b := src.Addr().As4(), dst.Addr().As4()
	copy(pkt[12:], a[:])
	copy(pkt[16:], b[:])
	binary.BigEndian.PutUint16(pkt[10:], ipsum.Header(pkt[:20]))
	pkt = append(append(pkt, udpHeader(src, dst, len(payload))...), payload...)
	return unix.Sendto(s.fd4, pkt, 0, &unix.SockaddrInet4{Addr: b})
}

func (s *RawSender) send6(src, dst netip.AddrPort, payload []byte) error {
	if s.fd6 < 0 {
		return errors.New("no raw IPv6 socket on this host")
	}
	pkt := append(udpHeader(src, dst, len(payload)), payload...)
	info := unix.Inet6Pktinfo{Addr: src.Addr().As16()}
	oob := unix.PktInfo6(&info)
	return unix.Sendmsg(s.fd6, pkt, oob, &unix.SockaddrInet6{Addr: dst.Addr().As16()}, 0)
}

package socks5

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
)

// destinations is what CONNECT may not reach, decided on the address the
// dial actually connects to (a name is checked as resolved, each address
// the dialer tries):
//
//   - never the proxy's own listener or its own services (Config.OwnAddrs:
//     its metrics), where a CONNECT would nest back into the proxy or read
//     what the proxy keeps to its host;
//   - when the proxy listens beyond loopback, nothing on the host's
//     loopback, no unspecified address (which connects to the host
//     itself) and nothing link-local: services bound there trust that only
//     the host or its link reaches them, and a remote client must not
//     reach them through the proxy. A proxy listening on loopback serves
//     the host's own viewer, which may reach them directly anyway: then
//     only the allowed ports apply (a region on the same host is a
//     common OpenSim set-up).
type destinations struct {
	local bool                // the listener is on loopback
	own   []netip.AddrPort    // unspecified address: every local address at that port
	addrs map[netip.Addr]bool // the host's addresses, for own addresses on every interface
}

// errDestination wraps every destination refusal.
var errDestination = errors.New("destination not allowed")

func newDestinations(listen netip.AddrPort, own []netip.AddrPort) *destinations {
	d := &destinations{local: listen.Addr().Unmap().IsLoopback(), own: append([]netip.AddrPort{listen}, own...), addrs: map[netip.Addr]bool{}}
	if ifs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range ifs {
			if p, err := netip.ParsePrefix(a.String()); err == nil {
				d.addrs[p.Addr().Unmap()] = true
			}
		}
	}
	return d
}

// check refuses dst with a reason, or returns nil.
func (d *destinations) check(dst netip.AddrPort) error {
	ip := dst.Addr().Unmap()
	for _, o := range d.own {
		oip := o.Addr().Unmap()
		if o.Port() != dst.Port() {
			continue
		}
		if ip == oip || oip.IsUnspecified() && (ip.IsLoopback() || ip.IsUnspecified() || d.addrs[ip]) ||
			oip.IsLoopback() && ip.IsUnspecified() {
			return fmt.Errorf("%w: %v is the proxy's own address (%v)", errDestination, dst, o)
		}
	}
	if d.local {
		return nil
	}
	switch {
	case ip.IsLoopback(), ip.IsUnspecified():
		return fmt.Errorf("%w: %v is the proxy host's own (loopback), and the proxy listens beyond loopback", errDestination, dst)
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast():
		return fmt.Errorf("%w: %v is link-local, and the proxy listens beyond loopback", errDestination, dst)
	}
	return nil
}

// control is the CONNECT dialer's check of each address it tries, before
// it connects.
func (s *Server) control(_ context.Context, _, address string, _ syscall.RawConn) error {
	d := s.dest.Load()
	if d == nil {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %q", errDestination, address)
	}
	return d.check(ap)
}

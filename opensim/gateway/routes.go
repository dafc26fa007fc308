package gateway

import (
	"fmt"
	"net"
	"net/netip"
)

// hostAddrs are this host's own addresses and its IPv4 subnets' broadcast
// addresses, which a route must not reach.
type hostAddrs struct {
	own, broadcast map[netip.Addr]bool
}

// localAddrs reads the host's interfaces (one system call; an error
// leaves only what needs no lookup: loopback, the limited broadcast).
var localAddrs = func() hostAddrs {
	h := hostAddrs{own: map[netip.Addr]bool{}, broadcast: map[netip.Addr]bool{}}
	as, err := net.InterfaceAddrs()
	if err != nil {
		return h
	}
	for _, a := range as {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(n.IP)
		if !ok {
			continue
		}
		ip = ip.Unmap()
		h.own[ip] = true
		if ip4 := n.IP.To4(); ip4 != nil && len(n.Mask) == net.IPv4len {
			ones, bits := n.Mask.Size()
			if bits-ones >= 2 { // a /31 or /32 has no broadcast address
				var b [4]byte
				for i := range b {
					b[i] = ip4[i] | ^n.Mask[i]
				}
				h.broadcast[netip.AddrFrom4(b)] = true
			}
		}
	}
	return h
}

// SimulatorPortsMin starts the ports regions use: OpenSim's from 9000 (and any
// an operator picks above the well-known ones), Second Life's
// 12035-13050. A region port below them is a service's (22: ssh, 53:
// DNS): WithDefaults accepts it but RouteWarnings names it.
const SimulatorPortsMin = 1024

// CheckRoutes refuses routes that would turn the gateway on itself or
// on many hosts: a region that is a listen address of the gateway (its
// own route's, a loop; another route's, a loop between routes — a
// datagram would come back as a new viewer, and each a new circuit), a
// region at the unspecified, a broadcast or a multicast address, or a
// listen address that is broadcast or multicast; a listen address given
// twice. A listen address that is unspecified matches every address of
// the host at its port.
func CheckRoutes(routes []Route, host hostAddrs) []error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format+": %w", append(a, ErrConfig)...)) }
	listens := map[netip.AddrPort]bool{}
	isListen := func(region netip.AddrPort) (int, bool) {
		ra := region.Addr().Unmap()
		for j, r := range routes {
			la := r.Listen.Addr().Unmap()
			if r.Listen.Port() != region.Port() {
				continue
			}
			if la == ra || (la.IsUnspecified() && (ra.IsLoopback() || host.own[ra])) {
				return j, true
			}
		}
		return 0, false
	}
	for i, r := range routes {
		if !r.Listen.IsValid() || !r.Region.IsValid() || r.Region.Port() == 0 {
			bad("route %d: listen %v, region %v: want ip:port for both", i, r.Listen, r.Region)
			continue
		}
		ra, la := r.Region.Addr().Unmap(), r.Listen.Addr().Unmap()
		switch {
		case ra.IsUnspecified():
			bad("route %d: region %v: want a specific address, not the unspecified one", i, r.Region)
		case ra.IsMulticast():
			bad("route %d: region %v is a multicast address", i, r.Region)
		case ra == netip.AddrFrom4([4]byte{255, 255, 255, 255}) || host.broadcast[ra]:
			bad("route %d: region %v is a broadcast address", i, r.Region)
		}
		if la.IsMulticast() || la == netip.AddrFrom4([4]byte{255, 255, 255, 255}) || host.broadcast[la] {
			bad("route %d: listen %v is a broadcast or multicast address", i, r.Listen)
		}
		if j, loop := isListen(r.Region); loop {
			if j == i {
				bad("route %d: region %v is the route's own listen address %v: a loop", i, r.Region, r.Listen)
			} else {
				bad("route %d: region %v is route %d's listen address %v: a loop between routes", i, r.Region, j, routes[j].Listen)
			}
		}
		if listens[r.Listen] {
			bad("route %d: listen %v used twice", i, r.Listen)
		}
		listens[r.Listen] = true
	}
	return errs
}

// RouteWarnings names what a valid configuration has that is likely a
// mistake: a region port below SimulatorPortsMin.
func RouteWarnings(routes []Route) []string {
	var w []string
	for i, r := range routes {
		if r.Region.Port() < SimulatorPortsMin {
			w = append(w, fmt.Sprintf("route %d: region port %d is outside the simulator range (%d and above): a well-known service's", i, r.Region.Port(), SimulatorPortsMin))
		}
	}
	return w
}

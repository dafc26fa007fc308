package capturetest

import (
	"net/netip"
	"time"
)

// Relay returns ds as a capture on the host of a relay (fairgrid proxy or
// link, a SOCKS proxy) would hold them: every datagram on the viewer's leg
// (viewer to relay, at relay) and again, 1 ms later, on the relay's leg
// (relay to the simulator, from a port of relay's address). Datagrams to
// simPort go up, the others down.
func Relay(ds []Datagram, relay netip.AddrPort, simPort uint16) []Datagram {
	out := make([]Datagram, 0, 2*len(ds))
	// the relay's port toward the simulator for each viewer
	leg := func(viewer netip.AddrPort) netip.AddrPort {
		return netip.AddrPortFrom(relay.Addr(), relay.Port()+1+viewer.Port()%100)
	}
	for _, d := range ds {
		next := d
		next.At = d.At.Add(time.Millisecond)
		if d.Dst.Port() == simPort {
			out = append(out, Datagram{At: d.At, Src: d.Src, Dst: relay, Payload: d.Payload})
			next.Src = leg(d.Src)
		} else {
			out = append(out, Datagram{At: d.At, Src: d.Src, Dst: leg(d.Dst), Payload: d.Payload})
			next.Src = relay
		}
		out = append(out, next)
	}
	return out
}

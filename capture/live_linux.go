//go:build linux

package capture

import (
	"fmt"
	"net"

	"github.com/gopacket/gopacket/pcapgo"
	"golang.org/x/net/bpf"
)

// OpenLive captures on a network interface through an AF_PACKET socket
// (pcapgo's EthernetHandle: no cgo, no libpcap), with an in-kernel BPF
// filter that passes only UDP over IPv4 or IPv6 on the given ports (nil:
// every UDP port). It needs CAP_NET_RAW.
//
// On a loopback interface every datagram passes the packet socket twice,
// once going out and once coming in; the filter drops the outgoing copy, so
// each datagram is counted once.
func OpenLive(iface string, ports Ports) (*Reader, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, fmt.Errorf("capture on %s: %w", iface, err)
	}
	h, err := pcapgo.NewEthernetHandle(iface)
	if err != nil {
		return nil, fmt.Errorf("capture on %s (needs CAP_NET_RAW): %w", iface, err)
	}
	filter, err := udpFilter(ports, ifi.Flags&net.FlagLoopback != 0)
	var prog []bpf.RawInstruction
	if err == nil {
		prog, err = bpf.Assemble(filter)
	}
	if err == nil {
		err = h.SetBPF(prog)
	}
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("capture on %s: install BPF filter: %w", iface, err)
	}
	r := &Reader{src: h, linkType: LinkEthernet, ports: ports, closer: h}
	r.kernel = func() (uint64, error) {
		st, err := h.Stats()
		if err != nil {
			return 0, err
		}
		return uint64(st.Drops), nil // reading the counters resets them
	}
	return r, nil
}

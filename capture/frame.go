package capture

import (
	"encoding/binary"
	"net/netip"
)

// LinkType is a pcap link-layer header type (tcpdump.org linktypes).
type LinkType uint32

// The link types capture decodes.
const (
	LinkNull     LinkType = 0   // BSD loopback: 4-byte address family in host order
	LinkEthernet LinkType = 1   // Ethernet II, with 802.1Q/802.1ad tags
	LinkRaw      LinkType = 101 // raw IPv4 or IPv6, told apart by the version nibble
	LinkLoop     LinkType = 108 // OpenBSD loopback: 4-byte address family, big-endian
	LinkLinuxSLL LinkType = 113 // Linux cooked capture v1 (the "any" device), 16-byte header
	LinkIPv4     LinkType = 228
	LinkIPv6     LinkType = 229
	LinkSLL2     LinkType = 276 // Linux cooked capture v2, 20-byte header
)

// linkUnsupported marks the frames of a pcapng interface whose link type
// capture does not decode; link types are 16 bits, so it is no real one.
const linkUnsupported LinkType = 1 << 31

func (l LinkType) supported() bool {
	switch l {
	case LinkNull, LinkEthernet, LinkRaw, LinkLoop, LinkLinuxSLL, LinkIPv4, LinkIPv6, LinkSLL2:
		return true
	}
	return false
}

// SkipReason says why a captured frame yielded no datagram.
type SkipReason uint8

const (
	SkipNotIP     SkipReason = iota // another network protocol (ARP, …)
	SkipNotUDP                      // IP, but TCP, ICMP, …
	SkipFragment                    // an IP fragment: counted, never reassembled
	SkipTruncated                   // the capture cut the frame short, or its headers lie
	SkipPort                        // UDP on ports the capture was not asked for
	numSkipReasons
)

var skipReasonNames = [numSkipReasons]string{"not_ip", "not_udp", "ip_fragment", "truncated", "other_port"}

func (r SkipReason) String() string {
	if r < numSkipReasons {
		return skipReasonNames[r]
	}
	return "unknown"
}

const (
	etherTypeIPv4 = 0x0800
	etherTypeIPv6 = 0x86DD
	etherTypeVLAN = 0x8100
	etherTypeQinQ = 0x88A8
	protoUDP      = 17
	// IPv6 extension headers that may precede UDP (RFC 8200 §4).
	ipv6HopByHop = 0
	ipv6Routing  = 43
	ipv6Fragment = 44
	ipv6DestOpts = 60
)

// udpFrame finds the UDP datagram in a frame of link type lt: source and
// destination, and the payload (aliasing frame). It allocates nothing.
func udpFrame(lt LinkType, frame []byte) (src, dst netip.AddrPort, payload []byte, skip SkipReason, ok bool) {
	var ip []byte
	switch lt {
	case LinkEthernet:
		if len(frame) < 14 {
			return src, dst, nil, SkipTruncated, false
		}
		et, off := binary.BigEndian.Uint16(frame[12:]), 14
		for (et == etherTypeVLAN || et == etherTypeQinQ) && len(frame) >= off+4 {
			et, off = binary.BigEndian.Uint16(frame[off+2:]), off+4
		}
		if et != etherTypeIPv4 && et != etherTypeIPv6 {
			return src, dst, nil, SkipNotIP, false
		}
		ip = frame[off:]
	case LinkLinuxSLL:
		if len(frame) < 16 {
			return src, dst, nil, SkipTruncated, false
		}
		ip = frame[16:] // protocol type at 14
	case LinkSLL2:
		if len(frame) < 20 {
			return src, dst, nil, SkipTruncated, false
		}
		ip = frame[20:] // protocol type at 0
	case LinkNull, LinkLoop:
		if len(frame) < 4 {
			return src, dst, nil, SkipTruncated, false
		}
		ip = frame[4:] // the address family; the version nibble tells us as much
	case linkUnsupported:
		return src, dst, nil, SkipNotIP, false
	default: // LinkRaw, LinkIPv4, LinkIPv6
		ip = frame
	}
	return udpInIP(ip)
}

func udpInIP(ip []byte) (src, dst netip.AddrPort, payload []byte, skip SkipReason, ok bool) {
	if len(ip) < 1 {
		return src, dst, nil, SkipTruncated, false
	}
	var srcIP, dstIP netip.Addr
	var udp []byte
	switch ip[0] >> 4 {
	case 4:
		ihl := int(ip[0]&0x0F) * 4
		if len(ip) < 20 || ihl < 20 || len(ip) < ihl {
			return src, dst, nil, SkipTruncated, false
		}
		if ip[9] != protoUDP {
			return src, dst, nil, SkipNotUDP, false
		}
		if frag := binary.BigEndian.Uint16(ip[6:]); frag&0x3FFF != 0 { // MF set or an offset
			return src, dst, nil, SkipFragment, false
		}
		total := int(binary.BigEndian.Uint16(ip[2:]))
		if total < ihl || total > len(ip) {
			return src, dst, nil, SkipTruncated, false
		}
		srcIP, dstIP = netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20]))
		udp = ip[ihl:total]
	case 6:
		if len(ip) < 40 {
			return src, dst, nil, SkipTruncated, false
		}
		next, off := ip[6], 40
		end := 40 + int(binary.BigEndian.Uint16(ip[4:]))
		if end > len(ip) {
			return src, dst, nil, SkipTruncated, false
		}
		for next != protoUDP {
			switch next {
			case ipv6Fragment:
				return src, dst, nil, SkipFragment, false
			case ipv6HopByHop, ipv6Routing, ipv6DestOpts:
				if end < off+8 {
					return src, dst, nil, SkipTruncated, false
				}
				next, off = ip[off], off+8*(int(ip[off+1])+1)
				if off > end {
					return src, dst, nil, SkipTruncated, false
				}
			default:
				return src, dst, nil, SkipNotUDP, false
			}
		}
		srcIP, dstIP = netip.AddrFrom16([16]byte(ip[8:24])), netip.AddrFrom16([16]byte(ip[24:40]))
		udp = ip[off:end]
	default:
		return src, dst, nil, SkipNotIP, false
	}
	if len(udp) < 8 {
		return src, dst, nil, SkipTruncated, false
	}
	ulen := int(binary.BigEndian.Uint16(udp[4:]))
	if ulen < 8 || ulen > len(udp) {
		return src, dst, nil, SkipTruncated, false
	}
	src = netip.AddrPortFrom(srcIP, binary.BigEndian.Uint16(udp[0:]))
	dst = netip.AddrPortFrom(dstIP, binary.BigEndian.Uint16(udp[2:]))
	return src, dst, udp[8:ulen], 0, true
}

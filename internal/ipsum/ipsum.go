// Package ipsum computes the Internet checksum (RFC 1071) of IPv4
// headers, for the two places that write IPv4 packets themselves: the
// sidecar's raw-socket sender and the lab's pcap writer.
package ipsum

import "encoding/binary"

// Header is the checksum of an IPv4 header (RFC 791 §3.1): the one's
// complement of the one's complement sum of its 16-bit words, computed
// with the checksum field zero.
func Header(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum > 0xFFFF {
		sum = sum&0xFFFF + sum>>16
	}
	return ^uint16(sum)
}

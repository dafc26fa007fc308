// Package ipsum computes the Internet checksum (RFC 1071): of IPv4
// headers, for the places that write IPv4 packets themselves (the
// sidecar's raw-socket sender, the lab's pcap writer), and the running
// sum under it, which the lab's TCP header compressor (internal/lab/tcm)
// checks TCP segments with.
package ipsum

import "encoding/binary"

// Header is the checksum of an IPv4 header (RFC 791 §3.1): the one's
// complement of the one's complement sum of its 16-bit words, computed
// with the checksum field zero.
func Header(h []byte) uint16 {
	return ^Sum(0, h)
}

// Sum adds b to sum as the Internet checksum does (RFC 1071 §4.1): its
// 16-bit big-endian words, an odd last byte as the high byte of a word,
// folded to 16 bits with the end-around carry. A whole packet checks when
// the Sum over it, its checksum field included, is 0xFFFF; a checksum
// over several parts (a TCP pseudo-header and its segment, RFC 9293
// §3.1) passes one part's Sum as the next one's sum.
func Sum(sum uint32, b []byte) uint16 {
	for len(b) >= 2 {
		sum += uint32(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	for sum > 0xFFFF {
		sum = sum&0xFFFF + sum>>16
	}
	return uint16(sum)
}

package socks5

import (
	"net"
	"net/netip"
)

// relayBatch is how many datagrams one read takes from a socket at most
// (recvmmsg(2) on Linux; elsewhere a read takes one). A burst of a
// simulator's ImagePackets or a window of a benchmark's datagrams then
// costs one wake-up and two system calls instead of one wake-up and two
// calls each. Each slot holds the largest datagram, so a batch reserves
// 16 × 64 KiB per direction of an association; the pages a datagram never
// reached are not resident.
const relayBatch = 16

// slot is one datagram of a batch read: the datagram is at
// buf[headroom:headroom+n], from from (IPv4 unmapped).
type slot struct {
	buf  []byte
	n    int
	from netip.AddrPort
}

// outgoing is one datagram of a batch write; failed is set when the
// kernel refused it.
type outgoing struct {
	payload []byte
	to      netip.AddrPort
	counted int // the bytes the counters count: the payload without the SOCKS header
	failed  bool
}

// newSlots carves n slots of headroom+maxDatagram bytes out of one
// allocation. headroom lets the remote direction put the SOCKS header in
// front of a payload without copying it.
func newSlots(n, headroom int) []slot {
	size := headroom + maxDatagram
	mem := make([]byte, n*size)
	slots := make([]slot, n)
	for i := range slots {
		slots[i].buf = mem[i*size : (i+1)*size : (i+1)*size]
	}
	return slots
}

// batchReader reads datagrams from one socket a batch at a time; it
// belongs to the one goroutine that reads the socket.
type batchReader struct {
	conn     *net.UDPConn
	slots    []slot
	headroom int
	sys      readerSys
}

// batchWriter writes batches to one socket; it belongs to the one
// goroutine that relays into the socket (Association.WriteTo writes on
// its own).
type batchWriter struct {
	conn *net.UDPConn
	sys  writerSys
}

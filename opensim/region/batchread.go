package region

import (
	"net"
	"net/netip"
	"runtime"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// readBatch is how many datagrams one recvmmsg may return. Each buffer
// holds the largest UDP datagram, so nothing is cut short: 32 × 64 KB.
const (
	readBatch  = 32
	maxUDPSize = 65536
)

// batchReader reads datagrams in batches where the platform can (recvmmsg
// on Linux, through x/net), one at a time elsewhere.
type batchReader struct {
	s     *Server
	conn  *net.UDPConn
	v4    *ipv4.PacketConn
	v6    *ipv6.PacketConn
	msgs  []ipv4.Message
	is4   bool
	batch bool
}

func newBatchReader(s *Server) *batchReader {
	r := &batchReader{s: s, conn: s.conn, batch: runtime.GOOS == "linux"}
	r.is4 = s.conn.LocalAddr().(*net.UDPAddr).IP.To4() != nil
	if !r.batch {
		r.msgs = []ipv4.Message{{Buffers: [][]byte{make([]byte, maxUDPSize)}}}
		return r
	}
	if r.is4 {
		r.v4 = ipv4.NewPacketConn(s.conn)
	} else {
		r.v6 = ipv6.NewPacketConn(s.conn)
	}
	r.msgs = make([]ipv4.Message, readBatch)
	for i := range r.msgs {
		r.msgs[i].Buffers = [][]byte{make([]byte, maxUDPSize)}
	}
	return r
}

// read blocks for at least one datagram and returns copies of those the
// inbound budget admits, each stamped with the time of the read.
func (r *batchReader) read() ([]inbound, error) {
	if !r.batch {
		buf := r.msgs[0].Buffers[0]
		n, from, err := r.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			return nil, err
		}
		if !r.s.admit(n) {
			return nil, nil
		}
		return []inbound{{from: from, data: append([]byte(nil), buf[:n]...), at: time.Now()}}, nil
	}
	var n int
	var err error
	if r.v4 != nil {
		n, err = r.v4.ReadBatch(r.msgs, 0)
	} else {
		n, err = r.v6.ReadBatch(r.msgs, 0)
	}
	if err != nil {
		return nil, err
	}
	at := time.Now()
	out := make([]inbound, 0, n)
	for i := range n {
		m := &r.msgs[i]
		ua, ok := m.Addr.(*net.UDPAddr)
		if !ok || !r.s.admit(m.N) {
			continue
		}
		out = append(out, inbound{from: r.addrPort(ua), data: append([]byte(nil), m.Buffers[0][:m.N]...), at: at})
	}
	return out, nil
}

// addrPort gives the source address as ReadFromUDPAddrPort would: plain
// IPv4 on an IPv4 socket, the IPv6 form (IPv4-mapped included) on an IPv6
// one, so a client's key is the same however its datagrams were read.
func (r *batchReader) addrPort(ua *net.UDPAddr) netip.AddrPort {
	ip, _ := netip.AddrFromSlice(ua.IP)
	if r.is4 {
		ip = ip.Unmap()
	} else if ip.Is4() {
		ip = netip.AddrFrom16(ip.As16())
	}
	return netip.AddrPortFrom(ip.WithZone(ua.Zone), uint16(ua.Port))
}

package udpbatch

import (
	"net"
	"net/netip"
	"runtime"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// MaxBatch is the most datagrams one sendmmsg takes on Linux
// (UIO_MAXIOV): Write splits a longer slice, and a caller gathering a
// batch sends it before it grows past this.
const MaxBatch = 1024

// Datagram is one datagram to send and where to.
type Datagram struct {
	B  []byte
	To netip.AddrPort
}

// Writer sends datagrams on an unconnected socket, many per system call
// where the platform can (sendmmsg on Linux, through x/net); elsewhere
// x/net sends one a call (Windows has no WriteBatch at all), so there it
// writes them one by one itself. It is not safe for concurrent use.
type Writer struct {
	conn  *net.UDPConn
	v4    *ipv4.PacketConn
	v6    *ipv6.PacketConn
	msgs  []ipv4.Message
	addrs []net.UDPAddr
	ips   [][net.IPv6len]byte
}

// NewWriter sends on conn.
func NewWriter(conn *net.UDPConn) *Writer {
	w := &Writer{conn: conn}
	if runtime.GOOS != "linux" {
		return w
	}
	if conn.LocalAddr().(*net.UDPAddr).IP.To4() != nil {
		w.v4 = ipv4.NewPacketConn(conn)
	} else {
		w.v6 = ipv6.NewPacketConn(conn)
	}
	return w
}

// Write sends ds in order and returns how many the kernel refused: each
// refusal costs that datagram only, as it would sent alone.
func (w *Writer) Write(ds []Datagram) (failed int) {
	if w.v4 == nil && w.v6 == nil {
		for _, d := range ds {
			if _, err := w.conn.WriteToUDPAddrPort(d.B, d.To); err != nil {
				failed++
			}
		}
		return failed
	}
	for len(ds) > 0 {
		n := min(len(ds), MaxBatch)
		msgs := w.messages(ds[:n])
		for len(msgs) > 0 {
			var k int
			var err error
			if w.v4 != nil {
				k, err = w.v4.WriteBatch(msgs, 0)
			} else {
				k, err = w.v6.WriteBatch(msgs, 0)
			}
			if err != nil || k == 0 {
				// The first datagram of msgs was refused: skip it.
				failed++
				k = 1
			}
			msgs = msgs[k:]
		}
		ds = ds[n:]
	}
	return failed
}

// messages fills the Writer's reused messages and addresses for ds, so a
// batch allocates nothing once the Writer has grown to its size.
func (w *Writer) messages(ds []Datagram) []ipv4.Message {
	for len(w.msgs) < len(ds) {
		w.msgs = append(w.msgs, ipv4.Message{Buffers: [][]byte{nil}})
		w.addrs = append(w.addrs, net.UDPAddr{})
		w.ips = append(w.ips, [net.IPv6len]byte{})
	}
	for i, d := range ds {
		// x/net sends to an IPv4 or IPv4-mapped address as AF_INET, which
		// Linux takes on IPv6 sockets too, as WriteToUDPAddrPort would.
		ip := d.To.Addr()
		w.ips[i] = ip.As16()
		a := &w.addrs[i]
		a.IP, a.Port, a.Zone = w.ips[i][:], int(d.To.Port()), ip.Zone()
		w.msgs[i].Buffers[0], w.msgs[i].Addr = d.B, a
	}
	return w.msgs[:len(ds)]
}

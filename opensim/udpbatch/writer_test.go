package udpbatch

import (
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"
)

// TestWriter: datagrams arrive whole and in order; one the kernel refuses
// (larger than UDP allows) is counted and costs only itself.
func TestWriter(t *testing.T) {
	tests := []struct {
		name     string
		network  string // the sender's
		from     string
		to       string // the receiver's address as bound
		mapped   bool   // send to its IPv4-mapped form
		receiver string
	}{
		{"ipv4", "udp4", "127.0.0.1:0", "127.0.0.1:0", false, "udp4"},
		{"ipv6", "udp6", "[::1]:0", "[::1]:0", false, "udp6"},
		{"ipv6 socket to ipv4-mapped", "udp", "[::]:0", "127.0.0.1:0", true, "udp4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rx, err := net.ListenUDP(tt.receiver, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(tt.to)))
			if err != nil {
				t.Skipf("no %s loopback: %v", tt.receiver, err)
			}
			defer rx.Close()
			tx, err := net.ListenUDP(tt.network, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(tt.from)))
			if err != nil {
				t.Skipf("no %s socket: %v", tt.network, err)
			}
			defer tx.Close()
			to := rx.LocalAddr().(*net.UDPAddr).AddrPort()
			if tt.mapped {
				to = netip.AddrPortFrom(netip.AddrFrom16(to.Addr().As16()), to.Port())
			}
			var ds []Datagram
			var want []string
			for i := range 5 {
				m := fmt.Sprintf("datagram %d", i)
				ds = append(ds, Datagram{B: []byte(m), To: to})
				want = append(want, m)
				if i == 2 {
					ds = append(ds, Datagram{B: make([]byte, 70000), To: to})
				}
			}
			w := NewWriter(tx)
			if failed := w.Write(ds); failed != 1 {
				t.Errorf("Write refused %d datagrams, want 1 (the oversized one)", failed)
			}
			rx.SetReadDeadline(time.Now().Add(5 * time.Second)) // a bound on failure, not a wait
			buf := make([]byte, 100)
			for _, m := range want {
				n, err := rx.Read(buf)
				if err != nil {
					t.Fatal(err)
				}
				if string(buf[:n]) != m {
					t.Fatalf("read %q, want %q", buf[:n], m)
				}
			}
		})
	}
}

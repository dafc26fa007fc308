// Package benchrelay is the baseline the proxy's benchmarks measure
// against: a UDP relay with nothing of SOCKS, shaped as a SOCKS 5
// association is (a socket facing the client, one facing the remote host,
// a goroutine per direction), so that the difference is what the proxy
// adds.
package benchrelay

import (
	"net"
	"net/netip"
)

// Plain forwards datagrams from the first client that writes to it to
// target, and target's answers back to that client. It returns the address
// clients write to and a stop function that closes both sockets and waits
// for both goroutines.
func Plain(target netip.AddrPort) (netip.AddrPort, func(), error) {
	front, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return netip.AddrPort{}, nil, err
	}
	back, err := net.ListenUDP("udp", nil)
	if err != nil {
		front.Close()
		return netip.AddrPort{}, nil, err
	}
	client := make(chan netip.AddrPort, 1)
	done := make(chan struct{}, 2)
	go func() {
		defer func() { done <- struct{}{} }()
		buf := make([]byte, 65536)
		known := false
		for {
			n, from, err := front.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			if !known {
				client <- from
				known = true
			}
			back.WriteToUDPAddrPort(buf[:n], target)
		}
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		buf := make([]byte, 65536)
		var to netip.AddrPort
		for {
			n, _, err := back.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			if !to.IsValid() {
				var ok bool
				if to, ok = <-client; !ok {
					return
				}
			}
			front.WriteToUDPAddrPort(buf[:n], to)
		}
	}()
	stop := func() {
		front.Close()
		back.Close()
		close(client) // frees the second goroutine if no client ever wrote
		<-done
		<-done
	}
	return front.LocalAddr().(*net.UDPAddr).AddrPort(), stop, nil
}

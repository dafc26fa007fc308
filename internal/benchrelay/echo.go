package benchrelay

import (
	"net"
	"net/netip"
)

// Echo is the far end both proxy benchmarks relay to: it answers each
// datagram with itself, except those answer says no to (nil: all). It
// returns its address and a stop function that closes the socket and waits
// for the goroutine.
func Echo(answer func([]byte) bool) (netip.AddrPort, func(), error) {
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return netip.AddrPort{}, nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 65536)
		for {
			n, from, err := pc.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			if answer == nil || answer(buf[:n]) {
				pc.WriteToUDPAddrPort(buf[:n], from)
			}
		}
	}()
	return pc.LocalAddr().(*net.UDPAddr).AddrPort(), func() { pc.Close(); <-done }, nil
}

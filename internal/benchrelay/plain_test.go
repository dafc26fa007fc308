package benchrelay

import (
	"net"
	"net/netip"
	"testing"
	"time"
)

// TestPlain: a datagram goes to the target from the relay's own socket, and
// the target's answer comes back to the client; stop ends it.
func TestPlain(t *testing.T) {
	target, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	addr, stop, err := Plain(target.LocalAddr().(*net.UDPAddr).AddrPort())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	client, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	deadline := time.Now().Add(10 * time.Second)
	target.SetReadDeadline(deadline)
	client.SetReadDeadline(deadline)
	if _, err := client.WriteToUDPAddrPort([]byte("ping"), addr); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, from, err := target.ReadFromUDPAddrPort(buf)
	if err != nil || string(buf[:n]) != "ping" {
		t.Fatalf("target read %q, %v", buf[:n], err)
	}
	if from == client.LocalAddr().(*net.UDPAddr).AddrPort() || from.Addr().Unmap() != netip.MustParseAddr("127.0.0.1") {
		t.Errorf("the target saw %v: want the relay's own socket", from)
	}
	if _, err := target.WriteToUDPAddrPort([]byte("pong"), from); err != nil {
		t.Fatal(err)
	}
	n, back, err := client.ReadFromUDPAddrPort(buf)
	if err != nil || string(buf[:n]) != "pong" || back != addr {
		t.Fatalf("client read %q from %v, %v; want pong from %v", buf[:n], back, err, addr)
	}
}

package benchrelay

import (
	"net"
	"testing"
	"time"
)

// TestEcho: answered datagrams come back whole; refused ones do not (the
// refused one is sent first, so the first answer read shows it was skipped).
func TestEcho(t *testing.T) {
	addr, stop, err := Echo(func(d []byte) bool { return string(d) != "no" })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second)) // a bound on failure, not a wait
	for _, m := range []string{"no", "yes"} {
		if _, err := c.Write([]byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 16)
	n, err := c.Read(buf)
	if err != nil || string(buf[:n]) != "yes" {
		t.Fatalf("read %q, %v; want the answered datagram only", buf[:n], err)
	}
}

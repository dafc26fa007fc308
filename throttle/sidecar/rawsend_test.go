package sidecar

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/circuit"
)

// TestRawSender sends a request as if from a port the test does not own,
// over IPv4 and IPv6 loopback, and checks that a real socket receives it
// from exactly that endpoint.
func TestRawSender(t *testing.T) {
	s, err := NewRawSender()
	if err != nil {
		t.Skipf("raw sockets need CAP_NET_RAW (run as root; CI does): %v", err)
	}
	defer s.Close()
	for _, loop := range []string{"127.0.0.1", "::1"} {
		t.Run(loop, func(t *testing.T) {
			rx, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(loop), 0)))
			if err != nil {
				t.Skipf("no %s here: %v", loop, err)
			}
			defer rx.Close()
			viewer := netip.AddrPortFrom(netip.MustParseAddr(loop), 54321)
			r := throttle.Request{Circuit: circuit.Key{Viewer: viewer, Sim: rx.LocalAddr().(*net.UDPAddr).AddrPort()},
				Agent: lludp.AgentData{AgentID: lludp.UUID{7}, SessionID: lludp.UUID{8}}, Sequence: 99,
				Throttles: throttle.ViewerSplit(ratecalc.RateFromBits(400_000))}
			if err := s.Send(context.Background(), r); err != nil {
				t.Fatal(err)
			}
			rx.SetReadDeadline(time.Now().Add(5 * time.Second))
			buf := make([]byte, 2048)
			n, from, err := rx.ReadFromUDPAddrPort(buf)
			if err != nil {
				t.Fatal(err)
			}
			var p lludp.Packet
			var m lludp.AgentThrottle
			if from != viewer || p.DecodeFromBytes(buf[:n]) != nil || p.Unmarshal(&m) != nil || m.AgentID != r.Agent.AgentID || p.Sequence != 99 || p.Flags.Reliable() {
				t.Errorf("received %d bytes from %v: %+v %+v", n, from, p.Header, m)
			}
		})
	}
}

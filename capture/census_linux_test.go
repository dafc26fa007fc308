package capture

import (
	"net"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
)

// TestCensus: of two interfaces, the census names the one that carried an
// LLUDP datagram on the ports; UDP that does not read as LLUDP, or on
// other ports, does not count; an interface that does not exist is left
// out rather than failing the census.
func TestCensus(t *testing.T) {
	ports := Ports{{Lo: 19010, Hi: 19010}}
	if r, err := OpenLive("lo", ports); err != nil {
		t.Skipf("live capture on lo needs CAP_NET_RAW (run as root; CI does): %v", err)
	} else {
		r.Close()
	}
	send := func(port int, payload []byte) {
		t.Helper()
		c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write(payload); err != nil {
			t.Fatal(err)
		}
	}
	ping, err := lludp.AppendMessage(nil, lludp.Header{Sequence: 1}, &lludp.StartPingCheck{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		port    int
		payload []byte
		want    bool
	}{
		{"LLUDP on the ports", 19010, ping, true},
		{"not LLUDP", 19010, []byte{1}, false},
		{"LLUDP on another port", 19011, ping, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := OpenCensus([]string{"nosuch0", "lo"}, ports)
			defer c.Close()
			// Sent while the captures are open: the ring holds it until
			// Carrying reads.
			send(tc.port, tc.payload)
			got := c.Carrying(t.Context(), time.Second)
			if carried := len(got) == 1 && got[0] == "lo"; carried != tc.want || len(got) > 1 {
				t.Errorf("census %v; want lo: %v", got, tc.want)
			}
		})
	}
}

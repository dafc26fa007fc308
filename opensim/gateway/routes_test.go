package gateway

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// TestRoutesRefused (issue 34, item 5): the routes that turn the gateway
// on itself or on many hosts are refused, each naming why; a region port
// of a well-known service is warned about, not refused.
func TestRoutesRefused(t *testing.T) {
	host := hostAddrs{own: map[netip.Addr]bool{netip.MustParseAddr("10.0.0.5"): true},
		broadcast: map[netip.Addr]bool{netip.MustParseAddr("10.0.0.255"): true}}
	r := func(listen, region string) Route {
		return Route{Listen: netip.MustParseAddrPort(listen), Region: netip.MustParseAddrPort(region)}
	}
	for _, tc := range []struct {
		name   string
		routes []Route
		want   string // "" : accepted
	}{
		{"a plain route", []Route{r("203.0.113.1:9000", "10.0.0.9:9000")}, ""},
		{"two regions", []Route{r("203.0.113.1:9000", "10.0.0.9:9000"), r("203.0.113.1:9001", "10.0.0.9:9001")}, ""},
		{"self-loop", []Route{r("127.0.0.1:9000", "127.0.0.1:9000")}, "the route's own listen address"},
		{"self-loop through the unspecified listen", []Route{r("0.0.0.0:9000", "127.0.0.1:9000")}, "the route's own listen address"},
		{"self-loop to an address of the host", []Route{r("0.0.0.0:9000", "10.0.0.5:9000")}, "the route's own listen address"},
		{"self-loop, IPv6", []Route{r("[::]:9000", "[::1]:9000")}, "the route's own listen address"},
		{"loop between routes", []Route{r("127.0.0.1:9000", "127.0.0.1:9001"), r("127.0.0.1:9001", "10.0.0.9:9000")}, "route 1's listen address"},
		{"unspecified region", []Route{r("127.0.0.1:9000", "0.0.0.0:9000")}, "not the unspecified one"},
		{"limited broadcast region", []Route{r("127.0.0.1:9000", "255.255.255.255:9000")}, "broadcast"},
		{"subnet broadcast region", []Route{r("127.0.0.1:9000", "10.0.0.255:9000")}, "broadcast"},
		{"multicast region", []Route{r("127.0.0.1:9000", "239.1.2.3:9000")}, "multicast"},
		{"multicast region, IPv6", []Route{r("[::1]:9000", "[ff02::1]:9000")}, "multicast"},
		{"multicast listen", []Route{r("239.1.2.3:9000", "10.0.0.9:9000")}, "listen 239.1.2.3:9000 is a broadcast or multicast"},
		{"a listen address twice", []Route{r("127.0.0.1:9000", "10.0.0.9:9000"), r("127.0.0.1:9000", "10.0.0.8:9000")}, "used twice"},
	} {
		errs := CheckRoutes(tc.routes, host)
		msg := errors.Join(errs...)
		switch {
		case tc.want == "" && len(errs) > 0:
			t.Errorf("%s: refused: %v", tc.name, msg)
		case tc.want != "" && (msg == nil || !strings.Contains(msg.Error(), tc.want) || !errors.Is(msg, ErrConfig)):
			t.Errorf("%s: %v; want %q", tc.name, msg, tc.want)
		}
	}
	// WithDefaults applies them (to the host's own interfaces).
	if _, err := (Config{Routes: []Route{r("127.0.0.1:9000", "127.0.0.1:9000")}}).WithDefaults(); err == nil {
		t.Error("WithDefaults accepted a self-loop")
	}
	for _, tc := range []struct {
		port uint16
		warn bool
	}{{22, true}, {53, true}, {1023, true}, {1024, false}, {9000, false}, {13000, false}} {
		w := RouteWarnings([]Route{{Listen: netip.MustParseAddrPort("127.0.0.1:9000"), Region: netip.AddrPortFrom(netip.MustParseAddr("10.0.0.9"), tc.port)}})
		if (len(w) > 0) != tc.warn {
			t.Errorf("region port %d: warnings %q, want a warning %v", tc.port, w, tc.warn)
		}
	}
}

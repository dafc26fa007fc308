package capture

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
)

func TestDefaultRouteDevice(t *testing.T) {
	ipv4 := `Iface	Destination	Gateway 	Flags	RefCnt	Use	Metric	Mask		MTU	Window	IRTT
wlan0	0000A8C0	00000000	0001	0	0	600	00FFFFFF	0	0	0
wlan0	00000000	0100A8C0	0003	0	0	600	00000000	0	0	0
`
	noDefault := `Iface	Destination	Gateway 	Flags	RefCnt	Use	Metric	Mask		MTU	Window	IRTT
eth0	0000A8C0	00000000	0001	0	0	0	00FFFFFF	0	0	0
`
	ipv6 := `fe800000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth1
00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003     eth1
`
	unreachable := `00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo
`
	for _, tc := range []struct {
		name  string
		table string
		ipv6  bool
		want  string
	}{
		{"ipv4 default", ipv4, false, "wlan0"},
		{"ipv4 none", noDefault, false, ""},
		{"ipv6 default", ipv6, true, "eth1"},
		{"ipv6 unreachable on lo is no route", unreachable, true, ""},
		{"empty", "", false, ""},
	} {
		if got := defaultRouteDevice(strings.NewReader(tc.table), tc.ipv6); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if iface, why := ResolveInterface("eth7"); iface != "eth7" || why != "configured" {
		t.Errorf("a named interface: %q (%s)", iface, why)
	}
	if iface, why := ResolveInterface(Auto); iface == "" || iface == Auto || why == "" {
		t.Errorf("auto: %q (%s), want an interface and why", iface, why)
	}
}

// TestOpenErrorsSayWhatToDo: the errors a person meets opening a capture
// say what to do next.
func TestOpenErrorsSayWhatToDo(t *testing.T) {
	_, err := OpenLive("nosuch0", nil)
	if err == nil || !strings.Contains(err.Error(), `no interface "nosuch0" here (interfaces: `) || !strings.Contains(err.Error(), "lo") {
		t.Errorf("wrong name: %v; want the interfaces there are", err)
	}
	perm := explainOpenError("eth0", fmt.Errorf("socket: %w", syscall.EPERM))
	for _, want := range []string{"needs CAP_NET_RAW", "sudo", "setcap cap_net_raw+ep", "fairgrid proxy"} {
		if !strings.Contains(perm.Error(), want) {
			t.Errorf("permission: %v; want %q", perm, want)
		}
	}
	if !errors.Is(perm, syscall.EPERM) {
		t.Errorf("permission: %v no longer wraps EPERM", perm)
	}
	other := explainOpenError("eth0", &net.OpError{Op: "bind", Err: errors.New("boom")})
	if !strings.HasPrefix(other.Error(), "capture on eth0: ") {
		t.Errorf("other: %v", other)
	}
}

package capture

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
)

// Auto is the interface name that means the interface of the default
// route: where a viewer's traffic to a remote simulator goes.
const Auto = "auto"

// ResolveInterface turns capture.interface into the interface to open and
// a reason to log: Auto becomes the default route's interface (IPv4, then
// IPv6), or lo when the machine has no default route; any other name is
// returned as it is.
func ResolveInterface(name string) (iface, why string) {
	if name != Auto {
		return name, "configured"
	}
	for _, table := range []struct{ path, version string }{{"/proc/net/route", "IPv4"}, {"/proc/net/ipv6_route", "IPv6"}} {
		f, err := os.Open(table.path)
		if err != nil {
			continue
		}
		dev := defaultRouteDevice(f, table.version == "IPv6")
		f.Close()
		if dev != "" {
			return dev, "the " + table.version + " default route's"
		}
	}
	return "lo", "no default route, so loopback"
}

// defaultRouteDevice reads a /proc/net/route or /proc/net/ipv6_route table
// and returns the device of its first default route, or "".
func defaultRouteDevice(r io.Reader, ipv6 bool) string {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case !ipv6 && len(f) >= 8 && f[1] == "00000000" && f[7] == "00000000" && f[0] != "Iface":
			return f[0] // destination 0.0.0.0/0
		case ipv6 && len(f) >= 10 && f[0] == strings.Repeat("0", 32) && f[1] == "00" && f[9] != "lo":
			return f[9] // ::/0, not the kernel's unreachable entry on lo
		}
	}
	return ""
}

// explainOpenError rewords the errors a person meets opening a capture:
// a wrong interface name lists the interfaces there are, and a missing
// capability says how to grant it or how to do without.
func explainOpenError(iface string, err error) error {
	var names []string
	if ifs, ierr := net.Interfaces(); ierr == nil {
		for _, i := range ifs {
			names = append(names, i.Name)
		}
	}
	switch {
	case errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES):
		return fmt.Errorf("capture on %s needs CAP_NET_RAW: run as root (sudo), grant it once with `setcap cap_net_raw+ep $(command -v fairgrid)`, or use fairgrid proxy, which needs no privilege: %w", iface, err)
	case strings.Contains(err.Error(), "no such network interface"):
		return fmt.Errorf("no interface %q here (interfaces: %s; capture.interface = \"auto\" takes the default route's)", iface, strings.Join(names, ", "))
	}
	return fmt.Errorf("capture on %s: %w", iface, err)
}

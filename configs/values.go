package configs

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
)

// The typed values of the configuration. Each decodes and checks its text
// in one step (encoding.TextUnmarshaler): the TOML decoder calls it for the
// file, naming the key of a bad value, and flag.TextVar for the command
// line, so a File holds only values that parsed, and nothing reads them
// from text again. What depends on other keys (min_bps below max_bps,
// routes' public addresses distinct) is Validate's.

// Duration is a TOML string such as "5s". An integer would mean
// nanoseconds in the TOML library, which nobody means: it is refused.
type Duration struct{ time.Duration }

func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	return parsed(&d.Duration, v, err, b, ` is not a duration such as "5s"`)
}

// MarshalText writes what UnmarshalText reads ("5s").
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// PortList is capture.ports and proxy.allow_ports: ports and "lo-hi"
// ranges (lludp.PortRange), a TOML array in the file and comma-separated
// on the command line (--allow-ports 80,443,9000-13100).
type PortList []lludp.PortRange

// Ports is the list as package lludp has it.
func (p PortList) Ports() lludp.Ports { return lludp.Ports(p) }

// UnmarshalTOML reads an array of strings, each a port or a range.
func (p *PortList) UnmarshalTOML(data any) error {
	items, ok := data.([]any)
	if !ok {
		return fmt.Errorf("%v: want an array of ports and ranges such as [\"9000-13100\"]", data)
	}
	out := make(PortList, len(items))
	for i, item := range items {
		s, ok := item.(string)
		if !ok {
			return fmt.Errorf("%v: want a port or a range as a string, such as \"9000-13100\"", item)
		}
		if err := out[i].UnmarshalText([]byte(s)); err != nil {
			return err
		}
	}
	*p = out
	return nil
}

// UnmarshalText reads the command line's comma-separated list; an empty
// one is an empty list.
func (p *PortList) UnmarshalText(b []byte) error {
	ports, err := lludp.ParsePorts(string(b))
	if err != nil {
		return err
	}
	*p = PortList(ports)
	return nil
}

// String is the list as UnmarshalText reads it: "80,443,9000-13100".
func (p PortList) String() string {
	parts := make([]string, len(p))
	for i, r := range p {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

func (p PortList) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// AddrPort is one capture.sims entry: "ip:port", port 0 for any.
type AddrPort struct{ netip.AddrPort }

func (a *AddrPort) UnmarshalText(b []byte) error {
	v, err := netip.ParseAddrPort(string(b))
	return parsed(&a.AddrPort, v, err, b, ": want ip:port")
}

// addrPorts is a list of entries as package netip has them.
func addrPorts(list []AddrPort) []netip.AddrPort {
	var out []netip.AddrPort
	for _, a := range list {
		out = append(out, a.AddrPort)
	}
	return out
}

// IP is gateway.bind: an IP address, or empty for none (the zero Addr).
type IP struct{ netip.Addr }

func (ip *IP) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		ip.Addr = netip.Addr{}
		return nil
	}
	v, err := netip.ParseAddr(string(b))
	return parsed(&ip.Addr, v, err, b, ": want an IP address, or empty")
}

// Address is where a front-end serves its metrics: "ip:port", ":port" for
// every address (as net.Listen has it), or empty for nowhere.
type Address struct {
	ap    netip.AddrPort // its Addr the zero Addr for ":port"
	every bool           // ":port"
}

// ParseAddress reads an Address.
func ParseAddress(s string) (Address, error) {
	var a Address
	err := a.UnmarshalText([]byte(s))
	return a, err
}

func (a *Address) UnmarshalText(b []byte) error {
	s := string(b)
	if s == "" {
		*a = Address{}
		return nil
	}
	if port, ok := strings.CutPrefix(s, ":"); ok {
		if p, err := strconv.ParseUint(port, 10, 16); err == nil {
			*a = Address{ap: netip.AddrPortFrom(netip.Addr{}, uint16(p)), every: true}
			return nil
		}
	} else if ap, err := netip.ParseAddrPort(s); err == nil {
		*a = Address{ap: ap}
		return nil
	}
	return fmt.Errorf("%q: want ip:port, or empty (\":port\" for every address)", b)
}

// MarshalText writes what UnmarshalText reads.
func (a Address) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// String is the address as net.Listen takes it.
func (a Address) String() string {
	switch {
	case a.every:
		return ":" + strconv.Itoa(int(a.ap.Port()))
	case a.ap.IsValid():
		return a.ap.String()
	}
	return ""
}

// IsZero reports whether the address is empty: nothing is served.
func (a Address) IsZero() bool { return !a.every && !a.ap.IsValid() }

// AddrPort is the address, ":port" as the unspecified IPv4 address (which
// net.Listen also takes for every address); false when empty.
func (a Address) AddrPort() (netip.AddrPort, bool) {
	if a.every {
		return netip.AddrPortFrom(netip.IPv4Unspecified(), a.ap.Port()), true
	}
	return a.ap, a.ap.IsValid()
}

// Loopback reports whether only this host reaches the address.
func (a Address) Loopback() bool { return !a.every && a.ap.Addr().IsLoopback() }

// HostPort is proxy.listen: host:port, the host an IP address, a name or
// empty (every address), the port a number. Whether an address beyond
// loopback has credentials is the proxy's check at start
// (proxy.Config.CheckListen), where the password is known.
type HostPort string

func (h *HostPort) UnmarshalText(b []byte) error {
	_, port, err := net.SplitHostPort(string(b))
	if err == nil {
		_, err = strconv.ParseUint(port, 10, 16)
	}
	if err != nil {
		return fmt.Errorf("%q: want host:port, such as 127.0.0.1:1080", b)
	}
	*h = HostPort(b)
	return nil
}

func (h HostPort) MarshalText() ([]byte, error) { return []byte(h), nil }

// Route is one gateway.routes entry, "PUBLIC:PORT=INTERNAL:PORT": the
// public address viewers reach and the region's internal address, a
// specific one.
type Route struct{ Listen, Region netip.AddrPort }

func (r *Route) UnmarshalText(b []byte) error {
	l, reg, ok := strings.Cut(string(b), "=")
	listen, err1 := netip.ParseAddrPort(strings.TrimSpace(l))
	region, err2 := netip.ParseAddrPort(strings.TrimSpace(reg))
	if !ok || err1 != nil || err2 != nil || region.Addr().IsUnspecified() || region.Port() == 0 {
		return fmt.Errorf("%q: want PUBLIC:PORT=INTERNAL:PORT, the region's address a specific one", b)
	}
	*r = Route{listen, region}
	return nil
}

func (r Route) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

func (r Route) String() string { return r.Listen.String() + "=" + r.Region.String() }

// checkRoutes refuses a public address given twice.
func checkRoutes(routes []Route) error {
	seen := map[netip.AddrPort]bool{}
	for _, r := range routes {
		if seen[r.Listen] {
			return fmt.Errorf("%q: public address %v given twice", r, r.Listen)
		}
		seen[r.Listen] = true
	}
	return nil
}

// Split is control.split: how a request is divided over the categories.
type Split string

const (
	SplitDemand  Split = "demand"  // by each category's use, the viewer's proportions its floor
	SplitViewer  Split = "viewer"  // the viewer's own interpolation tables
	SplitWeights Split = "weights" // control.split_weights
)

func (s *Split) UnmarshalText(b []byte) error {
	return oneOf(s, b, "demand, viewer or weights", SplitDemand, SplitViewer, SplitWeights)
}

func (s Split) MarshalText() ([]byte, error) { return []byte(s), nil }

// Regions is send.regions: which circuits get requests.
type Regions string

const (
	RegionsAll  Regions = "all"  // every circuit
	RegionsRoot Regions = "root" // only the region each agent arrived in last
)

func (r *Regions) UnmarshalText(b []byte) error {
	return oneOf(r, b, "all or root", RegionsAll, RegionsRoot)
}

func (r Regions) MarshalText() ([]byte, error) { return []byte(r), nil }

// LogLevel is log.level: slog's levels by name (debug, info, warn, error,
// and offsets such as "info+2"), read by slog.Level's own UnmarshalText.
// It is a slog.Leveler.
type LogLevel slog.Level

// Level is the level as slog has it.
func (l LogLevel) Level() slog.Level { return slog.Level(l) }

func (l *LogLevel) UnmarshalText(b []byte) error {
	var v slog.Level
	if err := v.UnmarshalText(b); err != nil {
		return fmt.Errorf("%q: want debug, info, warn or error", b)
	}
	*l = LogLevel(v)
	return nil
}

// MarshalText writes the level as the file has it: "info".
func (l LogLevel) MarshalText() ([]byte, error) {
	return []byte(strings.ToLower(slog.Level(l).String())), nil
}

// LogFormat is log.format (and --log-format): how a front-end writes its
// log, text (slog's key=value lines, for a terminal) or json (one object
// a line, for a collector).
type LogFormat string

const (
	LogText LogFormat = "text"
	LogJSON LogFormat = "json"
)

func (f *LogFormat) UnmarshalText(b []byte) error {
	return oneOf(f, b, "text or json", LogText, LogJSON)
}

func (f LogFormat) MarshalText() ([]byte, error) { return []byte(f), nil }

// Handler is a log handler writing to w in the format f.
func (f LogFormat) Handler(w io.Writer, opts *slog.HandlerOptions) slog.Handler {
	if f == LogJSON {
		return slog.NewJSONHandler(w, opts)
	}
	return slog.NewTextHandler(w, opts)
}

// oneOf sets *p to the name b if it is one of names, else refuses it
// saying what it wants.
func oneOf[T ~string](p *T, b []byte, want string, names ...T) error {
	if v := T(b); slices.Contains(names, v) {
		*p = v
		return nil
	}
	return fmt.Errorf("%q: want %s", b, want)
}

// parsed sets *p to what a parser made of b, or refuses b saying what it
// wants: the configuration's words, not the parser's.
func parsed[T any](p *T, v T, err error, b []byte, want string) error {
	if err != nil {
		return fmt.Errorf("%q%s", b, want)
	}
	*p = v
	return nil
}

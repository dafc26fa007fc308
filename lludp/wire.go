package lludp

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Datagram is one UDP datagram of a circuit as some source saw it: a
// capture, a relay or a test rig. At is when it was seen; the package never
// reads the clock, so whoever saw it says when. Payload may alias the
// source's buffer: a source documents how long it stays valid.
type Datagram struct {
	At       time.Time
	Src, Dst netip.AddrPort
	Payload  []byte
}

// Ports selects UDP datagrams by port: a datagram is kept if either port is
// in one of the ranges. The zero value keeps every port.
type Ports []PortRange

// PortRange is an inclusive range of ports.
type PortRange struct{ Lo, Hi uint16 }

// SimPorts is the common simulator port range: OpenSim regions start at
// 9000 (Regions.ini.example) and Second Life simulators used 12035/12036 and
// 13000–13050 (SL wiki, "Configuring your hardware firewall"); 13100 leaves
// room for more regions.
var SimPorts = Ports{{9000, 13100}}

// ParsePortRange reads one port ("443") or inclusive range ("9000-13100").
// Port 0 is refused: it names no port a datagram can use.
func ParsePortRange(s string) (PortRange, error) {
	lo, hi, isRange := strings.Cut(strings.TrimSpace(s), "-")
	if !isRange {
		hi = lo
	}
	a, err1 := strconv.ParseUint(strings.TrimSpace(lo), 10, 16)
	b, err2 := strconv.ParseUint(strings.TrimSpace(hi), 10, 16)
	if err1 != nil || err2 != nil || a == 0 || a > b {
		return PortRange{}, fmt.Errorf("%q: want a port or a range such as 9000-13100", s)
	}
	return PortRange{Lo: uint16(a), Hi: uint16(b)}, nil
}

// String is the range as ParsePortRange reads it: "443" or "9000-13100".
func (r PortRange) String() string {
	if r.Lo == r.Hi {
		return strconv.Itoa(int(r.Lo))
	}
	return strconv.Itoa(int(r.Lo)) + "-" + strconv.Itoa(int(r.Hi))
}

// MarshalText is String, so that a range is a configuration value.
func (r PortRange) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText is ParsePortRange: a configuration's ports decode and are
// checked in one step.
func (r *PortRange) UnmarshalText(b []byte) error {
	v, err := ParsePortRange(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// ParsePorts reads a comma-separated list of ports and ranges
// ("9000-13100,12035"); an empty list is nil, every port.
func ParsePorts(list string) (Ports, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	var out Ports
	for part := range strings.SplitSeq(list, ",") {
		r, err := ParsePortRange(part)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Contains reports whether port p is in one of the ranges (an empty list
// holds no port; Match is the filter that keeps everything when empty).
func (ps Ports) Contains(p uint16) bool {
	for _, r := range ps {
		if p >= r.Lo && p <= r.Hi {
			return true
		}
	}
	return false
}

// Match reports whether a datagram between src and dst passes the filter:
// either port in range, or an empty list.
func (ps Ports) Match(src, dst netip.AddrPort) bool {
	return len(ps) == 0 || ps.Contains(src.Port()) || ps.Contains(dst.Port())
}

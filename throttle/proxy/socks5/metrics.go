package socks5

import (
	"fmt"
	"log/slog"
	"net/netip"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// RefusalCause names why a TCP session was refused; it is the cause label of
// fairgrid_proxy_refused_total.
type RefusalCause int

const (
	RefusedBadVersion       RefusalCause = iota // greeting or request with VER != 5
	RefusedMalformed                            // truncated, reserved octet set, bad domain, garbage
	RefusedNoMethod                             // no acceptable authentication method offered
	RefusedAuthFailed                           // wrong username or password
	RefusedCommand                              // BIND or an unknown command
	RefusedAddressType                          // unknown ATYP in a request
	RefusedPort                                 // CONNECT to a port not in AllowedPorts
	RefusedAssociationLimit                     // MaxAssociationsPerClient reached
	RefusedConnectLimit                         // MaxConnectsPerClient reached
	RefusedHandshakeTimeout                     // handshake not finished within HandshakeTimeout
	RefusedDialFailed                           // CONNECT target unreachable or refused
	RefusedUDPSetup                             // relay sockets could not be opened
	RefusedAcceptFailed                         // accept failed (e.g. out of file descriptors); retried
	RefusedAuthBackoff                          // login refused unchecked: the address is in back-off after failures
	RefusedHandshakeEvicted                     // a handshake closed to make room past a handshake cap (the oldest goes)
	RefusedSessionLimit                         // MaxSessions reached and no session idle enough to make room
	RefusedDestination                          // CONNECT to loopback, link-local or the proxy's own address
	numRefusalCauses
)

var refusalNames = [numRefusalCauses]string{
	"bad_version", "malformed", "no_acceptable_method", "auth_failed", "unsupported_command",
	"unsupported_address_type", "port_not_allowed", "association_limit", "connect_limit",
	"handshake_timeout", "dial_failed", "udp_setup_failed", "accept_failed",
	"auth_backoff", "handshake_evicted", "session_limit", "destination_not_allowed",
}

func (c RefusalCause) String() string { return refusalNames[c] }

// DropCause names why a datagram was dropped; it is the cause label of
// fairgrid_proxy_dropped_datagrams_total.
type DropCause int

const (
	DroppedForeignSource  DropCause = iota // not from the client that made the association (RFC 1928 §7)
	DroppedFragment                        // FRAG != 0: reassembly is optional (RFC 1928 §7) and not done
	DroppedShortHeader                     // too short for the SOCKS UDP header
	DroppedAddressType                     // unknown ATYP or invalid domain in the UDP header
	DroppedUnresolved                      // domain destination that did not resolve
	DroppedClientUnknown                   // remote datagram before the client's port was known
	DroppedSendFailed                      // the kernel refused to send it
	DroppedByHook                          // Hooks.ClientDatagram returned nil
	DroppedPortNotAllowed                  // destination port not in Config.UDPPorts
	numDropCauses
)

var dropNames = [numDropCauses]string{
	"foreign_source", "fragmented", "short_header", "unknown_address_type", "unresolved_name",
	"client_port_unknown", "send_failed", "hook", "port_not_allowed",
}

func (c DropCause) String() string { return dropNames[c] }

const (
	dirClientToRemote = iota
	dirRemoteToClient
	dirInjected // the proxy's own datagrams (Association.WriteTo)
	numDirections
)

var dirNames = [numDirections]string{"client_to_remote", "remote_to_client", "injected"}

// EndCause names why an open session (CONNECT or association) was ended by
// the proxy rather than by either side; it is the cause label of
// fairgrid_proxy_sessions_ended_total.
type EndCause int

const (
	EndedIdle      EndCause = iota // relayed nothing for Config.IdleTimeout
	EndedHalfClose                 // the client finished sending and the remote stayed silent for Config.HalfCloseTimeout
	EndedEvicted                   // made room for a new session past a cap, having been idle at least Config.EvictIdle
	numEndCauses
)

var endNames = [numEndCauses]string{"idle", "half_close_timeout", "evicted"}

func (c EndCause) String() string { return endNames[c] }

// stats are the server's counters; every field is updated atomically so the
// relay goroutines never take a lock for them.
type stats struct {
	refused         [numRefusalCauses]atomic.Uint64
	dropped         [numDropCauses]atomic.Uint64
	datagrams       [numDirections]atomic.Uint64
	datagramBytes   [numDirections]atomic.Uint64
	connectBytes    [2]atomic.Uint64 // client_to_remote, remote_to_client
	associations    atomic.Int64
	associationsAll atomic.Uint64
	connects        atomic.Int64
	connectsAll     atomic.Uint64
	ended           [numEndCauses]atomic.Uint64

	refusedLogged [numRefusalCauses]atomic.Bool
	droppedLogged [numDropCauses]atomic.Bool
	// portLogged marks each destination port whose CONNECT refusal was
	// logged: once per port, in a fixed 8 KB, so a grid's unlisted login
	// port is named even after another port's refusal was.
	portLogged [65536 / 64]atomic.Uint64
	// udpPortLogged is the same for UDP destination ports outside
	// Config.UDPPorts.
	udpPortLogged [65536 / 64]atomic.Uint64
}

// UDPPortsHint names what widens Config.UDPPorts, for the line that logs
// a datagram to a port outside them: the command's flag and key.
const UDPPortsHint = "--sim-ports (capture.ports)"

// dropPort counts a datagram to a UDP port not allowed and, the first
// time for that port, says what to change, naming the client it came
// from and where it was going.
func (s *stats) dropPort(log *slog.Logger, from, to netip.AddrPort) {
	s.dropped[DroppedPortNotAllowed].Add(1)
	word, bit := &s.udpPortLogged[to.Port()/64], uint64(1)<<(to.Port()%64)
	if word.Or(bit)&bit == 0 {
		log.Warn(fmt.Sprintf("UDP datagram to port %d dropped: the relay sends only to the simulator ports; add it to %s if the grid's regions use it; later drops to this port are only counted", to.Port(), UDPPortsHint),
			"cause", DroppedPortNotAllowed.String(), "from", from, "to", to)
	}
}

// refusePort counts a CONNECT to a port not allowed and, the first time
// for that port, says what to change.
func (s *stats) refusePort(log *slog.Logger, client string, dst Addr) {
	s.refused[RefusedPort].Add(1)
	word, bit := &s.portLogged[dst.Port/64], uint64(1)<<(dst.Port%64)
	if word.Or(bit)&bit == 0 {
		log.Warn(fmt.Sprintf("CONNECT to port %d refused: add it to --allow-ports (proxy.allow_ports) if the grid needs it; later refusals of this port are only counted", dst.Port),
			"cause", RefusedPort.String(), "client", client, "to", dst.String())
	}
}

// refuse counts a refusal and logs its first occurrence per cause, so a
// scan or flood leaves one line and a counter instead of a flood of lines.
func (s *stats) refuse(log *slog.Logger, c RefusalCause, client string, err error) {
	s.refused[c].Add(1)
	if !s.refusedLogged[c].Swap(true) {
		log.Warn("socks5 session refused; further refusals of this cause are only counted",
			"cause", c.String(), "client", client, "err", err)
	}
}

// drop counts a datagram dropped and logs the first of its cause: from
// is where it came from, to where it was going, each if valid.
func (s *stats) drop(log *slog.Logger, c DropCause, from, to netip.AddrPort) {
	s.dropped[c].Add(1)
	if !s.droppedLogged[c].Swap(true) {
		attrs := []any{"cause", c.String()}
		if from.IsValid() {
			attrs = append(attrs, "from", from)
		}
		if to.IsValid() {
			attrs = append(attrs, "to", to)
		}
		log.Warn("socks5 datagram dropped; further drops of this cause are only counted", attrs...)
	}
}

var (
	mRefused      = prometheus.NewDesc("fairgrid_proxy_refused_total", "SOCKS5 sessions refused, by cause.", []string{"cause"}, nil)
	mDropped      = prometheus.NewDesc("fairgrid_proxy_dropped_datagrams_total", "UDP datagrams dropped by the relay, by cause.", []string{"cause"}, nil)
	mDatagrams    = prometheus.NewDesc("fairgrid_proxy_relayed_datagrams_total", "UDP datagrams relayed, by direction (injected: the proxy's own).", []string{"direction"}, nil)
	mDgramBytes   = prometheus.NewDesc("fairgrid_proxy_relayed_bytes_total", "UDP payload bytes relayed (SOCKS header excluded), by direction.", []string{"direction"}, nil)
	mConnectBytes = prometheus.NewDesc("fairgrid_proxy_connect_bytes_total", "Bytes relayed over CONNECT sessions, by direction.", []string{"direction"}, nil)
	mAssocs       = prometheus.NewDesc("fairgrid_proxy_associations", "UDP associations open.", nil, nil)
	mAssocsAll    = prometheus.NewDesc("fairgrid_proxy_associations_total", "UDP associations opened.", nil, nil)
	mConnects     = prometheus.NewDesc("fairgrid_proxy_connects", "CONNECT sessions open.", nil, nil)
	mConnectsAll  = prometheus.NewDesc("fairgrid_proxy_connects_total", "CONNECT sessions opened.", nil, nil)
	mEnded        = prometheus.NewDesc("fairgrid_proxy_sessions_ended_total", "CONNECT sessions and associations the proxy ended, by cause.", []string{"cause"}, nil)
)

// collector exports a server's counters; it reads them at scrape time.
type collector struct{ s *stats }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{mRefused, mDropped, mDatagrams, mDgramBytes, mConnectBytes, mAssocs, mAssocsAll, mConnects, mConnectsAll, mEnded} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	for i := range c.s.refused {
		counter(mRefused, c.s.refused[i].Load(), RefusalCause(i).String())
	}
	for i := range c.s.dropped {
		counter(mDropped, c.s.dropped[i].Load(), DropCause(i).String())
	}
	for i := range c.s.datagrams {
		counter(mDatagrams, c.s.datagrams[i].Load(), dirNames[i])
		counter(mDgramBytes, c.s.datagramBytes[i].Load(), dirNames[i])
	}
	for i := range c.s.connectBytes {
		counter(mConnectBytes, c.s.connectBytes[i].Load(), dirNames[i])
	}
	ch <- prometheus.MustNewConstMetric(mAssocs, prometheus.GaugeValue, float64(c.s.associations.Load()))
	counter(mAssocsAll, c.s.associationsAll.Load())
	ch <- prometheus.MustNewConstMetric(mConnects, prometheus.GaugeValue, float64(c.s.connects.Load()))
	counter(mConnectsAll, c.s.connectsAll.Load())
	for i := range c.s.ended {
		counter(mEnded, c.s.ended[i].Load(), EndCause(i).String())
	}
}

package kerneltcp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
)

// OtherName ends the names of the two bottleneck flows that carry a lab's
// packets of no running flow (a RST after a flow ended, an ICMP message):
// they cross the bottleneck too, since its queue is shared.
const OtherName = "other"

// NamePrefix starts every namespace a Lab creates: "fglab-<pid>-<random>-c"
// and "-s". The pid lets SweepStale tell a crashed run's namespaces from a
// running one's; the random part keeps a recycled pid from colliding.
const NamePrefix = "fglab-"

// DeviceCounters are a TUN device's packet counters as its kernel keeps
// them: Tx is what the namespace sent into the device (the forwarder has
// read it), Rx what the forwarder wrote and the namespace accepted.
type DeviceCounters struct {
	TxPackets, TxDropped, RxPackets, RxDropped uint64
}

// DefaultName is the lab's name when Config.Name is empty.
const DefaultName = "kernel"

// Config configures a Lab.
type Config struct {
	// Bottleneck is what every packet between the namespaces crosses,
	// possibly beside other traffic (a viewer's datagrams). Its owner runs
	// it (Bottleneck.Run): the lab only adds flows and sends.
	Bottleneck *link.Bottleneck
	// Name starts the names of the lab's flows in the bottleneck's
	// statistics; "" means "kernel". Two labs sharing a bottleneck need
	// different names.
	Name string
	// MTU of both TUN devices; 0 means DefaultMTU. The kernel segments
	// TCP to fit it before the forwarder reads a packet (a TUN device
	// without IFF_VNET_HDR cannot take GSO packets), so the bottleneck sees
	// wire-sized packets, as a router would.
	MTU int
}

// DefaultMTU is Ethernet's, what a home access link carries.
const DefaultMTU = 1500

// minMTU is IPv4's minimum (RFC 791: every host must accept 576-byte
// datagrams); a TUN device accepts less, but TCP then barely moves.
const minMTU = 576

// Validate says what New would refuse.
func (c Config) Validate() error {
	var errs []error
	if c.Bottleneck == nil {
		errs = append(errs, errors.New("no bottleneck"))
	}
	if c.MTU != 0 && (c.MTU < minMTU || c.MTU > 65535) {
		errs = append(errs, fmt.Errorf("mtu %d outside [%d, 65535]", c.MTU, minMTU))
	}
	return errors.Join(errs...)
}

// CongestionControls are the Linux congestion controls a flow may ask
// for: the loss-based reno (RFC 5681) and cubic (RFC 9438), and the
// delay-based bbr (draft-cardwell-iccrg-bbr-congestion-control). The
// kernels this project runs on have no vegas, so bbr stands for the
// delay-based family.
var CongestionControls = []string{"reno", "cubic", "bbr"}

// FlowConfig describes one bulk TCP flow between the namespaces.
type FlowConfig struct {
	// Name labels the flow in the bottleneck's statistics, as Name+" data"
	// and Name+" acks"; "" means "<lab name> <congestion> <upload or
	// download> <n>". A bottleneck cannot forget a flow, so a name is
	// used once.
	Name string
	// Congestion is the sender's congestion control, one of
	// CongestionControls (set per socket with TCP_CONGESTION, so the
	// system default does not matter).
	Congestion string
	// Download makes the server send to the client; otherwise the client
	// uploads.
	Download bool
	// Warmup is how long the flow runs before throughput is measured
	// (slow start, BBR's startup); Duration how long it is measured for.
	Warmup, Duration time.Duration
}

// Validate says what Lab.Flow would refuse.
func (c FlowConfig) Validate() error {
	var errs []error
	if !slices.Contains(CongestionControls, c.Congestion) {
		errs = append(errs, fmt.Errorf("congestion control %q: want one of %v", c.Congestion, CongestionControls))
	}
	if c.Warmup < 0 {
		errs = append(errs, fmt.Errorf("warmup %v is negative", c.Warmup))
	}
	if c.Duration <= 0 {
		errs = append(errs, fmt.Errorf("duration %v: want a positive time to measure over", c.Duration))
	}
	return errors.Join(errs...)
}

// DirStats counts one flow's packets in one direction at the forwarder,
// to check against the bottleneck's and the kernel's counters. At any
// Stats call Read = Dropped + Pending + Delivered + WriteErrors.
type DirStats struct {
	// Read is what the forwarder took from the sending namespace's TUN
	// device and offered to the bottleneck.
	Read, ReadBytes uint64
	// Dropped is what the bottleneck refused.
	Dropped uint64
	// Pending is what the bottleneck accepted and has not delivered yet.
	Pending uint64
	// Delivered is what the receiving TUN device took; WriteErrors what it
	// refused.
	Delivered, DeliveredBytes, WriteErrors uint64
	// MaxPacket is the largest packet read, in bytes: at most the MTU
	// when the kernel segments for the device.
	MaxPacket int
}

// Stats are the forwarder's counters.
type Stats struct {
	// Flows holds each flow's counters by name, indexed by direction
	// (link.Up is client to server); OtherName holds the packets of no
	// flow.
	Flows map[string][2]DirStats
	// NotIPv4 counts packets read that were not IPv4, by direction: they
	// are not forwarded.
	NotIPv4 [2]uint64
}

// FlowResult is what one bulk flow achieved.
type FlowResult struct {
	Config FlowConfig
	// Congestion is what the sending socket reports it ran
	// (TCP_CONGESTION read back), to show the kernel took the request.
	Congestion string
	// Bytes is what the receiving application read during the measured
	// Elapsed time; Goodput is their ratio in bytes/s.
	Bytes   int64
	Elapsed time.Duration
	Goodput float64
	// PerSecond is the received application bytes in each whole second
	// of the run, warmup included.
	PerSecond []int64
	// Retransmits, SmoothedRTT and CongestionWindow are the sender's
	// TCP_INFO at the end (tcpi_total_retrans, tcpi_rtt, tcpi_snd_cwnd in
	// segments).
	Retransmits      uint32
	SmoothedRTT      time.Duration
	CongestionWindow uint32
	// Data and Acks are the bottleneck's statistics of the flow's data and
	// acknowledgement directions over the measured time (throughput in IP
	// bytes, queueing delay, drops).
	Data, Acks link.FlowStats
	// Forwarded is the forwarder's count over the whole run, data
	// direction first.
	Forwarded [2]DirStats
}

// Addresses of the two namespaces' TUN devices: each is the other's
// point-to-point peer, so no routes beyond the peer route are needed. They
// are private (RFC 1918) and only exist inside the lab's namespaces, so
// concurrent labs do not collide.
var (
	ClientAddr = netip.MustParseAddr("10.200.0.1")
	ServerAddr = netip.MustParseAddr("10.200.0.2")
)

// tcpPorts returns an IPv4 packet's TCP ports, or false when it is not a
// first (or only) fragment of a TCP segment with a whole header's ports.
func tcpPorts(pkt []byte) (src, dst uint16, ok bool) {
	const (
		ipv4MinHeader = 20 // RFC 791 §3.1
		protoTCP      = 6  // IANA protocol numbers
	)
	if len(pkt) < ipv4MinHeader || pkt[0]>>4 != 4 {
		return 0, 0, false
	}
	ihl := int(pkt[0]&0x0f) * 4
	if ihl < ipv4MinHeader || len(pkt) < ihl+4 || pkt[9] != protoTCP {
		return 0, 0, false
	}
	// A later fragment carries no TCP header: its first bytes are data.
	if binary.BigEndian.Uint16(pkt[6:8])&0x1fff != 0 {
		return 0, 0, false
	}
	return binary.BigEndian.Uint16(pkt[ihl:]), binary.BigEndian.Uint16(pkt[ihl+2:]), true
}

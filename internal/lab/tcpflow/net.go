package tcpflow

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	mathrand "math/rand"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/fairgrid/fairgrid/internal/lab/link"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/channel"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/waiter"
)

// The two hosts' addresses: the client (behind the access link, where
// viewers are) and the server (the far side, where simulators are).
var (
	ClientAddr = tcpip.AddrFrom4([4]byte{10, 77, 0, 1})
	ServerAddr = tcpip.AddrFrom4([4]byte{10, 77, 0, 2})
)

const (
	nicID = 1
	// mtu is Ethernet's, so full segments are 1,500-byte packets as the
	// literature's bulk TCP flows send (RFC 894; MSS 1,460, of which the
	// timestamps option takes 12, RFC 7323).
	mtu = 1500
	// channelSize bounds a stack's outbound queue; the notifier drains it
	// on every write, so it only needs to hold one burst (a send-window's
	// worth of segments written in one go).
	channelSize = 4096
	// Port bases: flow i binds the client's clientPortBase+i and the
	// server's serverPortBase+i, so a packet's client port names its flow.
	clientPortBase = 40000
	serverPortBase = 5000
	// MaxFlows is the number of flows one Net carries.
	MaxFlows = 1000
	// Socket buffers: 4 MiB from the start, far beyond a 6 Mbit/s link's
	// bandwidth-delay product plus a 266-packet buffer (about 0.5 MB at
	// 80 ms), so that the receive buffer never limits a bulk flow and loss-
	// based TCP fills the bottleneck's buffer, as the literature's flows
	// do. gVisor's receive-buffer auto-tuning is off: it held the window
	// near 64 KB, and a 6 Mbit/s flow then kept 20 packets queued instead
	// of filling a 100-packet buffer.
	bufferMin = 4 << 10
	bufferMax = 4 << 20
)

// Config configures a Net.
type Config struct {
	// Seed makes the stacks' random choices (initial sequence numbers,
	// timer jitter) repeatable; real TCP's timing still depends on the
	// goroutines' scheduling.
	Seed uint64
}

// Net is two userspace TCP/IP stacks, a client and a server, whose NICs
// are joined through a shared link.Bottleneck: what the client sends
// crosses the bottleneck's up direction, what the server sends its down
// one. Flows are added before Run.
type Net struct {
	log            *slog.Logger
	bottleneck     *link.Bottleneck
	client, server *host
	mu             sync.Mutex // guards flows and running
	flows          []*Flow
	running        bool
	refused        sync.Once
	// otherUp and otherDown carry packets of no flow (a reset after a
	// flow's end): counted, and delivered all the same.
	otherUp, otherDown link.Flow
	unknown            atomic.Uint64
}

// host is one stack and its NIC.
type host struct {
	stack *stack.Stack
	nic   *channel.Endpoint
	dir   link.Direction // the way its packets cross the bottleneck
	net   *Net
}

// New builds the two stacks and attaches them to b, registering
// "tcpflow other up" and "tcpflow other down" for packets of no flow. It
// starts no goroutines: the stacks' own start with their first packets,
// and the caller runs b.
func New(b *link.Bottleneck, cfg Config, log *slog.Logger) (*Net, error) {
	if b == nil {
		return nil, errors.New("tcpflow: no bottleneck")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	n := &Net{log: log, bottleneck: b}
	var err error
	if n.client, err = n.newHost(ClientAddr, link.Up, cfg.Seed); err != nil {
		return nil, fmt.Errorf("tcpflow: client stack: %w", err)
	}
	if n.server, err = n.newHost(ServerAddr, link.Down, cfg.Seed^0x5E57E7); err != nil {
		n.client.close()
		return nil, fmt.Errorf("tcpflow: server stack: %w", err)
	}
	if n.otherUp, err = b.AddFlow(link.FlowConfig{Name: "tcpflow other up", Dir: link.Up, Deliver: n.server.inject}); err != nil {
		n.Close()
		return nil, fmt.Errorf("tcpflow: %w", err)
	}
	if n.otherDown, err = b.AddFlow(link.FlowConfig{Name: "tcpflow other down", Dir: link.Down, Deliver: n.client.inject}); err != nil {
		n.Close()
		return nil, fmt.Errorf("tcpflow: %w", err)
	}
	return n, nil
}

// lockedSource is a seeded math/rand source the stack may call from any
// goroutine (stack.Options.RandSource must be thread-safe).
type lockedSource struct {
	mu  sync.Mutex
	src *rand.PCG
}

func (s *lockedSource) Int63() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(s.src.Uint64() >> 1)
}

func (s *lockedSource) Seed(seed int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.src.Seed(uint64(seed), 0)
}

// lockedReader is a seeded ChaCha8 stream standing in for the stack's
// secure random source: the lab needs repeatable, not secret, numbers.
type lockedReader struct {
	mu  sync.Mutex
	src *rand.ChaCha8
}

func (r *lockedReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.src.Read(p)
}

var _ mathrand.Source = (*lockedSource)(nil)

func (n *Net) newHost(addr tcpip.Address, dir link.Direction, seed uint64) (*host, error) {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	s := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol},
		RandSource:         &lockedSource{src: rand.NewPCG(seed, 0x7C9F10)},
		SecureRNG:          &lockedReader{src: rand.NewChaCha8(key)},
	})
	h := &host{stack: s, nic: channel.New(channelSize, mtu, ""), dir: dir, net: n}
	for _, opt := range []tcpip.SettableTransportProtocolOption{
		ptr(tcpip.TCPSACKEnabled(true)),
		ptr(tcpip.TCPModerateReceiveBufferOption(false)),
		// Loss recovery is RFC 6675's SACK scoreboard without RACK-TLP (RFC
		// 8985): with RACK, this gVisor version now and then left a
		// connection with a congestion window of 0 and no timer armed, so
		// it sent nothing for seconds (3 pairs of CUBIC flows in 9 at
		// 4 Mbit/s; none in 12 without).
		ptr(tcpip.TCPRecovery(0)),
		&tcpip.TCPReceiveBufferSizeRangeOption{Min: bufferMin, Default: bufferMax, Max: bufferMax},
		&tcpip.TCPSendBufferSizeRangeOption{Min: bufferMin, Default: bufferMax, Max: bufferMax},
	} {
		if err := s.SetTransportProtocolOption(tcp.ProtocolNumber, opt); err != nil {
			s.Destroy()
			return nil, fmt.Errorf("tcp option %T: %s", opt, err)
		}
	}
	if err := s.CreateNIC(nicID, h.nic); err != nil {
		s.Destroy()
		return nil, fmt.Errorf("nic: %s", err)
	}
	if err := s.AddProtocolAddress(nicID, tcpip.ProtocolAddress{Protocol: ipv4.ProtocolNumber, AddressWithPrefix: addr.WithPrefix()}, stack.AddressProperties{}); err != nil {
		s.Destroy()
		return nil, fmt.Errorf("address %v: %s", addr, err)
	}
	s.SetRouteTable([]tcpip.Route{{Destination: header.IPv4EmptySubnet, NIC: nicID}})
	h.nic.AddNotify(h)
	return h, nil
}

func ptr[T any](v T) *T { return &v }

// WriteNotify takes the packets the stack has just written to its NIC
// into the bottleneck, on the writer's goroutine.
func (h *host) WriteNotify() {
	for {
		pkt := h.nic.Read()
		if pkt == nil {
			return
		}
		b := make([]byte, 0, pkt.Size())
		for _, s := range pkt.AsSlices() {
			b = append(b, s...)
		}
		pkt.DecRef()
		h.net.send(h.dir, b)
	}
}

// inject hands a packet the bottleneck delivers to the stack, as if its
// NIC had received it.
func (h *host) inject(packet []byte) {
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(packet)})
	h.nic.InjectInbound(ipv4.ProtocolNumber, pkt)
	pkt.DecRef()
}

func (h *host) close() {
	h.nic.Close()
	h.stack.Close()
	h.stack.Wait()
	h.stack.Destroy()
}

// clientPort returns the client-side port of an IPv4 TCP packet going in
// dir, 0 if it is not one.
func clientPort(dir link.Direction, p []byte) uint16 {
	if len(p) < header.IPv4MinimumSize || p[0]>>4 != 4 || p[9] != uint8(tcp.ProtocolNumber) {
		return 0
	}
	ihl := int(p[0]&0xf) * 4
	if ihl < header.IPv4MinimumSize || len(p) < ihl+4 {
		return 0
	}
	if dir == link.Up {
		return binary.BigEndian.Uint16(p[ihl:]) // source port
	}
	return binary.BigEndian.Uint16(p[ihl+2:]) // destination port
}

// send labels a packet with its flow and offers it to the bottleneck.
func (n *Net) send(dir link.Direction, packet []byte) {
	f := n.otherUp
	if dir == link.Down {
		f = n.otherDown
	}
	if i := int(clientPort(dir, packet)) - clientPortBase; i >= 0 {
		n.mu.Lock()
		if i < len(n.flows) {
			f = n.flows[i].links[dir]
		}
		n.mu.Unlock()
	}
	if f == n.otherUp || f == n.otherDown {
		n.unknown.Add(1)
	}
	if _, err := n.bottleneck.Send(f, packet); err != nil {
		// Only a flow the bottleneck did not hand out fails, and these all
		// came from it: a programming error, said once per Net.
		n.refused.Do(func() { n.log.Error("tcpflow: bottleneck refused a packet", "err", err) })
	}
}

// UnclassifiedPackets is the number of packets that belonged to no flow
// (they cross the bottleneck as "tcpflow other up/down").
func (n *Net) UnclassifiedPackets() uint64 { return n.unknown.Load() }

// Close tears both stacks down; Run must have returned.
func (n *Net) Close() {
	if n.client != nil {
		n.client.close()
	}
	if n.server != nil {
		n.server.close()
	}
}

// StackStats are a stack's TCP counters that show congestion control at
// work.
type StackStats struct {
	SegmentsSent, Retransmits                   uint64
	FastRecovery, SACKRecovery, TLPRecovery     uint64
	Timeouts                                    uint64 // retransmission timeouts (RTO)
	SlowStartRetransmits, FastRetransmit        uint64
	ActiveOpenings, PassiveOpenings, ResetsSent uint64
}

func stackStats(s *stack.Stack) StackStats {
	t := s.Stats().TCP
	return StackStats{
		SegmentsSent: t.SegmentsSent.Value(), Retransmits: t.Retransmits.Value(),
		FastRecovery: t.FastRecovery.Value(), SACKRecovery: t.SACKRecovery.Value(), TLPRecovery: t.TLPRecovery.Value(),
		Timeouts:             t.Timeouts.Value(),
		SlowStartRetransmits: t.SlowStartRetransmits.Value(), FastRetransmit: t.FastRetransmit.Value(),
		ActiveOpenings: t.ActiveConnectionOpenings.Value(), PassiveOpenings: t.PassiveConnectionOpenings.Value(),
		ResetsSent: t.ResetsSent.Value(),
	}
}

// Stats returns the client's and the server's TCP counters.
func (n *Net) Stats() (client, server StackStats) {
	return stackStats(n.client.stack), stackStats(n.server.stack)
}

// dial opens a connection from the client's port to the server's with cc
// set before the handshake.
func dial(ctx context.Context, s *stack.Stack, cc CongestionControl, local, remote tcpip.FullAddress, window int) (tcpip.Endpoint, *waiter.Queue, error) {
	wq := new(waiter.Queue)
	ep, terr := s.NewEndpoint(tcp.ProtocolNumber, ipv4.ProtocolNumber, wq)
	if terr != nil {
		return nil, nil, fmt.Errorf("endpoint: %s", terr)
	}
	setReceiveBuffer(ep, window)
	opt := tcpip.CongestionControlOption(cc)
	if terr := ep.SetSockOpt(&opt); terr != nil {
		ep.Close()
		return nil, nil, fmt.Errorf("congestion control %q: %s", cc, terr)
	}
	if terr := ep.Bind(local); terr != nil {
		ep.Close()
		return nil, nil, fmt.Errorf("bind %v:%d: %s", local.Addr, local.Port, terr)
	}
	entry, ready := waiter.NewChannelEntry(waiter.WritableEvents)
	wq.EventRegister(&entry)
	defer wq.EventUnregister(&entry)
	terr = ep.Connect(remote)
	if _, started := terr.(*tcpip.ErrConnectStarted); started {
		select {
		case <-ready:
			terr = ep.LastError()
		case <-ctx.Done():
			ep.Close()
			return nil, nil, ctx.Err()
		}
	}
	if terr != nil {
		ep.Close()
		return nil, nil, fmt.Errorf("connect %v:%d: %s", remote.Addr, remote.Port, terr)
	}
	return ep, wq, nil
}

// listenBacklog is a flow listener's backlog. It takes one connection, but
// with a backlog of 1 gVisor answers the SYN with a SYN cookie, and a
// cookie's SYN-ACK carries neither window scaling nor SACK-permitted (RFC
// 4987 §3.6): the window stays at 64 KB and SACK off.
const listenBacklog = 16

// setReceiveBuffer sets ep's receive buffer to window bytes (0: leave
// the stack's), before the handshake, where the window scale is agreed.
// A listener's is what the connections it accepts start with.
func setReceiveBuffer(ep tcpip.Endpoint, window int) {
	if window > 0 {
		ep.SocketOptions().SetReceiveBufferSize(int64(window), true)
	}
}

// listen opens a listening endpoint on the server's port.
func listen(s *stack.Stack, addr tcpip.FullAddress, window int) (tcpip.Endpoint, *waiter.Queue, error) {
	wq := new(waiter.Queue)
	ep, terr := s.NewEndpoint(tcp.ProtocolNumber, ipv4.ProtocolNumber, wq)
	if terr != nil {
		return nil, nil, fmt.Errorf("endpoint: %s", terr)
	}
	setReceiveBuffer(ep, window)
	if terr := ep.Bind(addr); terr != nil {
		ep.Close()
		return nil, nil, fmt.Errorf("bind %v:%d: %s", addr.Addr, addr.Port, terr)
	}
	if terr := ep.Listen(listenBacklog); terr != nil {
		ep.Close()
		return nil, nil, fmt.Errorf("listen: %s", terr)
	}
	return ep, wq, nil
}

// accept waits for the one connection a flow's listener takes, and sets
// cc on it (an accepted endpoint starts from the stack's default).
func accept(ctx context.Context, ln tcpip.Endpoint, lwq *waiter.Queue, cc CongestionControl) (tcpip.Endpoint, *waiter.Queue, error) {
	entry, ready := waiter.NewChannelEntry(waiter.ReadableEvents)
	lwq.EventRegister(&entry)
	defer lwq.EventUnregister(&entry)
	for {
		ep, wq, terr := ln.Accept(nil)
		if _, wait := terr.(*tcpip.ErrWouldBlock); wait {
			select {
			case <-ready:
				continue
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		}
		if terr != nil {
			return nil, nil, fmt.Errorf("accept: %s", terr)
		}
		opt := tcpip.CongestionControlOption(cc)
		if terr := ep.SetSockOpt(&opt); terr != nil {
			ep.Close()
			return nil, nil, fmt.Errorf("congestion control %q: %s", cc, terr)
		}
		return ep, wq, nil
	}
}

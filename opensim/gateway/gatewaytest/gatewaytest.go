// Package gatewaytest runs a gateway on loopback for tests, as
// net/http/httptest runs a server: a stand-in region (a UDP socket that
// records what reaches it and sends what the test says), the gateway in
// front of it, and test viewers sending LLUDP from sockets of their own.
// Every wait is bounded by Wait and fails the test when it runs out.
package gatewaytest

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim/gateway"
)

// Wait bounds every wait for a datagram or a state, on a loaded machine.
const Wait = 10 * time.Second

// Loopback is the address the gateway, the region and the viewers use.
var Loopback = netip.MustParseAddr("127.0.0.1")

// RegionDatagram is a datagram that reached the stand-in region.
type RegionDatagram struct {
	From netip.AddrPort
	B    []byte
}

// Region is a region's UDP socket: what reaches it is recorded, in order.
type Region struct {
	conn *net.UDPConn
	got  chan RegionDatagram
}

// StartRegion binds a stand-in region on loopback until the test ends.
func StartRegion(t testing.TB) *Region {
	t.Helper()
	return StartRegionAt(t, netip.AddrPortFrom(Loopback, 0))
}

// StartRegionAt binds a stand-in region at addr until the test ends or
// Close: a region restarting at the address it had.
func StartRegionAt(t testing.TB, addr netip.AddrPort) *Region {
	t.Helper()
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(addr))
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadBuffer(4 << 20)
	conn.SetWriteBuffer(4 << 20)
	r := &Region{conn: conn, got: make(chan RegionDatagram, 4096)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 8192)
		for {
			n, from, err := conn.ReadFromUDPAddrPort(buf)
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err == nil {
				select {
				case r.got <- RegionDatagram{from, append([]byte(nil), buf[:n]...)}:
				default: // a test that reads nothing has nothing to lose
				}
			}
		}
	}()
	t.Cleanup(func() { conn.Close(); <-done })
	return r
}

// Close closes the region's socket: the region is down.
func (r *Region) Close() { r.conn.Close() }

// Addr is the region's address: a route's Region.
func (r *Region) Addr() netip.AddrPort { return r.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// Next is the next datagram to reach the region.
func (r *Region) Next(t testing.TB) RegionDatagram {
	t.Helper()
	select {
	case g := <-r.got:
		return g
	case <-time.After(Wait):
		t.Fatal("nothing reached the region")
		return RegionDatagram{}
	}
}

// NextOf is the next datagram of message id to reach the region; others
// before it are skipped.
func (r *Region) NextOf(t testing.TB, id lludp.MessageID) RegionDatagram {
	t.Helper()
	for {
		g := r.Next(t)
		if h, _, _, err := lludp.ParseHeader(g.B); err == nil && h.ID == id {
			return g
		}
	}
}

// Datagram is a region datagram of message id, size bytes in all, whose
// body after the message number starts with body.
func Datagram(id lludp.MessageID, seq uint32, flags lludp.Flags, size int, body []byte) []byte {
	payload := lludp.AppendMessageNumber(nil, id)
	payload = append(payload, body...)
	payload = append(payload, make([]byte, max(0, size-len(payload)-lludp.HeaderSize))...)
	return lludp.AppendPacket(nil, lludp.Header{Flags: flags, Sequence: seq}, payload, nil)
}

// Send sends b to a circuit's endpoint at the gateway, as the region.
func (r *Region) Send(t testing.TB, to netip.AddrPort, b []byte) {
	t.Helper()
	if _, err := r.conn.WriteToUDPAddrPort(b, to); err != nil {
		t.Fatal(err)
	}
}

// Gateway is a running gateway, its region, and the source of every
// viewer datagram it has handled, in the order it handled them.
type Gateway struct {
	GW     *gateway.Gateway
	Region *Region
	Seen   chan netip.AddrPort
}

// Start runs a gateway with cfg in front of region (a new one if nil;
// one route to it if cfg has none) until the test ends. cfg's Tap is the
// package's.
func Start(t testing.TB, cfg gateway.Config, region *Region) *Gateway {
	t.Helper()
	if region == nil {
		region = StartRegion(t)
	}
	if len(cfg.Routes) == 0 {
		cfg.Routes = []gateway.Route{{Listen: netip.AddrPortFrom(Loopback, 0), Region: region.Addr()}}
	}
	u := &Gateway{Region: region, Seen: make(chan netip.AddrPort, 4096)}
	// The tap runs as the gateway handles each viewer datagram, in order,
	// and as each datagram leaves for a viewer (from a public address).
	public := map[netip.AddrPort]bool{}
	cfg.Tap = func(d lludp.Datagram) {
		if !public[d.Src] {
			select {
			case u.Seen <- d.Src:
			default:
			}
		}
	}
	gw, err := gateway.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	u.GW = gw
	for i := range cfg.Routes {
		public[gw.Addr(i)] = true // before Run: the tap only reads it
	}
	Run(t, gw)
	return u
}

// Run runs gw until the test ends; its Run's error fails the test.
func Run(t testing.TB, gw *gateway.Gateway) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gw.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("gateway: %v", err)
		}
	})
}

// HandledFresh returns once the gateway has handled every datagram sent
// so far from endpoints it had no circuit for: those wait in one queue, in
// order, so when a marker sent after them from a fresh endpoint reaches
// the tap, they have been handled.
func (u *Gateway) HandledFresh(t testing.TB) {
	t.Helper()
	marker := NewViewer(t, u.GW.Addr(0), 999, Loopback)
	marker.Send(t, &lludp.AgentUpdate{}, 0)
	deadline := time.After(Wait)
	for {
		select {
		case src := <-u.Seen:
			if src == marker.Addr() {
				return
			}
		case <-deadline:
			t.Fatal("the gateway never handled the marker")
		}
	}
}

// LoggedIn logs v in through u and returns the endpoint the region sees
// for it; with th, the viewer's AgentThrottle has reached the region too
// (so the gateway has applied it).
func (u *Gateway) LoggedIn(t testing.TB, v *Viewer, th *[lludp.NumCategories]float32) netip.AddrPort {
	t.Helper()
	v.UseCircuitCode(t)
	v.Prove(t)
	from := u.Region.NextOf(t, lludp.UseCircuitCodeID).From
	if th != nil {
		v.Throttle(t, *th)
		u.Region.NextOf(t, lludp.AgentThrottleID)
	}
	return from
}

// Establish has the region send v's circuit (at the region's endpoint at)
// a reliable datagram and v ack it: the gateway counts the circuit
// established once the viewer acks the region.
func (u *Gateway) Establish(t testing.TB, v *Viewer, at netip.AddrPort) {
	t.Helper()
	u.Region.Send(t, at, Datagram(lludp.RegionHandshakeID, 1, lludp.FlagReliable, 100, nil))
	for {
		h, _, _ := v.Recv(t)
		if h.ID == lludp.RegionHandshakeID {
			v.Send(t, &lludp.PacketAck{IDs: []uint32{h.Sequence}}, 0)
			u.Region.NextOf(t, lludp.PacketAckID)
			return
		}
	}
}

// Viewer sends LLUDP to the gateway from a socket of its own.
type Viewer struct {
	conn *net.UDPConn
	to   netip.AddrPort
	code uint32
	seq  uint32
	buf  []byte
}

// NewViewer binds a viewer at src (port 0) sending to the gateway at to,
// with circuit code code, until the test ends.
func NewViewer(t testing.TB, to netip.AddrPort, code uint32, src netip.Addr) *Viewer {
	t.Helper()
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(src, 0)))
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadBuffer(4 << 20)
	t.Cleanup(func() { conn.Close() })
	return &Viewer{conn: conn, to: to, code: code, buf: make([]byte, 8192)}
}

// NewCircuit makes the viewer's next UseCircuitCode a new circuit's, with
// circuit code code (and the agent and session derived from it), its
// sequence numbers starting again: a new login from the same endpoint.
func (v *Viewer) NewCircuit(code uint32) { v.code, v.seq = code, 0 }

// Addr is the viewer's endpoint.
func (v *Viewer) Addr() netip.AddrPort { return v.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// Code is the viewer's circuit code.
func (v *Viewer) Code() uint32 { return v.code }

// Agent is the viewer's AgentID and SessionID.
func (v *Viewer) Agent() lludp.AgentData {
	return lludp.AgentData{AgentID: lludp.UUID{1, byte(v.code), byte(v.code >> 8)}, SessionID: lludp.UUID{2, byte(v.code), byte(v.code >> 8)}}
}

// Send sends m with the viewer's next sequence number.
func (v *Viewer) Send(t testing.TB, m lludp.Typed, flags lludp.Flags) {
	t.Helper()
	v.seq++
	b, err := lludp.AppendMessage(nil, lludp.Header{Sequence: v.seq, Flags: flags}, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.conn.WriteToUDPAddrPort(b, v.to); err != nil {
		t.Fatal(err)
	}
}

// UseCircuitCode opens the viewer's circuit.
func (v *Viewer) UseCircuitCode(t testing.TB) {
	t.Helper()
	ad := v.Agent()
	v.Send(t, &lludp.UseCircuitCode{Code: v.code, AgentID: ad.AgentID, SessionID: ad.SessionID}, lludp.FlagReliable)
}

// Prove answers the gateway's probe of the viewer's address, as a viewer
// acks every reliable datagram: it reads up to the probe (a reliable
// StartPingCheck) and acks its number, and returns the number (the
// circuit's numbering towards the viewer continues from it).
func (v *Viewer) Prove(t testing.TB) uint32 {
	t.Helper()
	for {
		h, _, _ := v.Recv(t)
		if h.ID == lludp.StartPingCheckID && h.Flags.Reliable() {
			v.Send(t, &lludp.PacketAck{IDs: []uint32{h.Sequence}}, 0)
			return h.Sequence
		}
	}
}

// Throttle sends the viewer's AgentThrottle (bits/s per category).
func (v *Viewer) Throttle(t testing.TB, th [lludp.NumCategories]float32) {
	t.Helper()
	v.Send(t, &lludp.AgentThrottle{AgentData: v.Agent(), CircuitCode: v.code, Throttles: th}, 0)
}

// Recv is the next datagram from the gateway, its header and when it
// arrived; the payload is valid until the next Recv.
func (v *Viewer) Recv(t testing.TB) (lludp.Header, []byte, time.Time) {
	t.Helper()
	v.conn.SetReadDeadline(time.Now().Add(Wait))
	n, err := v.conn.Read(v.buf)
	at := time.Now()
	if err != nil {
		t.Fatalf("viewer: %v", err)
	}
	h, _, _, err := lludp.ParseHeader(v.buf[:n])
	if err != nil {
		t.Fatalf("viewer: %v", err)
	}
	return h, v.buf[:n], at
}

// WaitUntil waits for cond, looking every 10 ms: a timeout on real
// sockets shows only in its effect, which no event announces.
func WaitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(Wait)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%s: not within %v", what, Wait)
		}
	}
}

// RandomUseCircuitCode is a UseCircuitCode datagram with random IDs from
// rng, as a flood of spoofed logins sends them.
func RandomUseCircuitCode(rng *rand.Rand) []byte {
	var agent, session lludp.UUID
	binary.LittleEndian.PutUint64(agent[:], rng.Uint64())
	binary.LittleEndian.PutUint64(session[:], rng.Uint64())
	b, _ := lludp.AppendMessage(nil, lludp.Header{Flags: lludp.FlagReliable, Sequence: 1},
		&lludp.UseCircuitCode{Code: rng.Uint32(), AgentID: agent, SessionID: session}, nil)
	return b
}

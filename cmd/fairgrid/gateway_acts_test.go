//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim"
	"github.com/fairgrid/fairgrid/opensim/gateway"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
)

// Each [gateway] key acting on a running gateway (gatewayKeyCases): a
// gateway on loopback built from the file's Config, in front of a stand-in
// region — a UDP socket that records what reaches it and sends what the
// case says — and test viewers sending LLUDP from sockets of their own.

// actWait bounds every wait for a datagram or a state on a loaded machine.
const actWait = 10 * time.Second

// regionGot is a datagram that reached the stand-in region.
type regionGot struct {
	from netip.AddrPort
	b    []byte
}

// standInRegion is a region's UDP socket: what reaches it is recorded.
type standInRegion struct {
	conn *net.UDPConn
	got  chan regionGot
}

func startStandInRegion(t *testing.T) *standInRegion {
	t.Helper()
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	r := &standInRegion{conn: conn, got: make(chan regionGot, 4096)}
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
				case r.got <- regionGot{from, append([]byte(nil), buf[:n]...)}:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() { conn.Close(); <-done })
	return r
}

func (r *standInRegion) addr() netip.AddrPort { return r.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// next is the next datagram to reach the region.
func (r *standInRegion) next(t *testing.T) regionGot {
	t.Helper()
	select {
	case g := <-r.got:
		return g
	case <-time.After(actWait):
		t.Fatal("nothing reached the region")
		return regionGot{}
	}
}

// nextOf is the next datagram of message id to reach the region.
func (r *standInRegion) nextOf(t *testing.T, id lludp.MessageID) regionGot {
	t.Helper()
	for {
		g := r.next(t)
		if h, _, _, err := lludp.ParseHeader(g.b); err == nil && h.ID == id {
			return g
		}
	}
}

// send sends a region datagram of message id, size bytes, to a circuit's
// endpoint at the gateway.
func (r *standInRegion) send(t *testing.T, to netip.AddrPort, id lludp.MessageID, seq uint32, flags lludp.Flags, size int) {
	t.Helper()
	payload := lludp.AppendMessageNumber(nil, id)
	payload = append(payload, make([]byte, size-len(payload)-lludp.HeaderSize)...)
	if _, err := r.conn.WriteToUDPAddrPort(lludp.AppendPacket(nil, lludp.Header{Flags: flags, Sequence: seq}, payload, nil), to); err != nil {
		t.Fatal(err)
	}
}

// gatewayUnderTest is a running gateway, its region, and the sources its
// tap has seen datagrams from, in the order it handled them.
type gatewayUnderTest struct {
	gw     *gateway.Gateway
	region *standInRegion
	seen   chan netip.AddrPort
}

// runTestGateway runs a gateway with cfg in front of a stand-in region
// (cfg's routes, if it has none: one to region) until the test ends.
func runTestGateway(t *testing.T, cfg gateway.Config, region *standInRegion) *gatewayUnderTest {
	t.Helper()
	if region == nil {
		region = startStandInRegion(t)
	}
	if len(cfg.Routes) == 0 {
		cfg.Routes = []gateway.Route{{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Region: region.addr()}}
	}
	u := &gatewayUnderTest{region: region, seen: make(chan netip.AddrPort, 4096)}
	// The tap runs as the gateway handles each viewer datagram, in order.
	cfg.Tap = func(d lludp.Datagram) {
		select {
		case u.seen <- d.Src:
		default:
		}
	}
	gw, err := gateway.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	u.gw = gw
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gw.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("gateway: %v", err)
		}
	})
	return u
}

// handledFresh returns once the gateway has handled every datagram sent
// so far from endpoints it had no circuit for: those wait in one queue, in
// order, so when a marker sent after them from a fresh endpoint reaches
// the tap, they have been handled.
func (u *gatewayUnderTest) handledFresh(t *testing.T) {
	t.Helper()
	marker := newTestViewer(t, u.gw.Addr(0), 999, netip.MustParseAddr("127.0.0.1"))
	marker.send(t, &lludp.AgentUpdate{}, 0)
	deadline := time.After(actWait)
	for {
		select {
		case src := <-u.seen:
			if src == marker.addr() {
				return
			}
		case <-deadline:
			t.Fatal("the gateway never handled the marker")
		}
	}
}

// testViewer sends LLUDP to the gateway from a socket of its own.
type testViewer struct {
	conn *net.UDPConn
	to   netip.AddrPort
	code uint32
	seq  uint32
}

func newTestViewer(t *testing.T, to netip.AddrPort, code uint32, src netip.Addr) *testViewer {
	t.Helper()
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(src, 0)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &testViewer{conn: conn, to: to, code: code}
}

func (v *testViewer) addr() netip.AddrPort { return v.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

func (v *testViewer) agent() lludp.AgentData {
	return lludp.AgentData{AgentID: lludp.UUID{1, byte(v.code)}, SessionID: lludp.UUID{2, byte(v.code)}}
}

func (v *testViewer) send(t *testing.T, m lludp.Typed, flags lludp.Flags) {
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

func (v *testViewer) useCircuitCode(t *testing.T) {
	ad := v.agent()
	v.send(t, &lludp.UseCircuitCode{Code: v.code, AgentID: ad.AgentID, SessionID: ad.SessionID}, lludp.FlagReliable)
}

func (v *testViewer) throttle(t *testing.T, th [lludp.NumCategories]float32) {
	v.send(t, &lludp.AgentThrottle{AgentData: v.agent(), CircuitCode: v.code, Throttles: th}, 0)
}

// recv is the next datagram from the gateway, and when it arrived.
func (v *testViewer) recv(t *testing.T) (lludp.Header, time.Time) {
	t.Helper()
	buf := make([]byte, 8192)
	v.conn.SetReadDeadline(time.Now().Add(actWait))
	n, err := v.conn.Read(buf)
	if err != nil {
		t.Fatalf("viewer: %v", err)
	}
	h, _, _, err := lludp.ParseHeader(buf[:n])
	if err != nil {
		t.Fatalf("viewer: %v", err)
	}
	return h, time.Now()
}

// loggedIn logs v in through u and returns the endpoint the region sees
// for it; with th, the viewer's AgentThrottle has reached the region too
// (so the gateway applied it).
func (u *gatewayUnderTest) loggedIn(t *testing.T, v *testViewer, th *[lludp.NumCategories]float32) netip.AddrPort {
	t.Helper()
	v.useCircuitCode(t)
	from := u.region.nextOf(t, lludp.UseCircuitCodeID).from
	if th != nil {
		v.throttle(t, *th)
		u.region.nextOf(t, lludp.AgentThrottleID)
	}
	return from
}

// waitUntil waits for cond, looking every 10 ms: a timeout on real
// sockets shows only in its effect, which no event announces.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(actWait)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%s: not within %v", what, actWait)
		}
	}
}

var loopbackAddr = netip.MustParseAddr("127.0.0.1")

// routesAct: the configured route is what the gateway serves: a viewer's
// UseCircuitCode at its public address reaches that region from a socket
// of the gateway's; with the default, no routes, there is no gateway.
func routesAct(t *testing.T, _, def gateway.Config) {
	region := startStandInRegion(t)
	cfg := gatewayFileConfig(t, fmt.Sprintf(`routes = ["127.0.0.1:0=%v"]`, region.addr()))
	u := runTestGateway(t, cfg, region)
	v := newTestViewer(t, u.gw.Addr(0), 1, loopbackAddr)
	if from := u.loggedIn(t, v, nil); from == v.addr() || !from.IsValid() {
		t.Errorf("the region saw the viewer at %v, its own address %v", from, v.addr())
	}
	if _, err := gateway.New(def, nil); err == nil {
		t.Error("the default configuration (no routes) made a gateway")
	}
}

// bindAct: the region sees every circuit from the bind address.
func bindAct(t *testing.T, changed, def gateway.Config) {
	if runtime.GOOS != "linux" {
		t.Skip("127.0.0.2 is local on Linux only")
	}
	for _, tc := range []struct {
		cfg  gateway.Config
		want netip.Addr
	}{{changed, netip.MustParseAddr("127.0.0.2")}, {def, loopbackAddr}} {
		u := runTestGateway(t, tc.cfg, nil)
		if from := u.loggedIn(t, newTestViewer(t, u.gw.Addr(0), 1, loopbackAddr), nil); from.Addr() != tc.want {
			t.Errorf("bind %v: the region saw the circuit from %v, want %v", tc.cfg.Bind, from, tc.want)
		}
	}
}

// askFast is an AgentThrottle asking 2 Mbit/s, the viewer's split.
var askFast = throttle.ViewerSplit(ratecalc.RateFromBits(2_000_000))

// rateCapAct (scene_bps, client_max_bps at 80 kbit/s, 10,000 B/s): a
// viewer asking 2 Mbit/s is sent eight 1,000-byte texture datagrams the
// region sent at once. Under the cap they leave over at least
// (8,000 − 1,500 bytes of bucket − one datagram of debt) / 10,000 B/s =
// 0.55 s (asserted: 0.4 s); at the default caps, in a fraction of that.
func rateCapAct(t *testing.T, changed, def gateway.Config) {
	span := func(cfg gateway.Config) time.Duration {
		u := runTestGateway(t, cfg, nil)
		v := newTestViewer(t, u.gw.Addr(0), 1, loopbackAddr)
		at := u.loggedIn(t, v, &askFast)
		for i := range 8 {
			u.region.send(t, at, lludp.ImagePacketID, uint32(10+i), lludp.FlagReliable, 1000)
		}
		var first, last time.Time
		for i := 0; i < 8; {
			h, when := v.recv(t)
			if h.ID != lludp.ImagePacketID {
				continue
			}
			if i == 0 {
				first = when
			}
			last = when
			i++
		}
		return last.Sub(first)
	}
	capped, free := span(changed), span(def)
	t.Logf("eight 1,000-byte datagrams left over %v under the cap, %v at the defaults", capped, free)
	if capped < 400*time.Millisecond {
		t.Errorf("under a 10,000 B/s cap, 8,000 bytes left within %v", capped)
	}
	if free >= capped/2 {
		t.Errorf("at the defaults they took %v, under the cap %v", free, capped)
	}
}

// queueBoundAct (queue_bytes 8,192, queue_packets 4): twenty 1,000-byte
// texture datagrams arrive at once for a viewer asking 64 kbit/s; the
// texture queue's bound drops the excess at the tail (counted), where the
// default bounds (256 KiB, 512) hold them all. The region's StartPingCheck
// sent after them leaves at once (no channel) and, read on the same
// socket, is handled after them: when it reaches the viewer, they have
// all been queued or dropped.
func queueBoundAct(t *testing.T, changed, def gateway.Config) {
	refused := func(cfg gateway.Config) uint64 {
		u := runTestGateway(t, cfg, nil)
		v := newTestViewer(t, u.gw.Addr(0), 1, loopbackAddr)
		slow := throttle.ViewerSplit(ratecalc.RateFromBits(64_000))
		at := u.loggedIn(t, v, &slow)
		for i := range 20 {
			u.region.send(t, at, lludp.ImagePacketID, uint32(10+i), lludp.FlagReliable, 1000)
		}
		u.region.send(t, at, lludp.StartPingCheckID, 30, 0, 18)
		for {
			if h, _ := v.recv(t); h.ID == lludp.StartPingCheckID {
				break
			}
		}
		c := u.gw.Circuits()
		if len(c) != 1 {
			t.Fatalf("%d circuits", len(c))
		}
		return c[0].Refused[opensim.Texture]
	}
	bounded, unbounded := refused(changed), refused(def)
	t.Logf("texture datagrams dropped at a full queue: %d of 20 bounded, %d at the defaults", bounded, unbounded)
	if bounded == 0 || unbounded != 0 {
		t.Errorf("dropped %d with the bound, %d at the defaults: want some, and none", bounded, unbounded)
	}
}

// avatarPriorityAct: a viewer whose Task category (the Avatar channel's
// rate is 0.8 of it) is a ninth of its Texture is sent twenty 1,000-byte
// texture datagrams, then ten 120-byte avatar updates. Fair queuing by
// rate lets about one texture datagram through per 1.3 avatar updates, so
// the last update leaves after several textures; with avatar priority the
// updates go first while the Avatar bucket (1,500 bytes: all ten) lasts.
func avatarPriorityAct(t *testing.T, changed, def gateway.Config) {
	var th [lludp.NumCategories]float32
	th[lludp.Task] = 40_000
	th[lludp.Texture] = 360_000
	texturesAhead := func(cfg gateway.Config) int {
		u := runTestGateway(t, cfg, nil)
		v := newTestViewer(t, u.gw.Addr(0), 1, loopbackAddr)
		at := u.loggedIn(t, v, &th)
		for i := range 20 {
			u.region.send(t, at, lludp.ImagePacketID, uint32(10+i), lludp.FlagReliable, 1000)
		}
		for i := range 10 {
			u.region.send(t, at, lludp.ImprovedTerseObjectUpdateID, uint32(30+i), 0, 120)
		}
		textures, ahead := 0, 0
		for avatars := 0; avatars < 10; {
			h, _ := v.recv(t)
			switch h.ID {
			case lludp.ImagePacketID:
				textures++
			case lludp.ImprovedTerseObjectUpdateID:
				avatars++
				ahead = textures
			}
		}
		return ahead
	}
	prio, fair := texturesAhead(changed), texturesAhead(def)
	t.Logf("texture datagrams sent before the last avatar update: %d with avatar priority, %d without", prio, fair)
	if prio >= fair {
		t.Errorf("avatar priority let %d textures ahead of the last update, fair queuing %d", prio, fair)
	}
}

// capAct (max_viewers, max_pending, max_per_prefix at 2): two viewers
// from 127.0.0.1 log in (and, for max_viewers, complete their movement, so
// neither is pending), then a third sends its UseCircuitCode. Under the
// cap it is refused (drop), or the oldest pending circuit makes room for
// it (evict); at the defaults it is carried as a third circuit.
func capAct(activate, evict bool) func(t *testing.T, changed, def gateway.Config) {
	return func(t *testing.T, changed, def gateway.Config) {
		run := func(cfg gateway.Config) gateway.Counters {
			u := runTestGateway(t, cfg, nil)
			for code := range uint32(2) {
				v := newTestViewer(t, u.gw.Addr(0), code+1, loopbackAddr)
				u.loggedIn(t, v, nil)
				if activate {
					v.send(t, &lludp.CompleteAgentMovement{AgentData: v.agent(), CircuitCode: v.code}, lludp.FlagReliable)
					u.region.nextOf(t, lludp.CompleteAgentMovementID)
				}
			}
			newTestViewer(t, u.gw.Addr(0), 3, loopbackAddr).useCircuitCode(t)
			u.handledFresh(t)
			return u.gw.Counters()
		}
		capped, free := run(changed), run(def)
		t.Logf("capped: %d circuits (%d pending), %d refused, %d evicted; defaults: %d circuits (%d pending), %d refused, %d evicted",
			capped.Viewers, capped.Pending, capped.Drops[gateway.Refused], capped.Evicted, free.Viewers, free.Pending, free.Drops[gateway.Refused], free.Evicted)
		if free.Viewers != 3 || free.Drops[gateway.Refused] != 0 || free.Evicted != 0 {
			t.Errorf("at the defaults the third viewer was not carried: %+v", free)
		}
		if !evict && (capped.Viewers != 2 || capped.Drops[gateway.Refused] != 1) {
			t.Errorf("under the cap the third viewer was not refused: %+v", capped)
		}
		if evict && (capped.Viewers != 2 || capped.Pending != 2 || capped.Evicted != 1) {
			t.Errorf("under the cap the oldest pending circuit did not make room: %+v", capped)
		}
	}
}

// What a viewer does before it falls silent, for the timeout keys.
type silence int

const (
	stayPending  silence = iota // UseCircuitCode only: pending_timeout
	goSilent                    // and CompleteAgentMovement: idle_timeout
	closeCircuit                // and CloseCircuit: linger
)

// timeoutAct (pending_timeout, idle_timeout, linger at 300 ms): the same
// viewer behaviour at two gateways at once, one changed and one at the
// defaults (10 s, 60 s, 2 s). The changed one closes the circuit no
// sooner than 300 ms after the viewer's last datagram reached the region;
// when it has, the default one still carries it.
func timeoutAct(s silence) func(t *testing.T, changed, def gateway.Config) {
	return func(t *testing.T, changed, def gateway.Config) {
		var us [2]*gatewayUnderTest
		var last [2]time.Time
		for i, cfg := range []gateway.Config{changed, def} {
			u := runTestGateway(t, cfg, nil)
			v := newTestViewer(t, u.gw.Addr(0), 1, loopbackAddr)
			// The clock starts before the viewer's last datagram is sent:
			// the gateway's timeout runs from no earlier.
			last[i] = time.Now()
			u.loggedIn(t, v, nil)
			if s >= goSilent {
				last[i] = time.Now()
				v.send(t, &lludp.CompleteAgentMovement{AgentData: v.agent(), CircuitCode: v.code}, lludp.FlagReliable)
				u.region.nextOf(t, lludp.CompleteAgentMovementID)
			}
			if s == closeCircuit {
				last[i] = time.Now()
				v.send(t, &lludp.CloseCircuit{}, 0)
				u.region.nextOf(t, lludp.CloseCircuitID)
			}
			us[i] = u
		}
		waitUntil(t, "the changed timeout closes the circuit", func() bool { return us[0].gw.Counters().Expired == 1 })
		took := time.Since(last[0])
		other := us[1].gw.Counters()
		t.Logf("closed %v after the viewer's last datagram; the default gateway carries %d circuits", took, other.Viewers)
		if took < 300*time.Millisecond {
			t.Errorf("closed after %v, before its 300 ms", took)
		}
		if other.Viewers != 1 || other.Expired != 0 {
			t.Errorf("at the defaults the circuit closed as soon: %+v", other)
		}
	}
}

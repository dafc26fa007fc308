package proxy

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/lifecycletest"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/circuit"
	"github.com/fairgrid/fairgrid/throttle/group"
	"github.com/fairgrid/fairgrid/throttle/proxy/socks5"
	"github.com/fairgrid/fairgrid/throttle/sidecar"
)

// startProxy runs a proxy on a free loopback port until the test ends,
// as the command does: one group, whose error fails the test.
func startProxy(t *testing.T, cfg Config, sc sidecar.Config) (*Proxy, string) {
	t.Helper()
	p, err := New(cfg, sc, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return p, lifecycletest.Serve(t, "127.0.0.1:0", func(g *group.Group, ln net.Listener) { p.AddTo(g, ln) })
}

// proxyRig is a proxy on loopback with a viewer's association and a
// simulator's socket.
type proxyRig struct {
	p      *Proxy
	loop   *throttle.Loop
	viewer *socks5.UDPConn
	sim    *net.UDPConn
	simAt  netip.AddrPort
	seq    uint32
	// lastFrom is the source of the last datagram the simulator read.
	lastFrom netip.AddrPort
}

func newProxyRig(t *testing.T, interval time.Duration) *proxyRig {
	t.Helper()
	loop, err := throttle.New(throttle.Config{Interval: interval, SimPorts: lludp.SimPorts}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The simulator listens on an ephemeral port, beyond the simulator
	// ports the relay sends to by default.
	p, ln := startProxy(t, Config{UDPPorts: lludp.Ports{{Lo: 1, Hi: 65535}}}, sidecar.Config{Loop: loop})
	sim, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	v, err := socks5.DialUDP(context.Background(), ln, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close(); sim.Close() })
	sim.SetReadDeadline(time.Now().Add(10 * time.Second))
	return &proxyRig{p: p, loop: loop, viewer: v, sim: sim, simAt: sim.LocalAddr().(*net.UDPAddr).AddrPort()}
}

var rigAgent = lludp.AgentData{AgentID: lludp.UUID{7}, SessionID: lludp.UUID{8}}

// up sends a message from the viewer and returns it as the simulator got
// it, and the endpoint it came from.
func (r *proxyRig) up(t *testing.T, m lludp.Typed, flags lludp.Flags) (sent, got []byte, from netip.AddrPort) {
	t.Helper()
	r.seq++
	sent, err := lludp.AppendMessage(nil, lludp.Header{Flags: flags, Sequence: r.seq}, m, []uint32{r.seq + 100})
	if err != nil {
		t.Fatal(err)
	}
	return sent, r.upRaw(t, sent), r.lastFrom
}

func (r *proxyRig) upRaw(t *testing.T, b []byte) []byte {
	t.Helper()
	if _, err := r.viewer.WriteToUDPAddrPort(b, r.simAt); err != nil {
		t.Fatal(err)
	}
	return r.read(t)
}

func (r *proxyRig) read(t *testing.T) []byte {
	t.Helper()
	buf := make([]byte, 2048)
	n, from, err := r.sim.ReadFromUDPAddrPort(buf)
	if err != nil {
		t.Fatalf("simulator: %v", err)
	}
	r.lastFrom = from
	return buf[:n]
}

// TestProxyRewrite: before fairgrid's first decision the viewer's
// AgentThrottle passes unchanged; after it, its throttles are fairgrid's
// and everything else (sequence, flags, acks) is the viewer's; an
// AgentThrottle that does not decode passes unchanged and is counted; the
// proxy's own requests leave from the relay endpoint the circuit is keyed
// by.
func TestProxyRewrite(t *testing.T) {
	r := newProxyRig(t, 100*time.Millisecond)
	throttleMsg := &lludp.AgentThrottle{AgentData: rigAgent, CircuitCode: 9, Throttles: lludp.ViewerSplit(1_536_000)}

	sent, got, _ := r.up(t, throttleMsg, lludp.FlagReliable|lludp.FlagZeroCoded)
	if !bytes.Equal(sent, got) || r.p.beforeDecision.Load() != 1 {
		t.Fatalf("before any decision: relayed %x, sent %x; %d counted before the decision", got, sent, r.p.beforeDecision.Load())
	}

	// A circuit fairgrid believes: logged in, identity seen, answered.
	r.up(t, &lludp.UseCircuitCode{Code: 9, SessionID: rigAgent.SessionID, AgentID: rigAgent.AgentID}, lludp.FlagReliable)
	for range throttle.IdentityDatagrams {
		r.up(t, &lludp.AgentUpdate{AgentData: rigAgent, Far: 64}, 0)
	}
	ack, _ := lludp.AppendMessage(nil, lludp.Header{Sequence: 1}, &lludp.PacketAck{IDs: []uint32{1}}, nil)
	if _, err := r.sim.WriteToUDPAddrPort(ack, r.lastFrom); err != nil {
		t.Fatal(err)
	}
	// The proxy's first request arrives at the simulator from the relay.
	var req lludp.Packet
	for {
		b := r.read(t)
		if req.DecodeFromBytes(b) == nil && req.ID == lludp.AgentThrottleID {
			break
		}
	}
	relayEP := r.lastFrom
	key := circuit.Key{Viewer: relayEP, Sim: r.simAt}
	want, ok := r.loop.Request(key)
	if !ok {
		t.Fatalf("no request for %v, the endpoint the simulator saw", key)
	}

	sent, got, from := r.up(t, throttleMsg, lludp.FlagReliable|lludp.FlagZeroCoded)
	// The loop decides every 100 ms: one may fall between the two reads.
	after, _ := r.loop.Request(key)
	var in, out lludp.Packet
	var inM, outM lludp.AgentThrottle
	if err := errors.Join(in.DecodeFromBytes(sent), in.Unmarshal(&inM), out.DecodeFromBytes(got), out.Unmarshal(&outM)); err != nil {
		t.Fatal(err)
	}
	if from != relayEP {
		t.Errorf("the rewritten AgentThrottle came from %v, the requests from %v", from, relayEP)
	}
	if outM.Throttles != want.Throttles && outM.Throttles != after.Throttles || outM.AgentData != inM.AgentData || outM.CircuitCode != inM.CircuitCode {
		t.Errorf("rewritten: %+v, want the viewer's with throttles %v", outM, want.Throttles)
	}
	if out.Sequence != in.Sequence || out.Flags&^lludp.FlagZeroCoded != in.Flags&^lludp.FlagZeroCoded || out.Acks.Len() != 1 || out.Acks.At(0) != in.Acks.At(0) {
		t.Errorf("header: sequence %d flags %v acks %d, want %d %v %d", out.Sequence, out.Flags, out.Acks.Len(), in.Sequence, in.Flags, in.Acks.At(0))
	}
	if r.p.rewritten.Load() != 1 {
		t.Errorf("%d counted as rewritten, want 1", r.p.rewritten.Load())
	}

	// An AgentThrottle cut short: relayed as it came, counted.
	short := sent[:len(sent)-8]
	if got := r.upRaw(t, short); !bytes.Equal(got, short) || r.p.malformed.Load() != 1 {
		t.Errorf("truncated AgentThrottle: relayed %x, sent %x; %d counted", got, short, r.p.malformed.Load())
	}

	// The association ends: its circuit leaves the loop at once, so
	// nothing more is decided or sent in the departed viewer's name.
	r.p.mu.Lock()
	a := r.p.byViewer[relayEP]
	r.p.mu.Unlock()
	if a == nil {
		t.Fatalf("no association for %v", relayEP)
	}
	r.p.associationClosed(a)
	if _, ok := r.loop.Request(key); ok || slices.Contains(r.loop.Keys(), key) {
		t.Errorf("circuit %v still in the loop after its association closed: %v", key, r.loop.Keys())
	}
}

// TestProxySendWithoutAssociation: a request for a circuit whose viewer has
// left is an error naming why, not a send from nowhere.
func TestProxySendWithoutAssociation(t *testing.T) {
	r := newProxyRig(t, time.Second)
	k := circuit.Key{Viewer: netip.MustParseAddrPort("127.0.0.1:1"), Sim: r.simAt}
	err := r.p.Send(context.Background(), throttle.Request{Circuit: k, Total: 100_000})
	if !errors.Is(err, ErrNoAssociation) || !strings.Contains(err.Error(), k.String()) {
		t.Errorf("got %v", err)
	}
}

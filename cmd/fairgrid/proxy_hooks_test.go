package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/capture/circuit"
	"github.com/fairgrid/fairgrid/configs"
	"github.com/fairgrid/fairgrid/internal/socks5"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/fairgrid/fairgrid/throttle"
)

// proxyRig is a proxy on loopback with a viewer's association and a
// simulator's socket.
type proxyRig struct {
	p      *proxy
	viewer *socks5.UDPConn
	sim    *net.UDPConn
	simAt  netip.AddrPort
	seq    uint32
	// lastFrom is the source of the last datagram the simulator read.
	lastFrom netip.AddrPort
}

func newProxyRig(t *testing.T, interval time.Duration) *proxyRig {
	t.Helper()
	f := configs.Default()
	f.Control.Interval.Duration = interval
	f.Metrics.Address = ""
	log := slog.New(slog.DiscardHandler)
	d, err := newDaemon(f, log, new(slog.LevelVar))
	if err != nil {
		t.Fatal(err)
	}
	p, err := newProxy(d.loop, socks5.Config{}, throttle.SidecarConfig{Log: log}, false, log)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := p.run(ctx, ln); err != nil {
			t.Errorf("proxy: %v", err)
		}
	})
	sim, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	v, err := socks5.DialUDP(context.Background(), ln.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close(); sim.Close(); cancel(); wg.Wait() })
	sim.SetReadDeadline(time.Now().Add(10 * time.Second))
	return &proxyRig{p: p, viewer: v, sim: sim, simAt: sim.LocalAddr().(*net.UDPAddr).AddrPort()}
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
	want, ok := r.p.loop.Request(key)
	if !ok {
		t.Fatalf("no request for %v, the endpoint the simulator saw", key)
	}

	sent, got, from := r.up(t, throttleMsg, lludp.FlagReliable|lludp.FlagZeroCoded)
	// The loop decides every 100 ms: one may fall between the two reads.
	after, _ := r.p.loop.Request(key)
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
	r.p.AssociationClosed(a)
	if _, ok := r.p.loop.Request(key); ok || slices.Contains(r.p.loop.Keys(), key) {
		t.Errorf("circuit %v still in the loop after its association closed: %v", key, r.p.loop.Keys())
	}
}

// TestProxySendWithoutAssociation: a request for a circuit whose viewer has
// left is an error naming why, not a send from nowhere.
func TestProxySendWithoutAssociation(t *testing.T) {
	r := newProxyRig(t, time.Second)
	k := circuit.Key{Viewer: netip.MustParseAddrPort("127.0.0.1:1"), Sim: r.simAt}
	err := r.p.Send(context.Background(), throttle.Request{Circuit: k, Total: 100_000})
	if !errors.Is(err, errNoAssociation) || !strings.Contains(err.Error(), k.String()) {
		t.Errorf("got %v", err)
	}
}

// TestProxyMetrics: one registry holds the loop's, the server's and the
// rewrite's metrics.
func TestProxyMetrics(t *testing.T) {
	r := newProxyRig(t, time.Second)
	d, err := newDaemon(configs.Default(), slog.New(slog.DiscardHandler), new(slog.LevelVar))
	if err != nil {
		t.Fatal(err)
	}
	mfs, err := r.p.registry(d.metrics).Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, want := range []string{"fairgrid_proxy_agent_throttles_total", "fairgrid_proxy_unmeasured_datagrams_total",
		"fairgrid_proxy_associations", "fairgrid_proxy_relayed_datagrams_total", "process_resident_memory_bytes"} {
		if !names[want] {
			t.Errorf("no %s among %d metrics", want, len(names))
		}
	}
}

// TestBatchSource: datagrams come out in the order pushed; a full buffer
// drops and counts; after Close, Push refuses and Next drains what was
// queued, then says the source is closed.
func TestBatchSource(t *testing.T) {
	s := newBatchSource(3, proxyBufferBytes)
	at := time.Unix(1, 0)
	for i := range 5 {
		ok := s.Push(capture.Datagram{At: at.Add(time.Duration(i)), Payload: []byte{byte(i)}})
		if ok != (i < 3) {
			t.Errorf("push %d: %v", i, ok)
		}
	}
	if s.Dropped() != 2 {
		t.Errorf("dropped %d, want 2", s.Dropped())
	}
	for i := range 2 {
		d, err := s.Next()
		if err != nil || d.Payload[0] != byte(i) {
			t.Fatalf("next %d: %v %v", i, d.Payload, err)
		}
	}
	// Room again while one is still in the reader's batch.
	if !s.Push(capture.Datagram{Payload: []byte{9}}) {
		t.Error("push after a read refused")
	}
	s.Close()
	if s.Push(capture.Datagram{Payload: []byte{10}}) || s.Dropped() != 2 {
		t.Errorf("push after close accepted or counted as dropped (%d)", s.Dropped())
	}
	for _, want := range []byte{2, 9} {
		if d, err := s.Next(); err != nil || d.Payload[0] != want {
			t.Fatalf("draining: %v %v, want %d", d.Payload, err, want)
		}
	}
	if _, err := s.Next(); !errors.Is(err, throttle.ErrSourceClosed) {
		t.Errorf("after draining: %v", err)
	}
}

// TestBatchSourceCloseWakesReader: a Next waiting for datagrams returns
// when the source closes.
func TestBatchSourceCloseWakesReader(t *testing.T) {
	s := newBatchSource(8, proxyBufferBytes)
	done := make(chan error)
	go func() { _, err := s.Next(); done <- err }()
	s.Close()
	if err := <-done; !errors.Is(err, throttle.ErrSourceClosed) {
		t.Errorf("got %v", err)
	}
}

// TestBatchSourceHalfFullWakesReader: a reader letting datagrams gather
// takes them as soon as half the buffer is queued, not batchEvery later,
// so a relay at full rate does not overflow it; below half it waits the
// whole batchEvery (virtual time).
func TestBatchSourceHalfFullWakesReader(t *testing.T) {
	const limit = 64
	for _, tc := range []struct {
		name   string
		pushed int
		want   time.Duration
	}{
		{"below half", limit/2 - 1, batchEvery},
		{"half", limit / 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newBatchSource(limit, proxyBufferBytes)
				defer s.Close()
				s.Push(capture.Datagram{Payload: []byte{0}})
				if _, err := s.Next(); err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				got := make(chan time.Duration)
				go func() {
					// The batch is read: Next lets the next one gather.
					if _, err := s.Next(); err != nil {
						t.Error(err)
					}
					got <- time.Since(start)
				}()
				synctest.Wait()
				for i := range tc.pushed {
					s.Push(capture.Datagram{Payload: []byte{byte(i)}})
				}
				if d := <-got; d != tc.want {
					t.Errorf("Next returned after %v, want %v", d, tc.want)
				}
			})
		})
	}
}

// TestViewerCommandThroughProxy: `fairgrid viewer --socks5` logs in to a
// region through the proxy (exit 0 means it did), with and without
// username/password; a wrong password fails with exit 1.
func TestViewerCommandThroughProxy(t *testing.T) {
	auth := &socks5.Auth{Username: "viewer", Password: "secret"}
	for _, tc := range []struct {
		name   string
		server *socks5.Auth
		flags  []string
		code   int
		want   string
	}{
		{"no auth", nil, nil, exitOK, "received"},
		{"auth", auth, []string{"--socks5-user", "viewer", "--socks5-pass", "secret"}, exitOK, "received"},
		{"wrong password", auth, []string{"--socks5-user", "viewer", "--socks5-pass", "guess"}, exitFail, "socks5"},
	} {
		// Not parallel: circuit.NewTracker races with itself (fastBodies
		// encodes shared values), and each run builds two.
		t.Run(tc.name, func(t *testing.T) {
			log := slog.New(slog.DiscardHandler)
			sim, err := region.New(region.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Activity: region.Walking}, log)
			if err != nil {
				t.Fatal(err)
			}
			d, err := newDaemon(configs.Default(), log, new(slog.LevelVar))
			if err != nil {
				t.Fatal(err)
			}
			p, err := newProxy(d.loop, socks5.Config{Auth: tc.server}, throttle.SidecarConfig{Log: log}, false, log)
			if err != nil {
				t.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Go(func() { sim.Run(ctx) })
			wg.Go(func() { p.run(ctx, ln) })
			args := append([]string{"viewer", "--sim", sim.Addr().String(), "--socks5", ln.Addr().String(), "--duration", "1s"}, tc.flags...)
			code, out, errOut := runCmd(t, "", args...)
			cancel()
			wg.Wait()
			if code != tc.code || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d with %q", code, out, errOut, tc.code, tc.want)
			}
		})
	}
}

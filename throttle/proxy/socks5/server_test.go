package socks5

import (
	"bytes"
	"context"
	"errors"
	"github.com/fairgrid/fairgrid/lludp"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// testServer runs a server on a loopback port for the test's duration and
// checks that Serve returns cleanly when the test ends.
type testServer struct {
	*Server
	addr string
}

func startServer(t testing.TB, cfg Config) *testServer {
	t.Helper()
	return startServerOn(t, cfg, "127.0.0.1:0", slog.New(slog.DiscardHandler))
}

// startServerOn is startServer listening on listen, logging to log.
func startServerOn(t testing.TB, cfg Config, listen string, log *slog.Logger) *testServer {
	t.Helper()
	if cfg.UDPPorts == nil {
		// The tests' peers listen on ephemeral ports; TestUDPPorts tests
		// the default, the simulator ports.
		cfg.UDPPorts = everyPort
	}
	srv, err := New(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return &testServer{srv, ln.Addr().String()}
}

// everyPort lets the UDP relay send to any port.
var everyPort = lludp.Ports{{Lo: 1, Hi: 65535}}

// ioDeadline bounds every wait of these tests; reaching it is a failure.
const ioDeadline = 5 * time.Second

// closedPort returns a loopback TCP port nothing listens on.
func closedPort(t *testing.T) uint16 {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := addrPortOf(ln.Addr()).Port()
	ln.Close()
	return port
}

func reqBytes(cmd, atyp byte, addr []byte, port uint16) []byte {
	b := append([]byte{version5, cmd, 0, atyp}, addr...)
	return append(b, byte(port>>8), byte(port))
}

// TestBadInput sends each bad input of issue #12 over a real TCP connection
// and expects the RFC's reply, then a closed connection, and the refusal
// counted under its cause.
func TestBadInput(t *testing.T) {
	creds := &Auth{Username: "viewer", Password: "secret"}
	noAuth := []byte{version5, methodNoAuth}
	failReply := func(rep byte) []byte { return appendReply(nil, rep, Addr{}) }
	dead := closedPort(t)
	long := bytes.Repeat([]byte("a"), 254)
	cases := []struct {
		name    string
		auth    *Auth
		send    []byte
		hangUp  bool // close the write side after sending
		want    []byte
		cause   RefusalCause
		timeout time.Duration
	}{
		{name: "http garbage", send: []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), cause: RefusedBadVersion},
		{name: "socks4 request", send: []byte{4, 1, 0, 80, 127, 0, 0, 1, 0}, cause: RefusedBadVersion},
		{name: "empty method list", send: []byte{5, 0}, want: []byte{5, 0xFF}, cause: RefusedNoMethod},
		{name: "truncated greeting", send: []byte{5, 3, 0}, hangUp: true, cause: RefusedMalformed},
		{name: "stalled greeting", send: []byte{5, 3, 0}, cause: RefusedHandshakeTimeout, timeout: 50 * time.Millisecond},
		{name: "silent client", cause: RefusedHandshakeTimeout, timeout: 50 * time.Millisecond},
		{name: "only username/password offered to open server", send: []byte{5, 1, 2}, want: []byte{5, 0xFF}, cause: RefusedNoMethod},
		{name: "no auth offered to server with credentials", auth: creds, send: []byte{5, 1, 0}, want: []byte{5, 0xFF}, cause: RefusedNoMethod},
		{name: "wrong password", auth: creds, send: append([]byte{5, 1, 2, 1, 6}, "viewer\x05wrong"...), want: []byte{5, 2, 1, 1}, cause: RefusedAuthFailed},
		{name: "wrong username", auth: creds, send: append([]byte{5, 1, 2, 1, 5}, "admin\x06secret"...), want: []byte{5, 2, 1, 1}, cause: RefusedAuthFailed},
		{name: "auth sub-negotiation version", auth: creds, send: append([]byte{5, 1, 2, 5, 6}, "viewer\x06secret"...), want: []byte{5, 2, 1, 1}, cause: RefusedMalformed},
		{name: "truncated credentials", auth: creds, send: append([]byte{5, 1, 2, 1, 6}, "vie"...), hangUp: true, want: []byte{5, 2}, cause: RefusedMalformed},
		{name: "request version", send: append([]byte{5, 1, 0}, append([]byte{4}, reqBytes(cmdConnect, atypIPv4, []byte{127, 0, 0, 1}, 80)[1:]...)...), want: append(noAuth, failReply(repGeneralFailure)...), cause: RefusedBadVersion},
		{name: "BIND", send: append([]byte{5, 1, 0}, reqBytes(cmdBind, atypIPv4, []byte{127, 0, 0, 1}, 80)...), want: append(noAuth, failReply(repCommandNotSupported)...), cause: RefusedCommand},
		{name: "unknown command", send: append([]byte{5, 1, 0}, reqBytes(9, atypIPv4, []byte{127, 0, 0, 1}, 80)...), want: append(noAuth, failReply(repCommandNotSupported)...), cause: RefusedCommand},
		{name: "unknown address type", send: append([]byte{5, 1, 0}, reqBytes(cmdConnect, 5, []byte{127, 0, 0, 1}, 80)...), want: append(noAuth, failReply(repAddrTypeNotSupport)...), cause: RefusedAddressType},
		{name: "reserved octet set", send: append([]byte{5, 1, 0}, 5, 1, 1, 1, 127, 0, 0, 1, 0, 80), want: append(noAuth, failReply(repGeneralFailure)...), cause: RefusedMalformed},
		{name: "over-long domain", send: append([]byte{5, 1, 0}, reqBytes(cmdConnect, atypDomain, append([]byte{254}, long...), 80)...), want: append(noAuth, failReply(repGeneralFailure)...), cause: RefusedMalformed},
		{name: "empty domain", send: append([]byte{5, 1, 0}, reqBytes(cmdConnect, atypDomain, []byte{0}, 80)...), want: append(noAuth, failReply(repGeneralFailure)...), cause: RefusedMalformed},
		{name: "NUL in domain", send: append([]byte{5, 1, 0}, reqBytes(cmdConnect, atypDomain, []byte("\x09local\x00host"), 80)...), want: append(noAuth, failReply(repGeneralFailure)...), cause: RefusedMalformed},
		{name: "truncated request", send: append([]byte{5, 1, 0}, 5, 1, 0, 1, 127, 0), hangUp: true, want: noAuth, cause: RefusedMalformed},
		{name: "truncated domain", send: append([]byte{5, 1, 0}, 5, 1, 0, 3, 200, 'a', 'b'), hangUp: true, want: noAuth, cause: RefusedMalformed},
		{name: "port not allowed", send: append([]byte{5, 1, 0}, reqBytes(cmdConnect, atypIPv4, []byte{127, 0, 0, 1}, 22)...), want: append(noAuth, failReply(repNotAllowed)...), cause: RefusedPort},
		{name: "connection refused", send: append([]byte{5, 1, 0}, reqBytes(cmdConnect, atypIPv4, []byte{127, 0, 0, 1}, dead)...), want: append(noAuth, failReply(repConnectionRefused)...), cause: RefusedDialFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := startServer(t, Config{
				Auth:             tc.auth,
				AllowedPorts:     append(lludp.Ports{{Lo: dead, Hi: dead}}, DefaultAllowedPorts...),
				HandshakeTimeout: tc.timeout,
			})
			conn, err := net.Dial("tcp", srv.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(ioDeadline))
			if _, err := conn.Write(tc.send); err != nil {
				t.Fatal(err)
			}
			if tc.hangUp {
				conn.(*net.TCPConn).CloseWrite()
			}
			got, err := io.ReadAll(conn)
			if err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err) {
				t.Fatalf("reading until close: %v (got %x)", err, got)
			}
			if !bytes.Equal(got, tc.want) {
				t.Errorf("reply %x, want %x then close", got, tc.want)
			}
			for c := range numRefusalCauses {
				want := uint64(0)
				if c == tc.cause {
					want = 1
				}
				if n := srv.Refused(c); n != want {
					t.Errorf("refused[%s] = %d, want %d", c, n, want)
				}
			}
		})
	}
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

// recorder is a Hooks that keeps what it saw and can rewrite payloads.
type recorder struct {
	mu      sync.Mutex
	rewrite func([]byte) []byte
	client  [][]byte
	remote  [][]byte
	times   []time.Time
	assocs  []*Association
	closed  chan *Association
	remotes []netip.AddrPort
}

func newRecorder() *recorder { return &recorder{closed: make(chan *Association, 16)} }

func (r *recorder) ClientDatagrams(a *Association, batch []Datagram) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, d := range batch {
		r.client = append(r.client, bytes.Clone(d.Payload))
		r.times = append(r.times, d.At)
		r.assocs = append(r.assocs, a)
		r.remotes = append(r.remotes, d.Remote)
		if r.rewrite != nil {
			batch[i].Payload = r.rewrite(d.Payload)
		}
	}
}

func (r *recorder) RemoteDatagrams(a *Association, batch []Datagram) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range batch {
		r.remote = append(r.remote, bytes.Clone(d.Payload))
		r.times = append(r.times, d.At)
	}
}

func (r *recorder) AssociationClosed(a *Association) { r.closed <- a }

// udpPeer is a plain UDP socket on loopback standing in for a simulator.
func udpPeer(t *testing.T) *net.UDPConn {
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	pc.SetDeadline(time.Now().Add(ioDeadline))
	return pc
}

func readOne(t *testing.T, pc *net.UDPConn) ([]byte, netip.AddrPort) {
	t.Helper()
	buf := make([]byte, 2048)
	n, from, err := pc.ReadFromUDPAddrPort(buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n], netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
}

func dialUDP(t *testing.T, srv *testServer, auth *Auth) *UDPConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ioDeadline)
	defer cancel()
	c, err := DialUDP(ctx, srv.addr, auth)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(ioDeadline))
	return c
}

// TestBadDatagrams sends each bad client datagram, then a good one, and
// expects only the good one at the remote host and the bad one counted: the
// relay handles one socket's datagrams in order, so the good one's arrival
// proves the bad one was dealt with.
func TestBadDatagrams(t *testing.T) {
	sim := udpPeer(t)
	simAddr := addrPortOf(sim.LocalAddr())
	good := func() []byte {
		b := make([]byte, udpHeaderIPv4)
		putUDPHeader(b, simAddr)
		return append(b, "good"...)
	}
	cases := []struct {
		name    string
		dgram   []byte
		foreign bool
		cause   DropCause
	}{
		{name: "empty", dgram: []byte{}, cause: DroppedShortHeader},
		{name: "three bytes", dgram: []byte{0, 0, 0}, cause: DroppedShortHeader},
		{name: "truncated IPv4 header", dgram: good()[:8], cause: DroppedShortHeader},
		{name: "truncated IPv6 header", dgram: []byte{0, 0, 0, atypIPv6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, cause: DroppedShortHeader},
		{name: "truncated domain", dgram: []byte{0, 0, 0, atypDomain, 9, 'l', 'o'}, cause: DroppedShortHeader},
		{name: "unknown ATYP", dgram: append([]byte{0, 0, 0, 7}, good()[4:]...), cause: DroppedAddressType},
		{name: "zero ATYP", dgram: append([]byte{0, 0, 0, 0}, good()[4:]...), cause: DroppedAddressType},
		{name: "empty domain", dgram: []byte{0, 0, 0, atypDomain, 0, 0, 80, 'x'}, cause: DroppedAddressType},
		{name: "fragment 1", dgram: append([]byte{0, 0, 1}, good()[3:]...), cause: DroppedFragment},
		{name: "last fragment", dgram: append([]byte{0, 0, 0x81}, good()[3:]...), cause: DroppedFragment},
		{name: "foreign source", dgram: good(), foreign: true, cause: DroppedForeignSource},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := startServer(t, Config{})
			c := dialUDP(t, srv, nil)
			from := c.pc
			if tc.foreign {
				from = udpPeer(t)
			}
			if _, err := from.WriteToUDPAddrPort(tc.dgram, c.relay); err != nil {
				t.Fatal(err)
			}
			if _, err := c.WriteToUDPAddrPort([]byte("good"), simAddr); err != nil {
				t.Fatal(err)
			}
			got, _ := readOne(t, sim)
			if string(got) != "good" {
				t.Fatalf("remote got %q first, want the good datagram", got)
			}
			for d := range numDropCauses {
				want := uint64(0)
				if d == tc.cause {
					want = 1
				}
				if n := srv.Dropped(d); n != want {
					t.Errorf("dropped[%s] = %d, want %d", d, n, want)
				}
			}
		})
	}
}

// TestRelay covers the UDP path both ways: one stable relay endpoint for
// relayed and injected datagrams, hook rewrite and timestamps, remote
// garbage relayed byte for byte, domain destinations, and the association
// ending with its control connection.
func TestRelay(t *testing.T) {
	for _, auth := range []*Auth{nil, {Username: "u", Password: "p"}} {
		t.Run(map[bool]string{true: "no auth", false: "username/password"}[auth == nil], func(t *testing.T) {
			rec := newRecorder()
			rec.rewrite = func(p []byte) []byte {
				switch {
				case bytes.HasPrefix(p, []byte("throttle")):
					return []byte("REPLACED")
				case bytes.HasPrefix(p, []byte("drop")):
					return nil
				}
				return p
			}
			clock := time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC)
			srv := startServer(t, Config{Auth: auth, Hooks: rec, Now: func() time.Time { return clock }})
			sim := udpPeer(t)
			simAddr := addrPortOf(sim.LocalAddr())
			c := dialUDP(t, srv, auth)

			c.WriteToUDPAddrPort([]byte("hello"), simAddr)
			got, relayFrom := readOne(t, sim)
			if string(got) != "hello" {
				t.Fatalf("sim got %q, want hello", got)
			}
			c.WriteToUDPAddrPort([]byte("throttle 1500"), simAddr)
			if got, from := readOne(t, sim); string(got) != "REPLACED" || from != relayFrom {
				t.Fatalf("sim got %q from %v, want REPLACED from %v", got, from, relayFrom)
			}
			c.WriteToUDPAddrPort([]byte("drop me"), simAddr)
			c.WriteToUDPAddrPort([]byte("after"), simAddr)
			if got, _ := readOne(t, sim); string(got) != "after" {
				t.Fatalf("sim got %q, want the datagram after the one the hook dropped", got)
			}
			if n := srv.Dropped(DroppedByHook); n != 1 {
				t.Errorf("hook drops %d, want 1", n)
			}
			// A domain destination is resolved by the proxy.
			name := make([]byte, 0, 32)
			name = append(name, 0, 0, 0)
			name = appendAddr(name, Addr{Name: "localhost", Port: simAddr.Port()})
			c.pc.WriteToUDPAddrPort(append(name, "by name"...), c.relay)
			if got, from := readOne(t, sim); string(got) != "by name" || from.Port() != relayFrom.Port() {
				t.Fatalf("sim got %q from %v, want 'by name' from port %d", got, from, relayFrom.Port())
			}

			rec.mu.Lock()
			a := rec.assocs[0]
			rec.mu.Unlock()
			if a.RelayAddr().Port() != relayFrom.Port() {
				t.Errorf("RelayAddr %v, sim saw %v", a.RelayAddr(), relayFrom)
			}
			if local := addrPortOf(c.LocalAddr()); a.ClientAddr() != local {
				t.Errorf("ClientAddr %v, want %v", a.ClientAddr(), local)
			}
			if err := a.WriteTo([]byte("own request"), simAddr); err != nil {
				t.Fatal(err)
			}
			if got, from := readOne(t, sim); string(got) != "own request" || from != relayFrom {
				t.Fatalf("sim got %q from %v, want the injected datagram from %v", got, from, relayFrom)
			}

			garbage := []byte{0xff, 0x00, 0x13, 0x37, 0, 0, 0, 0, 0xde, 0xad}
			for _, p := range [][]byte{garbage, {}, []byte("reply")} {
				if _, err := sim.WriteToUDPAddrPort(p, relayFrom); err != nil {
					t.Fatal(err)
				}
				buf := make([]byte, 64)
				n, from, err := c.ReadFromUDPAddrPort(buf)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(buf[:n], p) || from != simAddr {
					t.Errorf("client got %x from %v, want %x from %v", buf[:n], from, p, simAddr)
				}
			}
			rec.mu.Lock()
			if len(rec.client) != 5 || string(rec.client[1]) != "throttle 1500" || rec.remotes[4] != simAddr {
				t.Errorf("client hook saw %q to %v", rec.client, rec.remotes)
			}
			if len(rec.remote) != 3 || !bytes.Equal(rec.remote[0], garbage) {
				t.Errorf("remote hook saw %x", rec.remote)
			}
			for _, at := range rec.times {
				if !at.Equal(clock) {
					t.Errorf("hook time %v, want the clock's %v", at, clock)
				}
			}
			rec.mu.Unlock()
			if n := srv.stats.datagrams[dirRemoteToClient].Load(); n != 3 {
				t.Errorf("relayed remote->client %d, want 3", n)
			}
			if n := srv.stats.datagrams[dirInjected].Load(); n != 1 {
				t.Errorf("injected %d, want 1", n)
			}

			c.Close()
			select {
			case closed := <-rec.closed:
				if closed != a {
					t.Errorf("closed association %d, want %d", closed.ID(), a.ID())
				}
			case <-time.After(ioDeadline):
				t.Fatal("association did not end with its control connection")
			}
			<-a.Done()
			if err := a.WriteTo([]byte("late"), simAddr); err == nil {
				t.Error("WriteTo after the association ended succeeded")
			}
			if n := srv.stats.associations.Load(); n != 0 {
				t.Errorf("%d associations open after close", n)
			}
		})
	}
}

// TestClientPortLearned covers a client that declares port 0: the first
// datagram fixes its port, and a later one from another port is foreign.
func TestClientPortLearned(t *testing.T) {
	srv := startServer(t, Config{})
	sim := udpPeer(t)
	simAddr := addrPortOf(sim.LocalAddr())
	ctrl, err := net.Dial("tcp", srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ctrl.Close()
	ctrl.SetDeadline(time.Now().Add(ioDeadline))
	ctrl.Write(append([]byte{5, 1, 0}, reqBytes(cmdUDPAssociate, atypIPv4, []byte{0, 0, 0, 0}, 0)...))
	reply := make([]byte, 2+10)
	if _, err := io.ReadFull(ctrl, reply); err != nil {
		t.Fatal(err)
	}
	if reply[3] != repSucceeded {
		t.Fatalf("reply %x", reply)
	}
	relay := netip.AddrPortFrom(netip.AddrFrom4([4]byte(reply[6:10])), uint16(reply[10])<<8|uint16(reply[11]))
	first, second := udpPeer(t), udpPeer(t)
	hdr := make([]byte, udpHeaderIPv4)
	putUDPHeader(hdr, simAddr)
	first.WriteToUDPAddrPort(append(hdr, "first"...), relay)
	second.WriteToUDPAddrPort(append(hdr, "second"...), relay)
	first.WriteToUDPAddrPort(append(hdr, "third"...), relay)
	for _, want := range []string{"first", "third"} {
		if got, _ := readOne(t, sim); string(got) != want {
			t.Fatalf("sim got %q, want %q", got, want)
		}
	}
	if n := srv.Dropped(DroppedForeignSource); n != 1 {
		t.Errorf("foreign drops %d, want 1", n)
	}
}

func TestLimits(t *testing.T) {
	rec := newRecorder()
	holder, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	port := addrPortOf(holder.Addr()).Port()
	srv := startServer(t, Config{
		MaxAssociationsPerClient: 1, MaxConnectsPerClient: 1, Hooks: rec,
		AllowedPorts: lludp.Ports{{Lo: port, Hi: port}},
	})
	ended := endings(srv.Server)
	ctx, cancel := context.WithTimeout(context.Background(), ioDeadline)
	defer cancel()

	first, err := DialUDP(ctx, srv.addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DialUDP(ctx, srv.addr, nil); !errors.Is(err, ErrRefused) {
		t.Fatalf("second association: %v, want refused", err)
	}
	first.Close()
	<-rec.closed
	// The hook runs when the association's sockets are closed, before its
	// slot is released: wait for the release, or the next may be refused.
	awaitEnd(t, ended, "the first association's session")
	third, err := DialUDP(ctx, srv.addr, nil)
	if err != nil {
		t.Fatalf("association after the first closed: %v", err)
	}
	third.Close()

	d := Dialer{ProxyAddr: srv.addr}
	conn, err := d.DialContext(ctx, "tcp", holder.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := d.DialContext(ctx, "tcp", holder.Addr().String()); !errors.Is(err, ErrRefused) {
		t.Fatalf("second connect: %v, want refused", err)
	}
	if srv.Refused(RefusedAssociationLimit) != 1 || srv.Refused(RefusedConnectLimit) != 1 {
		t.Errorf("refused: association limit %d, connect limit %d, want 1 each",
			srv.Refused(RefusedAssociationLimit), srv.Refused(RefusedConnectLimit))
	}
}

// TestServeStops checks that ending Serve's context ends open sessions.
func TestServeStops(t *testing.T) {
	srv, err := New(Config{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	dctx, dcancel := context.WithTimeout(context.Background(), ioDeadline)
	defer dcancel()
	c, err := DialUDP(dctx, ln.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	idle, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	for _, conn := range []net.Conn{c.ctrl, idle} {
		conn.SetDeadline(time.Now().Add(ioDeadline))
		if _, err := conn.Read(make([]byte, 1)); err == nil || errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			t.Errorf("session still open after Serve returned: %v", err)
		}
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("listener still accepts after Serve returned")
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestCheckListen(t *testing.T) {
	creds := &Auth{Username: "u", Password: "p"}
	cases := []struct {
		listen string
		auth   *Auth
		ok     bool
	}{
		{"127.0.0.1:1080", nil, true},
		{"[::1]:1080", nil, true},
		{"localhost:1080", nil, true},
		{"127.1.2.3:1080", nil, true},
		{"0.0.0.0:1080", nil, false},
		{":1080", nil, false},
		{"[::]:1080", nil, false},
		{"192.0.2.7:1080", nil, false},
		{"proxy.example:1080", nil, false},
		{"0.0.0.0:1080", creds, true},
		{"192.0.2.7:1080", creds, true},
		{"0.0.0.0:1080", &Auth{Username: "u"}, false},
		{"127.0.0.1:1080", &Auth{Password: "p"}, false},
		{"127.0.0.1", nil, false},
	}
	for _, tc := range cases {
		resolved, err := CheckListen(tc.listen, tc.auth)
		if err == nil && tc.listen == "localhost:1080" && resolved != "127.0.0.1:1080" && resolved != "[::1]:1080" {
			t.Errorf("CheckListen(%q) resolved to %q, want a loopback literal", tc.listen, resolved)
		}
		if (err == nil) != tc.ok {
			t.Errorf("CheckListen(%q, %v) = %v, want ok=%v", tc.listen, tc.auth, err, tc.ok)
		}
	}
}

func TestNewRejects(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	for _, cfg := range []Config{
		{Auth: &Auth{Username: strings.Repeat("u", 256), Password: "p"}},
		{AllowedPorts: lludp.Ports{{Lo: 100, Hi: 99}}},
		{MaxConnectsPerClient: -1},
		{HandshakeTimeout: -time.Second},
	} {
		if _, err := New(cfg, log); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

// TestCheckCredential: the one RFC 1929 check, as the server and the
// client apply it to their Auth.
func TestCheckCredential(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want string
	}{{"viewer", ""}, {strings.Repeat("u", MaxCredential), ""}, {"", "empty"}, {strings.Repeat("u", 256), "256 bytes: at most 255 bytes (RFC 1929)"}} {
		err := CheckCredential(tc.v)
		if (err == nil) != (tc.want == "") || err != nil && err.Error() != tc.want {
			t.Errorf("%d bytes: %v; want %q", len(tc.v), err, tc.want)
		}
	}
	if err := (&Auth{Username: "viewer"}).validate(); err == nil || err.Error() != "socks5: password: empty" {
		t.Errorf("no password: %v", err)
	}
}

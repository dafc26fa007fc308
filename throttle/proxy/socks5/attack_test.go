package socks5

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/fakenet"
	"github.com/fairgrid/fairgrid/lludp"
)

// The tests of issue #24: each reproduces an attack on the proxy that
// succeeded before (a slot held forever, caps one process could take,
// CONNECT to the host's own services, unlimited guessing, a dial that
// outlived the handshake, UDP to any port) and shows it fails now.

// endings returns a channel that receives a value each time a session of
// srv ends and has released its slot.
func endings(srv *Server) <-chan struct{} {
	ch := make(chan struct{}, 64)
	f := func() { ch <- struct{}{} }
	srv.sessionEnded.Store(&f)
	return ch
}

// awaitEnd waits for a session to end, at most ioDeadline.
func awaitEnd(t *testing.T, ended <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ended:
	case <-time.After(ioDeadline):
		t.Fatalf("after %v: %s", ioDeadline, what)
	}
}

// TestSilentRemoteFreesSlot (issue #24, item 1): a client CONNECTs to a
// remote that never answers and closes; the proxy gives the remote
// HalfCloseTimeout of silence, then ends the session, and the address's
// one CONNECT slot comes back. An association that relays nothing ends at
// IdleTimeout. Before, both were held until the remote (or the client's
// control connection) closed.
func TestSilentRemoteFreesSlot(t *testing.T) {
	remote := fakenet.SilentRemote(t)
	srv := startServer(t, Config{MaxConnectsPerClient: 1, MaxAssociationsPerClient: 1,
		AllowedPorts: lludp.Ports{{Lo: remote.Port(), Hi: remote.Port()}}, HalfCloseTimeout: 200 * time.Millisecond, IdleTimeout: 400 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), ioDeadline)
	defer cancel()
	ended := endings(srv.Server)
	d := Dialer{ProxyAddr: srv.addr}
	c, err := d.DialContext(ctx, "tcp", remote.String())
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
	c.Close() // the client has gone; the remote stays silent
	awaitEnd(t, ended, "the CONNECT slot never came back")
	if n := srv.Ended(EndedHalfClose); n != 1 {
		t.Errorf("ended at the half-close timeout: %d, want 1", n)
	}
	c2, err := d.DialContext(ctx, "tcp", remote.String())
	if err != nil {
		t.Fatalf("the next CONNECT from the address: %v", err)
	}
	// This one the client keeps open, sending nothing: the idle timeout
	// ends it.
	buf := make([]byte, 1)
	c2.SetReadDeadline(time.Now().Add(ioDeadline))
	if _, err := c2.Read(buf); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Errorf("an idle CONNECT: read %v, want the proxy to close it", err)
	}
	c2.Close()
	awaitEnd(t, ended, "the idle CONNECT's slot never came back")
	if n := srv.Ended(EndedIdle); n != 1 {
		t.Errorf("ended idle: %d, want 1", n)
	}

	u, err := DialUDP(ctx, srv.addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	awaitEnd(t, ended, "an idle association was never ended")
	if n := srv.Ended(EndedIdle); n != 2 {
		t.Errorf("ended idle: %d, want 2 (the CONNECT and the association)", n)
	}
	u2, err := DialUDP(ctx, srv.addr, nil)
	if err != nil {
		t.Fatalf("the next association from the address: %v", err)
	}
	u2.Close()
}

// TestConnectDestinations (issue #24, item 3): a proxy listening beyond
// loopback refuses CONNECT to the host's loopback (its metrics, on a port
// the allow-list holds), to link-local addresses and to itself, with
// reply 2 (not allowed by ruleset), counted as destination_not_allowed,
// and the log says why; it still reaches other addresses. A proxy on
// loopback serves the host's viewer: loopback is allowed there, itself
// and its metrics are not.
func TestConnectDestinations(t *testing.T) {
	metrics := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "agent ids") }))
	defer metrics.Close()
	metricsAt := addrPortOf(metrics.Listener.Addr())
	port := metricsAt.Port()
	// A service on every address, reachable at the host's LAN address.
	public, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer public.Close()
	go func() {
		for {
			c, err := public.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	publicPort := addrPortOf(public.Addr()).Port()
	var lan netip.Addr
	if ifs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range ifs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() && !p.Addr().IsLoopback() && !p.Addr().IsLinkLocalUnicast() {
				lan = p.Addr()
				break
			}
		}
	}
	auth := &Auth{Username: "u", Password: "p"}
	for _, tc := range []struct {
		name    string
		listen  string
		target  func(proxy netip.AddrPort) string
		allowed bool
		why     string
	}{
		{"beyond loopback: metrics on loopback", "0.0.0.0:0", func(netip.AddrPort) string { return metricsAt.String() }, false, "loopback"},
		{"beyond loopback: loopback by name", "0.0.0.0:0", func(netip.AddrPort) string { return "localhost:" + itoa(port) }, false, "loopback"},
		{"beyond loopback: unspecified", "0.0.0.0:0", func(netip.AddrPort) string { return "0.0.0.0:" + itoa(port) }, false, "loopback"},
		{"beyond loopback: link-local", "0.0.0.0:0", func(netip.AddrPort) string { return "169.254.169.254:" + itoa(port) }, false, "link-local"},
		{"beyond loopback: itself", "0.0.0.0:0", func(p netip.AddrPort) string { return "127.0.0.1:" + itoa(p.Port()) }, false, "proxy's own"},
		{"beyond loopback: its metrics", "0.0.0.0:0", func(netip.AddrPort) string { return "127.0.0.1:9101" }, false, "proxy's own"},
		{"beyond loopback: a LAN address", "0.0.0.0:0", func(netip.AddrPort) string { return netip.AddrPortFrom(lan, publicPort).String() }, true, ""},
		{"on loopback: loopback", "127.0.0.1:0", func(netip.AddrPort) string { return metricsAt.String() }, true, ""},
		{"on loopback: itself", "127.0.0.1:0", func(p netip.AddrPort) string { return p.String() }, false, "proxy's own"},
		{"on loopback: its metrics", "127.0.0.1:0", func(netip.AddrPort) string { return "127.0.0.1:9101" }, false, "proxy's own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.allowed && strings.Contains(tc.name, "LAN") && !lan.IsValid() {
				t.Skip("no non-loopback IPv4 address on this host")
			}
			log := &lines{}
			srv := startServerOn(t, Config{Auth: auth, AllowedPorts: everyPort, OwnAddrs: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:9101")}},
				tc.listen, slog.New(slog.NewTextHandler(log, nil)))
			proxyAt := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), netip.MustParseAddrPort(srv.addr).Port())
			dctx, dcancel := context.WithTimeout(context.Background(), ioDeadline)
			defer dcancel()
			d := Dialer{ProxyAddr: proxyAt.String(), Auth: auth}
			c, err := d.DialContext(dctx, "tcp", tc.target(proxyAt))
			if c != nil {
				c.Close()
			}
			if tc.allowed {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "not allowed by ruleset") {
				t.Fatalf("CONNECT: %v, want reply 2 (not allowed by ruleset)", err)
			}
			if srv.Refused(RefusedDestination) != 1 || !strings.Contains(log.String(), tc.why) {
				t.Errorf("refused as destination_not_allowed %d times, log %q; want 1 and a line saying %q", srv.Refused(RefusedDestination), log.String(), tc.why)
			}
		})
	}
}

func itoa(p uint16) string {
	return netip.AddrPortFrom(netip.IPv4Unspecified(), p).String()[len("0.0.0.0:"):]
}

// lines is a log sink safe for the server's goroutines.
type lines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestAuthBackoff (issue #24, item 4): wrong passwords as fast as a client
// can send them from one address are checked a few times, then answered
// unchecked (counted as auth_backoff) while the address is in back-off,
// which doubles at each failure; the log has one line for the address, not
// one per attempt, and a second address gets its own line. Before, every
// guess was checked (2,000 in 0.43 s) and only the first failure logged.
func TestAuthBackoff(t *testing.T) {
	log := &lines{}
	srv := startServerOn(t, Config{Auth: &Auth{Username: "viewer", Password: "secret"}}, "127.0.0.1:0", slog.New(slog.NewTextHandler(log, nil)))
	ctx := context.Background()

	guess := func(from netip.Addr, pass string) error {
		dctx, dcancel := context.WithTimeout(ctx, ioDeadline)
		defer dcancel()
		d := Dialer{ProxyAddr: srv.addr, Auth: &Auth{Username: "viewer", Password: pass}, Local: from}
		c, err := d.DialContext(dctx, "tcp", "127.0.0.1:80")
		if c != nil {
			c.Close()
		}
		return err
	}
	one := netip.MustParseAddr("127.0.0.1")
	start := time.Now()
	const attempts = 300
	for i := range attempts {
		if err := guess(one, "guess"+itoa(uint16(i))); err == nil {
			t.Fatal("a wrong password was accepted")
		}
	}
	elapsed := time.Since(start)
	checked := srv.Refused(RefusedAuthFailed)
	// Back-off starts at 100 ms after the free failures and doubles: in
	// elapsed, at most about log2(elapsed/100ms)+1 checks more, whatever
	// the attempts.
	bound := uint64(authFreeFailures + 2)
	for d := authBackoffFirst; d < elapsed; d *= 2 {
		bound++
	}
	if checked > bound || checked+srv.Refused(RefusedAuthBackoff) != attempts {
		t.Errorf("%d attempts in %v: %d checked, %d refused unchecked; want at most %d checked and the rest refused unchecked",
			attempts, elapsed, checked, srv.Refused(RefusedAuthBackoff), bound)
	}
	// Even the right password is refused during the back-off.
	if err := guess(one, "secret"); err == nil {
		t.Error("the right password was checked during the back-off")
	}
	if err := guess(netip.MustParseAddr("127.0.0.2"), "guess"); err == nil {
		t.Fatal("a wrong password was accepted")
	}
	text := log.String()
	if n := strings.Count(text, "authentication failed"); n != 2 || !strings.Contains(text, "client=127.0.0.1:") || !strings.Contains(text, "client=127.0.0.2:") {
		t.Errorf("%d log lines of failures, want one per address:\n%s", n, text)
	}
	t.Logf("%d attempts in %v: %d checked", attempts, elapsed, checked)
}

// TestUDPPorts (issue #24, item 7): by default the relay sends only to the
// simulator ports (9000–13100); a datagram to another port is dropped and
// counted as port_not_allowed. The relay socket is bound to the address
// the host sends from towards the simulator (here 127.0.0.1), not to
// every address. Before, a datagram went to any port from a socket bound
// to every interface.
func TestUDPPorts(t *testing.T) {
	var sim *net.UDPConn
	for p := 9000; p <= 13100 && sim == nil; p += 37 {
		sim, _ = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(p))))
	}
	if sim == nil {
		t.Skip("no free port in 9000-13100 on 127.0.0.1")
	}
	defer sim.Close()
	other := udpPeer(t)
	defer other.Close()
	rec := newRecorder()
	var logged lockedBuffer
	srv := startServerOn(t, Config{UDPPorts: DefaultUDPPorts, Hooks: rec}, "127.0.0.1:0", slog.New(slog.NewTextHandler(&logged, nil)))
	c := dialUDP(t, srv, nil)
	defer c.Close()
	if _, err := c.WriteToUDPAddrPort([]byte("to a service"), addrPortOf(other.LocalAddr())); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WriteToUDPAddrPort([]byte("to the sim"), addrPortOf(sim.LocalAddr())); err != nil {
		t.Fatal(err)
	}
	sim.SetReadDeadline(time.Now().Add(ioDeadline))
	got, from := readOne(t, sim)
	if string(got) != "to the sim" {
		t.Fatalf("the sim got %q", got)
	}
	if from.Addr() != netip.MustParseAddr("127.0.0.1") {
		t.Errorf("relayed from %v, want 127.0.0.1 (the source towards the sim)", from)
	}
	rec.mu.Lock()
	a := rec.assocs[0]
	rec.mu.Unlock()
	if r := a.RelayAddr(); r.Addr().IsUnspecified() || r.Port() != from.Port() {
		t.Errorf("relay socket bound to %v; the sim saw %v", r, from)
	}
	if n := srv.Dropped(DroppedPortNotAllowed); n != 1 {
		t.Errorf("dropped to a port not allowed: %d, want 1", n)
	}
	// The line names the port, what widens the ports, and the datagram's
	// source (the client) and destination (issue 37: from= was the
	// destination).
	to := addrPortOf(other.LocalAddr())
	for _, want := range []string{fmt.Sprintf("UDP datagram to port %d dropped", to.Port()), UDPPortsHint,
		"from=" + addrPortOf(c.pc.LocalAddr()).String(), "to=" + to.String()} {
		if !strings.Contains(logged.String(), want) {
			t.Errorf("the log has no %q:\n%s", want, logged.String())
		}
	}
}

// lockedBuffer is a log's destination, written by the relay and read by
// the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestDialTimeoutShorterThanHandshake: a configuration whose dial would
// outlive the handshake is refused; by default the dial gives up first.
func TestDialTimeoutShorterThanHandshake(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	if _, err := New(Config{HandshakeTimeout: time.Second, DialTimeout: time.Second}, log); err == nil || !strings.Contains(err.Error(), "shorter than the handshake") {
		t.Errorf("a dial timeout equal to the handshake's: %v", err)
	}
	srv, err := New(Config{}, log)
	if err != nil || srv.cfg.DialTimeout >= srv.cfg.HandshakeTimeout {
		t.Errorf("defaults: dial %v, handshake %v (%v)", srv.cfg.DialTimeout, srv.cfg.HandshakeTimeout, err)
	}
}

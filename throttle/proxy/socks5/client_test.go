package socks5

import (
	"bytes"
	"context"
	"github.com/fairgrid/fairgrid/lludp"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestUDPConnWire checks the client's datagrams byte for byte against a
// socket standing in for the proxy's relay: the 10-byte IPv4 header the
// Second Life viewer sends (llproxy.cpp), 22 bytes for IPv6, and reads that
// skip strangers and bad headers.
func TestUDPConnWire(t *testing.T) {
	relay := udpPeer(t)
	pc := udpPeer(t)
	c := &UDPConn{ctrl: nopConn{}, pc: pc, relay: addrPortOf(relay.LocalAddr()), rbuf: make([]byte, maxUDPHeader+maxDatagram)}
	sim4 := netip.MustParseAddrPort("198.51.100.7:13005")
	sim6 := netip.MustParseAddrPort("[2001:db8::7]:9000")
	c.WriteToUDPAddrPort([]byte{0x40, 0, 0, 0, 1}, sim4)
	got, _ := readOne(t, relay)
	want := []byte{0, 0, 0, 1, 198, 51, 100, 7, 0x32, 0xcd, 0x40, 0, 0, 0, 1}
	if !bytes.Equal(got, want) {
		t.Errorf("IPv4 datagram %x, want %x", got, want)
	}
	c.WriteTo([]byte("x"), net.UDPAddrFromAddrPort(sim6))
	got, _ = readOne(t, relay)
	if len(got) != udpHeaderIPv6+1 || got[3] != atypIPv6 || got[21] != 0x28 || got[22] != 'x' {
		t.Errorf("IPv6 datagram %x", got)
	}

	stranger := udpPeer(t)
	hdr := make([]byte, udpHeaderIPv4)
	putUDPHeader(hdr, sim4)
	client := addrPortOf(pc.LocalAddr())
	stranger.WriteToUDPAddrPort(append(bytes.Clone(hdr), "from a stranger"...), client)
	relay.WriteToUDPAddrPort([]byte{0, 0, 0, 9, 1}, client)
	relay.WriteToUDPAddrPort(append(bytes.Clone(hdr), "welcome"...), client)
	buf := make([]byte, 64)
	n, from, err := c.ReadFrom(buf)
	if err != nil {
		t.Fatal(err)
	}
	if string(buf[:n]) != "welcome" || from.String() != sim4.String() {
		t.Errorf("read %q from %v, want welcome from %v", buf[:n], from, sim4)
	}
}

type nopConn struct{ net.Conn }

func (nopConn) Close() error { return nil }

// TestIPv6 runs an association and a CONNECT over IPv6 loopback.
func TestIPv6(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	ln.Close()
	sim, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	defer sim.Close()
	sim.SetDeadline(time.Now().Add(ioDeadline))
	simAddr := addrPortOf(sim.LocalAddr())

	httpLn, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Fatal(err)
	}
	web := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("v6")) })}
	go web.Serve(httpLn)
	defer web.Close()
	port := addrPortOf(httpLn.Addr()).Port()

	srv, err := New(Config{AllowedPorts: lludp.Ports{{Lo: port, Hi: port}}, UDPPorts: everyPort}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	pln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { srv.Serve(ctx, pln) })
	defer wg.Wait()
	defer cancel()

	dctx, dcancel := context.WithTimeout(context.Background(), ioDeadline)
	defer dcancel()
	c, err := DialUDP(dctx, pln.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(ioDeadline))
	c.WriteToUDPAddrPort([]byte("hello6"), simAddr)
	buf := make([]byte, 64)
	n, from, err := sim.ReadFromUDPAddrPort(buf)
	if err != nil || string(buf[:n]) != "hello6" {
		t.Fatalf("sim read %q, %v", buf[:n], err)
	}
	sim.WriteToUDPAddrPort([]byte("back6"), from)
	n, src, err := c.ReadFromUDPAddrPort(buf)
	if err != nil || string(buf[:n]) != "back6" || src != simAddr {
		t.Fatalf("client read %q from %v (%v), want back6 from %v", buf[:n], src, err, simAddr)
	}

	d := &Dialer{ProxyAddr: pln.Addr().String()}
	hc := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}, Timeout: ioDeadline}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("http://[::1]:" + strconv.Itoa(int(port)) + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d", resp.StatusCode)
	}
}

// countingHandler counts log records by their cause attribute.
type countingHandler struct {
	mu     sync.Mutex
	causes map[string]int
	msgs   []string
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "cause" {
			h.causes[a.Value.String()]++
		}
		return true
	})
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }

// TestLogOncePerCause refuses and drops the same way several times and
// expects one log line per cause and every occurrence counted.
func TestLogOncePerCause(t *testing.T) {
	h := &countingHandler{causes: map[string]int{}}
	srv, err := New(Config{UDPPorts: everyPort}, slog.New(h))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { srv.Serve(ctx, ln) })
	defer wg.Wait()
	defer cancel()
	ts := &testServer{srv, ln.Addr().String()}

	dctx, dcancel := context.WithTimeout(context.Background(), ioDeadline)
	defer dcancel()
	d := Dialer{ProxyAddr: ts.addr}
	for range 3 {
		if _, err := d.DialContext(dctx, "tcp", "127.0.0.1:25"); err == nil {
			t.Fatal("port 25 allowed")
		}
	}
	// Another port refused is named too: a grid's login on an unlisted
	// port is said once, whatever was refused before it.
	if _, err := d.DialContext(dctx, "tcp", "127.0.0.1:26"); err == nil {
		t.Fatal("port 26 allowed")
	}
	sim := udpPeer(t)
	simAddr := addrPortOf(sim.LocalAddr())
	c := dialUDP(t, ts, nil)
	for range 3 {
		c.pc.WriteToUDPAddrPort([]byte{0, 0, 5, 1, 127, 0, 0, 1, 0, 80}, c.relay)
	}
	c.WriteToUDPAddrPort([]byte("sync"), simAddr)
	readOne(t, sim)
	if srv.Refused(RefusedPort) != 4 || srv.Dropped(DroppedFragment) != 3 {
		t.Errorf("counted %d port refusals and %d fragments, want 4 and 3", srv.Refused(RefusedPort), srv.Dropped(DroppedFragment))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.causes["port_not_allowed"] != 2 || h.causes["fragmented"] != 1 || len(h.causes) != 2 {
		t.Errorf("log lines by cause %v, want one per refused port (2) and one for fragmented", h.causes)
	}
	var named []string
	for _, m := range h.msgs {
		if strings.Contains(m, "refused: add it to --allow-ports (proxy.allow_ports)") {
			named = append(named, m)
		}
	}
	if len(named) != 2 || !strings.Contains(named[0], "port 25") || !strings.Contains(named[1], "port 26") {
		t.Errorf("refusal lines %q, want one naming port 25 and one naming port 26, each with --allow-ports", named)
	}
	if !slices.Contains(h.msgs, "UDP association") {
		t.Errorf("the association was not logged: %q", h.msgs)
	}
}

package socks5

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
)

// blackhole returns a loopback port whose connection attempts are never
// answered: a socket listening with a backlog of 0 whose one queue slot a
// connection already fills, so Linux drops each further SYN (and retries
// it for longer than any dial timeout here). A host that does not answer,
// reproduced on loopback.
func blackhole(t *testing.T) netip.AddrPort {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	at := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(sa.(*syscall.SockaddrInet4).Port))
	// Fill the accept queue; nothing accepts.
	for range 2 {
		c, err := net.DialTimeout("tcp", at.String(), 50*time.Millisecond)
		if err != nil {
			break
		}
		t.Cleanup(func() { c.Close() })
	}
	return at
}

// TestUnreachableDialAnswered (issue #24, item 5): a CONNECT to a host
// that never answers is answered with RFC 1928's reply 4 (host
// unreachable) before the handshake's deadline, since the dial gives up
// first. Before, the dial (15 s) outlived the handshake (10 s) and the
// client got a bare close.
func TestUnreachableDialAnswered(t *testing.T) {
	hole := blackhole(t)
	probe, err := net.DialTimeout("tcp", hole.String(), 200*time.Millisecond)
	if err == nil {
		probe.Close()
		t.Skip("the kernel completed a connection to a full backlog: no blackhole on this host")
	}
	const handshake = time.Second
	srv := startServer(t, Config{AllowedPorts: lludp.Ports{{Lo: hole.Port(), Hi: hole.Port()}}, HandshakeTimeout: handshake})
	if srv.cfg.DialTimeout >= handshake {
		t.Fatalf("dial timeout %v not shorter than the handshake's %v", srv.cfg.DialTimeout, handshake)
	}
	ctx, cancel := context.WithTimeout(context.Background(), ioDeadline)
	defer cancel()
	d := Dialer{ProxyAddr: srv.addr}
	_, err = d.DialContext(ctx, "tcp", hole.String())
	if err == nil || !strings.Contains(err.Error(), "host unreachable") {
		t.Fatalf("CONNECT to a host that never answers: %v, want reply 4 (host unreachable)", err)
	}
	if srv.Refused(RefusedDialFailed) != 1 {
		t.Errorf("dial failures counted: %d, want 1", srv.Refused(RefusedDialFailed))
	}
}

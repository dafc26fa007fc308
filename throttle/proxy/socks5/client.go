package socks5

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// Dialer is a SOCKS5 client: CONNECT for TCP and UDP ASSOCIATE for UDP.
type Dialer struct {
	// ProxyAddr is the proxy's host:port.
	ProxyAddr string
	// Auth, if set, is offered as RFC 1929 username/password.
	Auth *Auth
	// Local, if set, is the address the connections to the proxy are made
	// from (a host with several).
	Local netip.Addr
}

// netDialer dials the proxy from d.Local, if set.
func (d *Dialer) netDialer() *net.Dialer {
	nd := &net.Dialer{}
	if d.Local.IsValid() {
		nd.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(d.Local, 0))
	}
	return nd
}

// clientHandshakeTimeout bounds a handshake when ctx has no deadline, so a
// silent proxy cannot hold the caller forever.
const clientHandshakeTimeout = 30 * time.Second

// DialContext connects to addr (host:port) through the proxy with CONNECT.
// A host name is sent unresolved, for the proxy to resolve. network must be
// "tcp", "tcp4" or "tcp6"; the signature fits http.Transport.DialContext.
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("socks5: CONNECT carries tcp, not %q", network)
	}
	dst, err := parseHostPort(addr)
	if err != nil {
		return nil, err
	}
	conn, _, err := d.request(ctx, cmdConnect, dst)
	if err != nil {
		return nil, err
	}
	return conn, nil
}

// DialUDP makes a UDP association through the proxy at proxyAddr; see
// Dialer.DialUDP.
func DialUDP(ctx context.Context, proxyAddr string, auth *Auth) (*UDPConn, error) {
	d := Dialer{ProxyAddr: proxyAddr, Auth: auth}
	return d.DialUDP(ctx)
}

// DialUDP makes a UDP association through the proxy. The association lasts
// until the returned connection is closed.
func (d *Dialer) DialUDP(ctx context.Context) (*UDPConn, error) {
	probe, err := d.netDialer().DialContext(ctx, "tcp", d.ProxyAddr)
	if err != nil {
		return nil, fmt.Errorf("socks5: dialing proxy: %w", err)
	}
	// The UDP socket is bound before the request so that its port can be
	// declared (RFC 1928 §7), on the address the proxy sees this host at.
	local := addrPortOf(probe.LocalAddr()).Addr()
	pc, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(local, 0)))
	if err != nil {
		probe.Close()
		return nil, fmt.Errorf("socks5: opening UDP socket: %w", err)
	}
	declared := addrPortOf(pc.LocalAddr())
	ctrl, bnd, err := d.handshake(ctx, probe, cmdUDPAssociate, Addr{IP: declared.Addr().Unmap(), Port: declared.Port()})
	if err != nil {
		pc.Close()
		return nil, err
	}
	relayIP := bnd.IP
	if !relayIP.IsValid() || relayIP.IsUnspecified() {
		// RFC 1928 §6 lets a server answer 0.0.0.0: use the proxy's address.
		relayIP = addrPortOf(ctrl.RemoteAddr()).Addr()
	}
	return &UDPConn{
		ctrl:  ctrl,
		pc:    pc,
		relay: netip.AddrPortFrom(relayIP.Unmap(), bnd.Port),
		rbuf:  make([]byte, maxUDPHeader+maxDatagram),
	}, nil
}

func parseHostPort(addr string) (Addr, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return Addr{}, fmt.Errorf("socks5: %w", err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return Addr{}, fmt.Errorf("socks5: port %q: %w", portStr, err)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return Addr{IP: ip.Unmap(), Port: uint16(port)}, nil
	}
	if err := checkDomain(host); err != nil {
		return Addr{}, err
	}
	return Addr{Name: host, Port: uint16(port)}, nil
}

func (d *Dialer) request(ctx context.Context, cmd byte, dst Addr) (net.Conn, Addr, error) {
	conn, err := d.netDialer().DialContext(ctx, "tcp", d.ProxyAddr)
	if err != nil {
		return nil, Addr{}, fmt.Errorf("socks5: dialing proxy: %w", err)
	}
	return d.handshake(ctx, conn, cmd, dst)
}

// ErrRefused is wrapped by the error for a request the proxy answered with
// a failure reply.
var ErrRefused = errors.New("socks5: proxy refused the request")

var replyNames = map[byte]string{
	repGeneralFailure:      "general failure",
	repNotAllowed:          "not allowed by ruleset",
	repNetworkUnreachable:  "network unreachable",
	repHostUnreachable:     "host unreachable",
	repConnectionRefused:   "connection refused",
	repCommandNotSupported: "command not supported",
	repAddrTypeNotSupport:  "address type not supported",
}

// handshake negotiates on conn and sends the request; conn is closed on
// failure. It returns the bound address of the reply.
func (d *Dialer) handshake(ctx context.Context, conn net.Conn, cmd byte, dst Addr) (net.Conn, Addr, error) {
	fail := func(err error) (net.Conn, Addr, error) {
		conn.Close()
		return nil, Addr{}, err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(clientHandshakeTimeout)
	}
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	greeting := []byte{version5, 1, methodNoAuth}
	if d.Auth != nil {
		greeting = []byte{version5, 1, methodUserPass}
	}
	if _, err := conn.Write(greeting); err != nil {
		return fail(fmt.Errorf("socks5: greeting: %w", err))
	}
	br := bufio.NewReaderSize(conn, 512)
	var sel [2]byte
	if _, err := io.ReadFull(br, sel[:]); err != nil {
		return fail(fmt.Errorf("socks5: reading method: %w", err))
	}
	if sel[0] != version5 {
		return fail(fmt.Errorf("socks5: method reply version %d: %w", sel[0], errVersion))
	}
	switch sel[1] {
	case methodNoAuth:
	case methodUserPass:
		if d.Auth == nil {
			return fail(errors.New("socks5: proxy asks for a username and password"))
		}
		if err := d.Auth.validate(); err != nil {
			return fail(err)
		}
		msg := append([]byte{userPassVersion, byte(len(d.Auth.Username))}, d.Auth.Username...)
		msg = append(append(msg, byte(len(d.Auth.Password))), d.Auth.Password...)
		if _, err := conn.Write(msg); err != nil {
			return fail(fmt.Errorf("socks5: sending credentials: %w", err))
		}
		var st [2]byte
		if _, err := io.ReadFull(br, st[:]); err != nil {
			return fail(fmt.Errorf("socks5: reading auth status: %w", err))
		}
		if st[1] != userPassSuccess {
			return fail(fmt.Errorf("socks5: username or password rejected: %w", ErrRefused))
		}
	default:
		return fail(fmt.Errorf("socks5: proxy accepts none of the offered methods: %w", ErrRefused))
	}
	req := appendAddr([]byte{version5, cmd, 0}, dst)
	if _, err := conn.Write(req); err != nil {
		return fail(fmt.Errorf("socks5: sending request: %w", err))
	}
	var hdr [4]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return fail(fmt.Errorf("socks5: reading reply: %w", err))
	}
	if hdr[0] != version5 {
		return fail(fmt.Errorf("socks5: reply version %d: %w", hdr[0], errVersion))
	}
	if hdr[1] != repSucceeded {
		name := replyNames[hdr[1]]
		if name == "" {
			name = "reply " + strconv.Itoa(int(hdr[1]))
		}
		return fail(fmt.Errorf("socks5: %s to %s: %w", name, dst, ErrRefused))
	}
	bnd, err := readAddr(br, hdr[3])
	if err != nil {
		return fail(fmt.Errorf("socks5: reply address: %w", err))
	}
	if ctx.Err() != nil {
		return fail(ctx.Err())
	}
	conn.SetDeadline(time.Time{})
	if br.Buffered() > 0 {
		// A CONNECT target that speaks first may have had its first bytes
		// read along with the reply: keep them.
		return bufferedConn{conn, br}, bnd, nil
	}
	return conn, bnd, nil
}

// bufferedConn reads what the handshake's buffer holds before the socket.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c bufferedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// UDPConn is a UDP association seen from the client: every datagram written
// is wrapped in the RFC 1928 §7 header (10 bytes for IPv4, as the Second Life
// viewer sends) and sent to the proxy's relay; every datagram read is
// unwrapped and reported with the remote source the header names.
type UDPConn struct {
	ctrl  net.Conn
	pc    *net.UDPConn
	relay netip.AddrPort

	wmu  sync.Mutex
	wbuf []byte

	rmu  sync.Mutex
	rbuf []byte
}

var _ net.PacketConn = (*UDPConn)(nil)

// WriteToUDPAddrPort sends b to addr through the proxy. It returns len(b) on
// success.
func (c *UDPConn) WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wbuf = appendAddr(append(c.wbuf[:0], 0, 0, 0), Addr{IP: addr.Addr(), Port: addr.Port()})
	c.wbuf = append(c.wbuf, b...)
	if _, err := c.pc.WriteToUDPAddrPort(c.wbuf, c.relay); err != nil {
		return 0, err
	}
	return len(b), nil
}

// ReadFromUDPAddrPort reads the next datagram relayed from a remote host
// into b. Datagrams that do not come from the proxy's relay or that carry no
// valid header are skipped. A payload longer than b is truncated.
func (c *UDPConn) ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	for {
		n, from, err := c.pc.ReadFromUDPAddrPort(c.rbuf)
		if err != nil {
			return 0, netip.AddrPort{}, err
		}
		if netip.AddrPortFrom(from.Addr().Unmap(), from.Port()) != c.relay {
			continue
		}
		src, off, err := parseUDPHeader(c.rbuf[:n])
		if err != nil || src.Name != "" {
			continue
		}
		return copy(b, c.rbuf[off:n]), netip.AddrPortFrom(src.IP.Unmap(), src.Port), nil
	}
}

// WriteTo is WriteToUDPAddrPort for a *net.UDPAddr.
func (c *UDPConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	ua, ok := addr.(*net.UDPAddr)
	if !ok {
		return 0, fmt.Errorf("socks5: address %v is not a UDP address", addr)
	}
	return c.WriteToUDPAddrPort(b, ua.AddrPort())
}

// ReadFrom is ReadFromUDPAddrPort returning a *net.UDPAddr.
func (c *UDPConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, from, err := c.ReadFromUDPAddrPort(b)
	if err != nil {
		return 0, nil, err
	}
	return n, net.UDPAddrFromAddrPort(from), nil
}

// Close ends the association: it closes the control connection, which tells
// the proxy, and the UDP socket.
func (c *UDPConn) Close() error {
	return errors.Join(c.ctrl.Close(), c.pc.Close())
}

// LocalAddr is the local UDP socket's address.
func (c *UDPConn) LocalAddr() net.Addr { return c.pc.LocalAddr() }

// RelayAddr is the proxy's UDP endpoint this connection sends to.
func (c *UDPConn) RelayAddr() netip.AddrPort { return c.relay }

// SetDeadline sets the UDP socket's read and write deadlines.
func (c *UDPConn) SetDeadline(t time.Time) error { return c.pc.SetDeadline(t) }

// SetReadDeadline sets the UDP socket's read deadline.
func (c *UDPConn) SetReadDeadline(t time.Time) error { return c.pc.SetReadDeadline(t) }

// SetWriteDeadline sets the UDP socket's write deadline.
func (c *UDPConn) SetWriteDeadline(t time.Time) error { return c.pc.SetWriteDeadline(t) }

package socks5

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
)

// Protocol numbers, RFC 1928 §3–§7 and RFC 1929 §2.
const (
	version5 = 0x05 // RFC 1928 §3: VER of every SOCKS5 message.

	methodNoAuth       = 0x00 // RFC 1928 §3: NO AUTHENTICATION REQUIRED.
	methodUserPass     = 0x02 // RFC 1928 §3 and RFC 1929: USERNAME/PASSWORD.
	methodNoAcceptable = 0xFF // RFC 1928 §3: NO ACCEPTABLE METHODS; the client must close.

	userPassVersion = 0x01 // RFC 1929 §2: VER of the sub-negotiation.
	userPassSuccess = 0x00 // RFC 1929 §2: STATUS 0 is success, anything else failure.
	userPassFailure = 0x01

	cmdConnect      = 0x01 // RFC 1928 §4.
	cmdBind         = 0x02 // RFC 1928 §4; refused here (no grid service needs inbound TCP).
	cmdUDPAssociate = 0x03 // RFC 1928 §4 and §7.

	atypIPv4   = 0x01 // RFC 1928 §5: 4 octets.
	atypDomain = 0x03 // RFC 1928 §5: one length octet, then the name, no NUL.
	atypIPv6   = 0x04 // RFC 1928 §5: 16 octets.

	// RFC 1928 §6 reply codes.
	repSucceeded           = 0x00
	repGeneralFailure      = 0x01
	repNotAllowed          = 0x02
	repNetworkUnreachable  = 0x03
	repHostUnreachable     = 0x04
	repConnectionRefused   = 0x05
	repCommandNotSupported = 0x07
	repAddrTypeNotSupport  = 0x08

	// maxDomainLen is the longest host name RFC 1035 §2.3.4 allows in text
	// form (255 octets on the wire, less the first length and the root).
	maxDomainLen = 253

	// maxUDPHeader is the longest RFC 1928 §7 UDP request header:
	// RSV(2) FRAG(1) ATYP(1) DST.ADDR(1+255) DST.PORT(2).
	maxUDPHeader = 4 + 1 + 255 + 2
	// udpHeaderIPv4 is the header the Second Life viewer puts on every
	// datagram (llproxy.cpp, proxywrap_t: 10 bytes for an IPv4 address).
	udpHeaderIPv4 = 4 + 4 + 2
	// udpHeaderIPv6 is the header for an IPv6 source or destination.
	udpHeaderIPv6 = 4 + 16 + 2
)

// Addr is a SOCKS address: an IP address or a domain name, and a port
// (RFC 1928 §5). Exactly one of IP and Name is set.
type Addr struct {
	IP   netip.Addr
	Name string
	Port uint16
}

// String gives host:port, with IPv6 in brackets.
func (a Addr) String() string {
	if a.Name != "" {
		return netJoin(a.Name, a.Port)
	}
	return netip.AddrPortFrom(a.IP, a.Port).String()
}

func netJoin(host string, port uint16) string {
	return host + ":" + strconv.Itoa(int(port))
}

// appendAddr appends ATYP, the address and the port. An IPv4-mapped IPv6
// address is written as IPv4, since a dual-stack socket reports IPv4 peers
// that way and the viewer expects the 10-byte IPv4 header.
func appendAddr(b []byte, a Addr) []byte {
	switch {
	case a.Name != "":
		b = append(b, atypDomain, byte(len(a.Name)))
		b = append(b, a.Name...)
	case a.IP.Unmap().Is4():
		ip := a.IP.Unmap().As4()
		b = append(b, atypIPv4)
		b = append(b, ip[:]...)
	default:
		ip := a.IP.As16()
		b = append(b, atypIPv6)
		b = append(b, ip[:]...)
	}
	return binary.BigEndian.AppendUint16(b, a.Port)
}

// Errors of the wire parsers. Each maps to one refusal or drop cause.
var (
	errVersion = errors.New("socks5: wrong protocol version")
	// errRequestVersion is errVersion in a request, which has a reply.
	errRequestVersion = fmt.Errorf("%w in request", errVersion)
	errNoMethods      = errors.New("socks5: greeting offers no methods")
	errAuthVersion    = errors.New("socks5: wrong username/password sub-negotiation version")
	errEmptyField     = errors.New("socks5: empty username or password")
	errReserved       = errors.New("socks5: reserved octet is not zero")
	errAddrType       = errors.New("socks5: unknown address type")
	errDomain         = errors.New("socks5: invalid domain name")
	errShort          = errors.New("socks5: datagram shorter than its header")
	errFragment       = errors.New("socks5: fragmented datagram")
)

// readGreeting reads the method-selection message (RFC 1928 §3):
// VER NMETHODS METHODS[NMETHODS].
func readGreeting(r io.Reader) (methods []byte, err error) {
	var hdr [2]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("reading greeting: %w", err)
	}
	if hdr[0] != version5 {
		return nil, fmt.Errorf("greeting version %d: %w", hdr[0], errVersion)
	}
	if hdr[1] == 0 {
		return nil, errNoMethods
	}
	methods = make([]byte, hdr[1])
	if _, err := io.ReadFull(r, methods); err != nil {
		return nil, fmt.Errorf("reading greeting methods: %w", err)
	}
	return methods, nil
}

// readUserPass reads the RFC 1929 §2 request: VER ULEN UNAME PLEN PASSWD.
func readUserPass(r io.Reader) (user, pass string, err error) {
	var hdr [2]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return "", "", fmt.Errorf("reading username: %w", err)
	}
	if hdr[0] != userPassVersion {
		return "", "", fmt.Errorf("sub-negotiation version %d: %w", hdr[0], errAuthVersion)
	}
	buf := make([]byte, int(hdr[1])+1)
	if _, err := io.ReadFull(r, buf); err != nil {
		return "", "", fmt.Errorf("reading username: %w", err)
	}
	user = string(buf[:hdr[1]])
	plen := buf[hdr[1]]
	pbuf := make([]byte, plen)
	if _, err := io.ReadFull(r, pbuf); err != nil {
		return "", "", fmt.Errorf("reading password: %w", err)
	}
	if user == "" || plen == 0 {
		return "", "", errEmptyField
	}
	return user, string(pbuf), nil
}

// request is an RFC 1928 §4 request.
type request struct {
	cmd byte
	dst Addr
}

// readRequest reads VER CMD RSV ATYP DST.ADDR DST.PORT (RFC 1928 §4). The
// command is returned whatever its value so that the caller can answer an
// unknown one with "command not supported".
func readRequest(r io.Reader) (request, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return request{}, fmt.Errorf("reading request: %w", err)
	}
	if hdr[0] != version5 {
		return request{}, fmt.Errorf("version %d: %w", hdr[0], errRequestVersion)
	}
	if hdr[2] != 0 {
		return request{}, errReserved
	}
	dst, err := readAddr(r, hdr[3])
	if err != nil {
		return request{}, err
	}
	return request{cmd: hdr[1], dst: dst}, nil
}

func readAddr(r io.Reader, atyp byte) (Addr, error) {
	var buf [1 + 255 + 2]byte
	var n int
	switch atyp {
	case atypIPv4:
		n = 4 + 2
	case atypIPv6:
		n = 16 + 2
	case atypDomain:
		if _, err := io.ReadFull(r, buf[:1]); err != nil {
			return Addr{}, fmt.Errorf("reading domain length: %w", err)
		}
		n = int(buf[0]) + 2
	default:
		return Addr{}, fmt.Errorf("address type %d: %w", atyp, errAddrType)
	}
	b := buf[:n]
	if _, err := io.ReadFull(r, b); err != nil {
		return Addr{}, fmt.Errorf("reading address: %w", err)
	}
	port := binary.BigEndian.Uint16(b[n-2:])
	switch atyp {
	case atypIPv4:
		return Addr{IP: netip.AddrFrom4([4]byte(b[:4])), Port: port}, nil
	case atypIPv6:
		return Addr{IP: netip.AddrFrom16([16]byte(b[:16])), Port: port}, nil
	}
	name := string(b[:n-2])
	if err := checkDomain(name); err != nil {
		return Addr{}, err
	}
	return Addr{Name: name, Port: port}, nil
}

// checkDomain accepts the characters a host name may hold (letters, digits,
// hyphen, underscore, dot; RFC 1123 §2.1 and the underscores real DNS has),
// so that no NUL or control byte reaches the resolver or a log line.
func checkDomain(name string) error {
	if len(name) == 0 || len(name) > maxDomainLen {
		return fmt.Errorf("domain of %d octets: %w", len(name), errDomain)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_'
		if !ok {
			return fmt.Errorf("byte %#x in domain: %w", c, errDomain)
		}
	}
	return nil
}

// appendReply appends an RFC 1928 §6 reply: VER REP RSV ATYP BND.ADDR BND.PORT.
func appendReply(b []byte, rep byte, bnd Addr) []byte {
	if !bnd.IP.IsValid() && bnd.Name == "" {
		bnd.IP = netip.IPv4Unspecified()
	}
	b = append(b, version5, rep, 0)
	return appendAddr(b, bnd)
}

// parseUDPHeader parses the RFC 1928 §7 UDP request header,
// RSV(2) FRAG(1) ATYP(1) DST.ADDR DST.PORT, and returns the destination and
// the offset of the payload. A domain name is returned unresolved.
func parseUDPHeader(b []byte) (dst Addr, payload int, err error) {
	if len(b) < 4 {
		return Addr{}, 0, errShort
	}
	// RSV is not checked: RFC 1928 §7 reserves it without asking the
	// receiver to verify it, and a client that sets it still means its data.
	if b[2] != 0 {
		return Addr{}, 0, errFragment
	}
	var n int
	switch b[3] {
	case atypIPv4:
		n = 4 + 4 + 2
	case atypIPv6:
		n = 4 + 16 + 2
	case atypDomain:
		if len(b) < 5 {
			return Addr{}, 0, errShort
		}
		n = 5 + int(b[4]) + 2
	default:
		return Addr{}, 0, errAddrType
	}
	if len(b) < n {
		return Addr{}, 0, errShort
	}
	port := binary.BigEndian.Uint16(b[n-2:])
	switch b[3] {
	case atypIPv4:
		return Addr{IP: netip.AddrFrom4([4]byte(b[4:8])), Port: port}, n, nil
	case atypIPv6:
		return Addr{IP: netip.AddrFrom16([16]byte(b[4:20])), Port: port}, n, nil
	}
	name := string(b[5 : n-2])
	if err := checkDomain(name); err != nil {
		return Addr{}, 0, err
	}
	return Addr{Name: name, Port: port}, n, nil
}

// udpHeaderLen is the length of the header naming a.
func udpHeaderLen(a netip.AddrPort) int {
	if a.Addr().Unmap().Is4() {
		return udpHeaderIPv4
	}
	return udpHeaderIPv6
}

// putUDPHeader writes the header naming a at the end of b, which must be
// exactly udpHeaderLen(a) long, so that a payload read behind it needs no copy.
func putUDPHeader(b []byte, a netip.AddrPort) {
	b[0], b[1], b[2] = 0, 0, 0
	appendAddr(b[3:3], Addr{IP: a.Addr(), Port: a.Port()})
}

package socks5

import (
	"bufio"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/prometheus/client_golang/prometheus"
)

// Auth holds RFC 1929 username/password credentials, each 1 to 255 bytes.
type Auth struct {
	Username string
	Password string
}

// MaxCredential is RFC 1929's bound on a username and on a password: each
// has one length octet (§2).
const MaxCredential = 255

// CheckCredential is the one check of a username or a password: 1 to
// MaxCredential bytes. The server, the client and the proxy's
// configuration all use it.
func CheckCredential(v string) error {
	if v == "" {
		return errors.New("empty")
	}
	if len(v) > MaxCredential {
		return fmt.Errorf("%d bytes: at most %d bytes (RFC 1929)", len(v), MaxCredential)
	}
	return nil
}

func (a *Auth) validate() error {
	if a == nil {
		return nil
	}
	if err := CheckCredential(a.Username); err != nil {
		return fmt.Errorf("socks5: username: %w", err)
	}
	if err := CheckCredential(a.Password); err != nil {
		return fmt.Errorf("socks5: password: %w", err)
	}
	return nil
}

// DefaultAllowedPorts are the CONNECT ports a viewer needs for a grid; see
// doc.go for what each serves.
var DefaultAllowedPorts = lludp.Ports{
	{Lo: 80, Hi: 80}, {Lo: 443, Hi: 443}, // HTTP(S): Second Life login, capabilities, web profiles
	{Lo: 8002, Hi: 8002},   // OpenSim grid (ROBUST) login service
	{Lo: 9000, Hi: 13100},  // OpenSim region HTTP servers: capabilities, event queue
	{Lo: 12043, Hi: 12043}, // Second Life simulator capabilities (HTTPS)
	{Lo: 12046, Hi: 12046}, // Second Life simulator capabilities and event queue
}

// Defaults for the zero values of Config; docs/proxy.md gives the reasons.
const (
	DefaultMaxAssociationsPerClient = 16  // a viewer holds one circuit per region in view, rarely more than 9
	DefaultMaxConnectsPerClient     = 128 // viewers fetch textures and meshes over many parallel HTTP connections
	DefaultMaxHandshakesPerClient   = 64  // a viewer opens its CONNECTs a few at a time; each handshake takes a round trip
	DefaultMaxHandshakes            = 512
	DefaultMaxSessions              = 2048 // CONNECTs and associations in all: 16 viewers at their per-address caps
	DefaultHandshakeTimeout         = 10 * time.Second
	// DefaultDialTimeout leaves the handshake time to answer a dial that
	// failed with its RFC 1928 reply before the handshake's deadline.
	DefaultDialTimeout = 7 * time.Second
	// DefaultIdleTimeout ends a session that relayed nothing either way
	// for so long: a viewer's event queue polls every 30 s or less, and
	// its UDP circuits carry AgentUpdates and pings every few seconds.
	DefaultIdleTimeout = 5 * time.Minute
	// DefaultHalfCloseTimeout is the silence a CONNECT's remote is allowed
	// once the client has finished sending: time for an answer to start,
	// not forever.
	DefaultHalfCloseTimeout = 30 * time.Second
	// DefaultEvictIdle is how long a session must have relayed nothing
	// before a new one from a full cap may take its place.
	DefaultEvictIdle = time.Second
)

// DefaultUDPPorts are the UDP destination ports the relay sends to: the
// simulator ports (lludp.SimPorts, as the daemon's capture.ports).
var DefaultUDPPorts = lludp.SimPorts

// Datagram is one relayed datagram as the hooks see it.
type Datagram struct {
	// Remote is the remote host: a client datagram's destination, a remote
	// host's datagram's source.
	Remote netip.AddrPort
	// Payload is the datagram without the SOCKS header.
	Payload []byte
	// At is when the relay read it (the batch it came in).
	At time.Time
}

// Hooks are the proxy's view into the UDP relay. The relay reads datagrams
// in batches (as many as were queued, up to a limit) and calls a hook once
// per batch, so that whatever the hook hands on (measurement) costs a lock
// or a wake-up per batch rather than per datagram. The calls come from
// each association's goroutines, one batch at a time per direction; the
// two directions and different associations run concurrently. A hook must
// not block (it holds up its direction of the association), and the batch
// and its payloads are valid only during the call.
type Hooks interface {
	// ClientDatagrams is called with each batch of datagrams from the
	// client, in the order they came. It may replace a datagram's Payload
	// (the replacement may reuse its memory: its capacity runs to the end of
	// the relay's buffer for it) or set it to nil, which drops the datagram
	// (counted as cause "hook").
	ClientDatagrams(a *Association, batch []Datagram)
	// RemoteDatagrams is called with each batch of datagrams from remote
	// hosts towards the client, before they are relayed unchanged.
	RemoteDatagrams(a *Association, batch []Datagram)
	// AssociationClosed is called once when the association has ended and
	// its sockets are closed.
	AssociationClosed(a *Association)
}

// Config configures a Server. The zero value serves loopback clients without
// authentication, with the defaults above.
type Config struct {
	// Auth, if set, requires RFC 1929 username/password from every client.
	Auth *Auth
	// AllowedPorts limits CONNECT destinations; nil means DefaultAllowedPorts.
	AllowedPorts lludp.Ports
	// MaxAssociationsPerClient and MaxConnectsPerClient limit the sessions
	// open at once from one client IP address; 0 means the default.
	MaxAssociationsPerClient int
	MaxConnectsPerClient     int
	// MaxHandshakesPerClient and MaxHandshakes bound the connections not
	// yet through the handshake, per client IP address and in all; a new
	// one past a cap takes the place of the oldest. MaxSessions bounds
	// CONNECTs and associations in all. 0 means the default.
	MaxHandshakesPerClient int
	MaxHandshakes          int
	MaxSessions            int
	// EvictIdle is how long a CONNECT or association must have relayed
	// nothing before a new session past a cap may take its place; 0 means
	// DefaultEvictIdle.
	EvictIdle time.Duration
	// HandshakeTimeout bounds everything from accept to the reply; 0 means
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// DialTimeout bounds a CONNECT's dial, and must be shorter than
	// HandshakeTimeout, so that a failed dial is answered; 0 means
	// DefaultDialTimeout, or 7/10 of a shorter HandshakeTimeout.
	DialTimeout time.Duration
	// IdleTimeout ends a CONNECT or association that relayed nothing
	// either way for so long; HalfCloseTimeout, a CONNECT whose client has
	// finished sending and whose remote has been silent for so long. 0
	// means the defaults.
	IdleTimeout      time.Duration
	HalfCloseTimeout time.Duration
	// UDPPorts are the destination ports the UDP relay sends to; nil means
	// DefaultUDPPorts. Datagrams to others are dropped and counted.
	UDPPorts lludp.Ports
	// OwnAddrs are addresses of the process's own services (its metrics):
	// CONNECT never reaches them, nor the listener Serve serves (an
	// unspecified address stands for every local address, at its port).
	OwnAddrs []netip.AddrPort
	// RelayAddr is the address the remote-facing UDP socket of each
	// association binds to; the zero value means all addresses.
	RelayAddr netip.Addr
	// Hooks, if set, see every relayed datagram.
	Hooks Hooks
	// Now reads the clock once per batch of received datagrams; nil means
	// time.Now.
	Now func() time.Time
}

// CheckListen resolves a listen address ("host:port"; a host name is
// looked up, as net.Listen would) and refuses to serve an address beyond
// loopback without credentials: an open SOCKS5 proxy is a relay for anyone
// who finds it. It returns the address to listen on, an IP literal (empty
// host: every address), so that what is checked is what is bound: a name
// such as "localhost" is trusted only for the address it resolves to.
func CheckListen(listen string, auth *Auth) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("socks5: listen address %q: %w", listen, err)
	}
	if err := auth.validate(); err != nil {
		return "", err
	}
	ip, err := resolveListenHost(host)
	if err != nil && auth == nil {
		return "", fmt.Errorf("socks5: listen address %q is not known to be loopback (%w): a username and password are required", listen, err)
	}
	if err != nil {
		return "", fmt.Errorf("socks5: listen address %q: %w", listen, err)
	}
	resolved := net.JoinHostPort(ip.String(), port)
	if !ip.IsValid() {
		resolved = net.JoinHostPort("", port)
	}
	if auth == nil && !ip.IsLoopback() {
		if host != ip.String() {
			return "", fmt.Errorf("socks5: listen address %q resolves to %s, not loopback: a username and password are required", listen, resolved)
		}
		return "", fmt.Errorf("socks5: listen address %q is not loopback: a username and password are required", listen)
	}
	return resolved, nil
}

// resolveListenHost is the address net.Listen("tcp", host+":port") would
// bind: the literal, none (every address) for an empty host, or a name's
// first IPv4 address, else its first.
func resolveListenHost(host string) (netip.Addr, error) {
	if host == "" {
		return netip.Addr{}, nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.Unmap(), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return netip.Addr{}, err
	}
	if len(ips) == 0 {
		return netip.Addr{}, fmt.Errorf("%q has no address", host)
	}
	for _, ip := range ips {
		if ip.Unmap().Is4() {
			return ip.Unmap(), nil
		}
	}
	return ips[0], nil
}

// Server is a SOCKS5 server with CONNECT and UDP ASSOCIATE.
type Server struct {
	cfg   Config
	log   *slog.Logger
	stats stats

	sessions     sessionTable
	limits       limits
	authFailures backoffTable
	dest         atomic.Pointer[destinations] // what CONNECT may reach; set by Serve
	// sessionEnded, if set, is called when a CONNECT or an association has
	// ended and released its slot (tests wait on it).
	sessionEnded atomic.Pointer[func()]

	mu     sync.Mutex
	nextID uint64
}

// New validates cfg and returns a server; it starts nothing.
func New(cfg Config, logger *slog.Logger) (*Server, error) {
	if err := cfg.Auth.validate(); err != nil {
		return nil, err
	}
	for _, r := range cfg.AllowedPorts {
		if r.Lo > r.Hi {
			return nil, fmt.Errorf("socks5: port range %d-%d is empty", r.Lo, r.Hi)
		}
	}
	if cfg.AllowedPorts == nil {
		cfg.AllowedPorts = DefaultAllowedPorts
	}
	if cfg.MaxAssociationsPerClient < 0 || cfg.MaxConnectsPerClient < 0 || cfg.MaxHandshakesPerClient < 0 || cfg.MaxHandshakes < 0 || cfg.MaxSessions < 0 ||
		cfg.HandshakeTimeout < 0 || cfg.DialTimeout < 0 || cfg.IdleTimeout < 0 || cfg.HalfCloseTimeout < 0 || cfg.EvictIdle < 0 {
		return nil, errors.New("socks5: limits and timeouts must not be negative")
	}
	for _, r := range cfg.UDPPorts {
		if r.Lo > r.Hi {
			return nil, fmt.Errorf("socks5: UDP port range %d-%d is empty", r.Lo, r.Hi)
		}
	}
	if cfg.UDPPorts == nil {
		cfg.UDPPorts = DefaultUDPPorts
	}
	setDefault := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	setDefault(&cfg.MaxHandshakesPerClient, DefaultMaxHandshakesPerClient)
	setDefault(&cfg.MaxHandshakes, DefaultMaxHandshakes)
	setDefault(&cfg.MaxSessions, DefaultMaxSessions)
	setDuration := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	setDuration(&cfg.EvictIdle, DefaultEvictIdle)
	setDuration(&cfg.IdleTimeout, DefaultIdleTimeout)
	setDuration(&cfg.HalfCloseTimeout, DefaultHalfCloseTimeout)
	if cfg.MaxAssociationsPerClient == 0 {
		cfg.MaxAssociationsPerClient = DefaultMaxAssociationsPerClient
	}
	if cfg.MaxConnectsPerClient == 0 {
		cfg.MaxConnectsPerClient = DefaultMaxConnectsPerClient
	}
	if cfg.HandshakeTimeout == 0 {
		cfg.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = min(DefaultDialTimeout, cfg.HandshakeTimeout*7/10)
	}
	if cfg.DialTimeout >= cfg.HandshakeTimeout {
		return nil, fmt.Errorf("socks5: dial timeout %v must be shorter than the handshake timeout %v, so that a failed dial is answered", cfg.DialTimeout, cfg.HandshakeTimeout)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if logger == nil {
		return nil, errors.New("socks5: nil logger")
	}
	s := &Server{cfg: cfg, log: logger}
	s.limits = limits{handshakes: cfg.MaxHandshakes, sessions: cfg.MaxSessions, evictIdle: cfg.EvictIdle}
	s.limits.perClient[kindHandshake] = cfg.MaxHandshakesPerClient
	s.limits.perClient[kindConnect] = cfg.MaxConnectsPerClient
	s.limits.perClient[kindAssociation] = cfg.MaxAssociationsPerClient
	s.authFailures.init()
	return s, nil
}

// Collector exports the server's counters; register it on the command's own
// registry.
func (s *Server) Collector() prometheus.Collector { return collector{&s.stats} }

// Refused is the number of sessions refused for cause c.
func (s *Server) Refused(c RefusalCause) uint64 { return s.stats.refused[c].Load() }

// Ended is the number of sessions the proxy ended for cause c.
func (s *Server) Ended(c EndCause) uint64 { return s.stats.ended[c].Load() }

// Dropped is the number of datagrams dropped for cause c.
func (s *Server) Dropped(c DropCause) uint64 { return s.stats.dropped[c].Load() }

// Serve accepts SOCKS5 sessions on ln until ctx ends or ln fails. It closes
// ln and every session it started, waits for all their goroutines, and
// returns nil if ctx ended, the accept error otherwise.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.dest.Store(newDestinations(addrPortOf(ln.Addr()), s.cfg.OwnAddrs))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var backoff time.Duration
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if !transientAcceptError(err) {
				ln.Close()
				return fmt.Errorf("socks5: accept: %w", err)
			}
			// Out of file descriptors or a connection aborted before it was
			// accepted: wait and retry, as net/http does, rather than stop.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.stats.refuse(s.log, RefusedAcceptFailed, "", err)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
		wg.Go(func() { s.serveConn(ctx, conn) })
	}
}

func transientAcceptError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() ||
		errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ECONNABORTED)
}

func (s *Server) serveConn(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	client := addrPortOf(conn.RemoteAddr())
	clientStr := client.String()
	now := time.Now()
	// Connections that have not finished the handshake are capped too: a
	// new one past a cap takes the place of the oldest (limits.go).
	hs, ok := s.sessions.admit(kindHandshake, client.Addr().Unmap(), now, s.limits, func() { conn.Close() })
	if ok != admitted {
		s.stats.refuse(s.log, RefusedHandshakeEvicted, clientStr, errors.New("handshake caps full"))
		return
	}
	conn.SetDeadline(now.Add(s.cfg.HandshakeTimeout))
	// The handshake is read through a small buffer, which the session keeps
	// reading through: a client that sends data before the reply (optimistic
	// data) loses none of it.
	br := bufio.NewReaderSize(conn, 512)
	req, err := s.handshake(conn, br, client.Addr().Unmap(), hs)
	if hs.evicted.Load() {
		s.stats.refuse(s.log, RefusedHandshakeEvicted, clientStr, err)
		return
	}
	s.sessions.release(hs)
	if err != nil {
		s.refuseHandshake(conn, clientStr, err)
		return
	}
	switch req.cmd {
	case cmdConnect:
		s.connect(ctx, conn, br, client, req.dst)
	case cmdUDPAssociate:
		s.associate(ctx, conn, br, client, req.dst)
	default:
		// RFC 1928 §6: X'07' for BIND and anything unknown.
		s.stats.refuse(s.log, RefusedCommand, clientStr, fmt.Errorf("command %d", req.cmd))
		conn.Write(appendReply(nil, repCommandNotSupported, Addr{}))
	}
}

// errAuthFailed, errAuthBackoff and errNoMethod are handshake outcomes
// already answered.
var (
	errAuthFailed  = errors.New("socks5: authentication failed")
	errAuthBackoff = errors.New("socks5: authentication refused unchecked: the address failed to log in just before (back-off)")
	errNoMethod    = errors.New("socks5: no acceptable authentication method")
)

func (s *Server) handshake(conn net.Conn, br *bufio.Reader, clientIP netip.Addr, hs *session) (request, error) {
	methods, err := readGreeting(br)
	if err != nil {
		return request{}, err
	}
	hs.touch(time.Now()) // greeted: evicted after those that have not

	want := byte(methodNoAuth)
	if s.cfg.Auth != nil {
		want = methodUserPass
	}
	found := false
	for _, m := range methods {
		found = found || m == want
	}
	if !found {
		return request{}, errNoMethod
	}
	if _, err := conn.Write([]byte{version5, want}); err != nil {
		return request{}, fmt.Errorf("writing method: %w", err)
	}
	if want == methodUserPass {
		user, pass, err := readUserPass(br)
		if err != nil {
			return request{}, err
		}
		now := time.Now()
		client := addrPortOf(conn.RemoteAddr()).String()
		if s.authFailures.blocked(clientIP, now) {
			s.authFailures.fail(s.log, clientIP, client, true, now)
			return request{}, errAuthBackoff
		}
		// Both comparisons always run so the time taken tells nothing.
		okUser := subtle.ConstantTimeCompare([]byte(user), []byte(s.cfg.Auth.Username))
		okPass := subtle.ConstantTimeCompare([]byte(pass), []byte(s.cfg.Auth.Password))
		if okUser&okPass != 1 {
			s.authFailures.fail(s.log, clientIP, client, false, now)
			return request{}, errAuthFailed
		}
		s.authFailures.succeed(clientIP)
		if _, err := conn.Write([]byte{userPassVersion, userPassSuccess}); err != nil {
			return request{}, fmt.Errorf("writing auth status: %w", err)
		}
	}
	return readRequest(br)
}

// refuseHandshake counts a failed handshake, then answers it with the RFC's
// reply where one exists (counting first, so that a client that has its
// answer finds the refusal counted).
func (s *Server) refuseHandshake(conn net.Conn, client string, err error) {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded):
		s.stats.refuse(s.log, RefusedHandshakeTimeout, client, err)
	case errors.Is(err, errNoMethod) || errors.Is(err, errNoMethods):
		// An empty method list has no acceptable method either. RFC 1928
		// §3: X'FF', then the client closes.
		s.stats.refuse(s.log, RefusedNoMethod, client, err)
		conn.Write([]byte{version5, methodNoAcceptable})
	case errors.Is(err, errAuthFailed), errors.Is(err, errAuthBackoff):
		// RFC 1929 §2: a failure status, then the server closes. Logged
		// per address, at a bounded rate, by the back-off table.
		cause := RefusedAuthFailed
		if errors.Is(err, errAuthBackoff) {
			cause = RefusedAuthBackoff
		}
		s.stats.refused[cause].Add(1)
		conn.Write([]byte{userPassVersion, userPassFailure})
	case errors.Is(err, errAuthVersion) || errors.Is(err, errEmptyField):
		s.stats.refuse(s.log, RefusedMalformed, client, err)
		conn.Write([]byte{userPassVersion, userPassFailure})
	case errors.Is(err, errAddrType):
		s.stats.refuse(s.log, RefusedAddressType, client, err)
		conn.Write(appendReply(nil, repAddrTypeNotSupport, Addr{}))
	case errors.Is(err, errVersion):
		s.stats.refuse(s.log, RefusedBadVersion, client, err)
		// A request (not a greeting) with a wrong version still gets a
		// general failure; for a greeting RFC 1928 defines no reply, and a
		// SOCKS4 client would misread one, so nothing is sent then.
		if errors.Is(err, errRequestVersion) {
			conn.Write(appendReply(nil, repGeneralFailure, Addr{}))
		}
	case errors.Is(err, errReserved) || errors.Is(err, errDomain):
		s.stats.refuse(s.log, RefusedMalformed, client, err)
		conn.Write(appendReply(nil, repGeneralFailure, Addr{}))
	default: // truncated: the peer closed mid-message, nobody to answer
		s.stats.refuse(s.log, RefusedMalformed, client, err)
	}
}

func addrPortOf(a net.Addr) netip.AddrPort {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.AddrPort()
	case *net.UDPAddr:
		return a.AddrPort()
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		// An address of no IP and port (a net.Pipe's "pipe"): the zero
		// AddrPort, which no address check admits.
		return netip.AddrPort{}
	}
	return ap
}

// ended releases a CONNECT's or an association's slot.
func (s *Server) endSession(sess *session) {
	s.sessions.release(sess)
	if f := s.sessionEnded.Load(); f != nil {
		(*f)()
	}
}

func (s *Server) portAllowed(p uint16) bool { return s.cfg.AllowedPorts.Contains(p) }

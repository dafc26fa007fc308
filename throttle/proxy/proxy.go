package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/circuit"
	"github.com/fairgrid/fairgrid/throttle/group"
	"github.com/fairgrid/fairgrid/throttle/proxy/socks5"
	"github.com/fairgrid/fairgrid/throttle/sidecar"
	"github.com/prometheus/client_golang/prometheus"
)

// Config is a proxy's own settings; the zero value serves loopback
// clients without credentials, with the defaults below.
type Config struct {
	// Username and Password, if Username is set, are the RFC 1929
	// credentials every client must give (Credentials reads them).
	Username, Password string
	// AllowPorts are the ports CONNECT reaches; empty means
	// DefaultAllowPorts.
	AllowPorts lludp.Ports
	// MaxAssociations and MaxConnects bound the UDP associations and
	// CONNECT sessions open at once per client address, MaxSessions both
	// in all; 0 means the default (DefaultMaxAssociations,
	// DefaultMaxConnects, DefaultMaxSessions).
	MaxAssociations, MaxConnects, MaxSessions int
	// UDPPorts are the ports the UDP relay sends to (the simulators');
	// empty means lludp.SimPorts.
	UDPPorts lludp.Ports
	// IdleTimeout ends a session that relays nothing for so long,
	// HalfCloseTimeout a CONNECT whose client finished sending and whose
	// remote stays silent for so long; 0 means the defaults.
	IdleTimeout, HalfCloseTimeout time.Duration
	// OwnAddrs are the process's own services (its metrics), which
	// CONNECT never reaches, nor the proxy's listener.
	OwnAddrs []netip.AddrPort
	// DryRun relays unchanged and sends nothing of fairgrid's own; the
	// sidecar measures, decides and logs what it would send.
	DryRun bool
}

// The defaults of Config's zero values.
var DefaultAllowPorts = socks5.DefaultAllowedPorts

const (
	DefaultMaxAssociations  = socks5.DefaultMaxAssociationsPerClient
	DefaultMaxConnects      = socks5.DefaultMaxConnectsPerClient
	DefaultMaxSessions      = socks5.DefaultMaxSessions
	DefaultIdleTimeout      = socks5.DefaultIdleTimeout
	DefaultHalfCloseTimeout = socks5.DefaultHalfCloseTimeout
)

// ErrPasswordFileAlone: a password file without a username to go with it.
var ErrPasswordFileAlone = errors.New("proxy.password_file (--password-file) needs proxy.username (--user)")

// CheckUsername checks the credentials' settings that need no password:
// the username (socks5.CheckCredential), and that a password file comes
// with a username. The configuration's validation and Credentials both
// use it.
func CheckUsername(user, passwordFile string) error {
	if user == "" {
		if passwordFile != "" {
			return ErrPasswordFileAlone
		}
		return nil
	}
	if err := socks5.CheckCredential(user); err != nil {
		return fmt.Errorf("proxy.username (--user): %w", err)
	}
	return nil
}

// Credentials reads the proxy's credentials: none without a username, or
// the username with the first line of passwordFile, else envPassword (a
// command line is visible to every user of the host, so the password is
// never one).
func Credentials(user, passwordFile, envPassword, envName string) (username, password string, err error) {
	if err := CheckUsername(user, passwordFile); err != nil {
		return "", "", err
	}
	if user == "" {
		return "", "", nil
	}
	password = envPassword
	if passwordFile != "" {
		b, err := os.ReadFile(passwordFile)
		if err != nil {
			return "", "", fmt.Errorf("proxy.password_file (--password-file): %w", err)
		}
		password, _, _ = strings.Cut(string(b), "\n")
		password = strings.TrimSuffix(password, "\r")
	}
	if password == "" {
		return "", "", fmt.Errorf("proxy.username (--user) %q needs a password: proxy.password_file (--password-file FILE) or $%s", user, envName)
	}
	if err := socks5.CheckCredential(password); err != nil {
		return "", "", fmt.Errorf("the password: %w", err)
	}
	return user, password, nil
}

// CheckListen resolves a listen address and refuses one beyond loopback
// without credentials (see socks5.CheckListen); it returns the address to
// listen on, so that what was checked is what is bound.
func (c Config) CheckListen(listen string) (string, error) {
	return socks5.CheckListen(listen, c.auth())
}

func (c Config) auth() *socks5.Auth {
	if c.Username == "" {
		return nil
	}
	return &socks5.Auth{Username: c.Username, Password: c.Password}
}

// buffer holds the datagrams relayed and not yet measured: at 5 Mbit/s of
// small datagrams, about a second's worth, in case the sidecar is
// descheduled (a datagram it misses would measure as a loss). bufferBytes
// bounds their payloads as well: 4096 datagrams of a simulator's 1 KB
// ImagePackets fit, and a client spraying 64 KB datagrams cannot make the
// buffer grow to a quarter of a gigabyte.
const (
	buffer      = 4096
	bufferBytes = buffer * 2048
)

// gatherEvery is how long the measurement lets relayed datagrams gather
// before it takes them (sidecar.PushSource): woken per datagram, the
// sidecar's reader would cost the relay a goroutine hand-off each (most of
// the proxy's CPU at a viewer's rates). Each gathering ends in a timer's
// wake-up of its own, so it is long enough to be rare beside the relay's
// own wake-ups (docs/proxy.md, Speed); a relay that fills half the buffer
// sooner wakes the reader early (TestPushSourceHalfFullWakesReader).
const gatherEvery = 100 * time.Millisecond

// Proxy is `fairgrid proxy`: a SOCKS 5 server whose hooks feed the sidecar
// what they relay and put its requests into the viewer's AgentThrottles,
// and the sidecar, which sends its own through the associations.
type Proxy struct {
	srv     *socks5.Server
	source  *sidecar.PushSource
	loop    *throttle.Loop
	sidecar *sidecar.Sidecar
	dryRun  bool
	log     *slog.Logger

	mu       sync.Mutex
	assocs   map[*socks5.Association]*association
	byViewer map[netip.AddrPort]*socks5.Association // the circuit's viewer endpoint → its association

	rewritten, beforeDecision, malformed atomic.Uint64
	malformedOnce                        sync.Once

	ln        net.Listener // AddTo's (under mu), closed by Close
	closeOnce sync.Once
	closeErr  error
}

// association is what the proxy keeps per SOCKS5 association.
type association struct {
	// local maps a remote address to the local address the relay socket
	// sends to it from, when the socket is bound to every address.
	local map[netip.Addr]netip.Addr

	// The client direction's own (the relay calls clientDatagrams one batch
	// at a time per association): the batch as measured, and the rewritten
	// AgentThrottle before it is copied over the viewer's.
	up      []lludp.Datagram
	rewrite []byte
	// The remote direction's own.
	down []lludp.Datagram
}

// New builds the SOCKS 5 server and the sidecar around sc.Loop; sc's
// Source and Sender are the proxy's (in a dry run the Sender is sc's
// own, one that logs), the rest (metrics, reloads, AfterTick) the
// caller's. Nothing starts until AddTo's group runs.
func New(cfg Config, sc sidecar.Config, log *slog.Logger) (*Proxy, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Proxy{source: sidecar.NewPushSource(buffer, bufferBytes, gatherEvery), loop: sc.Loop, dryRun: cfg.DryRun, log: log,
		assocs: map[*socks5.Association]*association{}, byViewer: map[netip.AddrPort]*socks5.Association{}}
	srv, err := socks5.New(cfg.socks5(hooks{p}), log.With("component", "socks5"))
	if err != nil {
		return nil, err
	}
	p.srv = srv
	sc.Source = p.source
	switch {
	case !cfg.DryRun:
		sc.Sender = p
	case sc.Sender == nil:
		return nil, errors.New("proxy: a dry run needs the sidecar's Sender (one that logs what it would send)")
	}
	if sc.Log == nil {
		sc.Log = log
	}
	if p.sidecar, err = sidecar.New(sc); err != nil {
		return nil, err
	}
	return p, nil
}

// socks5 is the server's configuration, with p's hooks.
func (c Config) socks5(hooks socks5.Hooks) socks5.Config {
	return socks5.Config{Auth: c.auth(), AllowedPorts: c.AllowPorts, MaxAssociationsPerClient: c.MaxAssociations,
		MaxConnectsPerClient: c.MaxConnects, MaxSessions: c.MaxSessions, UDPPorts: c.UDPPorts, IdleTimeout: c.IdleTimeout,
		HalfCloseTimeout: c.HalfCloseTimeout, OwnAddrs: c.OwnAddrs, Hooks: hooks}
}

// Sidecar is the proxy's sidecar (its reload counters, its loop).
func (p *Proxy) Sidecar() *sidecar.Sidecar { return p.sidecar }

// AddTo adds the proxy's members to the caller's group: the SOCKS 5
// server on ln, and the sidecar's. The first to fail stops the rest, and
// ln is closed when the group stops, or by Close if it never runs.
func (p *Proxy) AddTo(g *group.Group, ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	g.Add(func(ctx context.Context) error {
		if err := p.srv.Serve(ctx, ln); err != nil {
			return fmt.Errorf("socks5: %w", err)
		}
		return nil
	}, nil)
	p.sidecar.AddTo(g)
}

// Close releases what the proxy holds once its group has returned, or
// when it never ran: the listener AddTo was given and the sidecar's
// source. It may be called any number of times, and returns the
// listener's close error each time.
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		ln := p.ln
		p.mu.Unlock()
		if ln != nil {
			if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
				p.closeErr = err
			}
		}
		p.source.Close()
	})
	return p.closeErr
}

// Collectors are the proxy's metrics beside the loop's: the server's and
// the rewrite's.
func (p *Proxy) Collectors() []prometheus.Collector {
	outcome := func(name string, c *atomic.Uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "fairgrid_proxy_agent_throttles_total",
			Help:        "AgentThrottles the viewers sent, by outcome: rewritten to fairgrid's request, passed before its first decision, or passed because they did not decode.",
			ConstLabels: prometheus.Labels{"outcome": name}}, func() float64 { return float64(c.Load()) })
	}
	return []prometheus.Collector{p.srv.Collector(),
		outcome("rewritten", &p.rewritten), outcome("before_decision", &p.beforeDecision), outcome("malformed", &p.malformed),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "fairgrid_proxy_unmeasured_datagrams_total",
			Help: "Datagrams relayed but not measured because the measurement fell behind."}, func() float64 { return float64(p.source.Dropped()) })}
}

// Counts are the AgentThrottles the proxy saw, by outcome.
type Counts struct {
	Rewritten      uint64 // fairgrid's request put in
	BeforeDecision uint64 // relayed unchanged: no decision yet for the circuit
	Malformed      uint64 // relayed unchanged: it did not decode
}

// Counts returns the AgentThrottles seen so far, by outcome.
func (p *Proxy) Counts() Counts {
	return Counts{Rewritten: p.rewritten.Load(), BeforeDecision: p.beforeDecision.Load(), Malformed: p.malformed.Load()}
}

// state returns the association's state, made at its first datagram.
func (p *Proxy) state(a *socks5.Association) *association {
	st := p.assocs[a]
	if st == nil {
		st = &association{local: map[netip.Addr]netip.Addr{}}
		p.assocs[a] = st
	}
	return st
}

// viewerEndpointLocked is the association's endpoint as the simulator at
// remote sees it: the relay socket's port, from the address the host
// routes remote from. A circuit is keyed by it, as a capture on the host
// would key it, and the sender finds the association by it. p.mu is held.
func (p *Proxy) viewerEndpointLocked(a *socks5.Association, st *association, remote netip.AddrPort) netip.AddrPort {
	relay := a.RelayAddr()
	ip, ok := st.local[remote.Addr()]
	if !ok {
		ip = relay.Addr().Unmap()
		if ip.IsUnspecified() {
			ip = localAddrFor(remote, a.ClientAddr().Addr())
		}
		if len(st.local) >= maxRemotes {
			clear(st.local)
		}
		st.local[remote.Addr()] = ip
		p.byViewer[netip.AddrPortFrom(ip, relay.Port())] = a
	}
	return netip.AddrPortFrom(ip, relay.Port())
}

// maxRemotes bounds an association's cache of local addresses by remote:
// a viewer talks to the few simulators in view, and a client that sprays
// destinations must not grow it (the routing lookup is only repeated).
const maxRemotes = 256

// localAddrFor asks the host's routing which local address sends to
// remote (connecting a UDP socket sends nothing); fallback, the client's
// address, is right for a proxy on the viewer's own host.
func localAddrFor(remote netip.AddrPort, fallback netip.Addr) netip.Addr {
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(remote))
	if err != nil {
		return fallback
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap()
}

// clientDatagrams puts fairgrid's current request into each AgentThrottle
// the viewer sends, and hands what is forwarded to measurement: one lock
// for the batch's endpoints, one for the hand-off.
func (p *Proxy) clientDatagrams(a *socks5.Association, batch []socks5.Datagram) {
	p.mu.Lock()
	st := p.state(a)
	ds := st.up[:0]
	for _, d := range batch {
		ds = append(ds, lludp.Datagram{At: d.At, Src: p.viewerEndpointLocked(a, st, d.Remote), Dst: d.Remote})
	}
	p.mu.Unlock()
	for i := range batch {
		payload := batch[i].Payload
		if h, _, _, err := lludp.ParseHeader(payload); err == nil && h.ID == lludp.AgentThrottleID && !p.dryRun {
			if out, ok := p.rewrite(st, circuit.Key{Viewer: ds[i].Src, Sim: ds[i].Dst}, payload, ds[i].At); ok {
				// Over the viewer's own, so that each AgentThrottle of a
				// batch keeps its own.
				payload = append(payload[:0], out...)
				batch[i].Payload = payload
			}
		}
		ds[i].Payload = payload
	}
	p.source.PushBatch(ds)
	clear(ds) // the relay's buffers are not the proxy's to keep
	st.up = ds[:0]
}

// rewrite returns the AgentThrottle with fairgrid's request for k in its
// body (valid until the association's next rewrite), or false to relay it
// unchanged: before the first decision, or if it does not decode (the
// proxy never breaks a circuit it does not understand).
func (p *Proxy) rewrite(st *association, k circuit.Key, payload []byte, at time.Time) ([]byte, bool) {
	r, ok := p.loop.Request(k)
	if !ok {
		p.beforeDecision.Add(1)
		return nil, false
	}
	out, asked, err := lludp.AppendSwappedThrottles(st.rewrite[:0], payload, r.Throttles)
	if err != nil {
		p.malformed.Add(1)
		p.malformedOnce.Do(func() {
			p.log.Warn("an AgentThrottle did not decode: relayed unchanged (counted in fairgrid_proxy_agent_throttles_total{outcome=\"malformed\"})", "circuit", k, "err", err)
		})
		return nil, false
	}
	st.rewrite = out
	p.rewritten.Add(1)
	// Measurement sees the rewritten request: the viewer's own is told
	// apart, as its limit.
	p.loop.ViewerAsked(k, asked, at)
	return out, true
}

// remoteDatagrams measures what the simulators send.
func (p *Proxy) remoteDatagrams(a *socks5.Association, batch []socks5.Datagram) {
	p.mu.Lock()
	st := p.state(a)
	ds := st.down[:0]
	for _, d := range batch {
		ds = append(ds, lludp.Datagram{At: d.At, Src: d.Remote, Dst: p.viewerEndpointLocked(a, st, d.Remote), Payload: d.Payload})
	}
	p.mu.Unlock()
	p.source.PushBatch(ds)
	clear(ds)
	st.down = ds[:0]
}

// associationClosed forgets the association and its circuits: the viewer
// has gone, and the loop would otherwise go on deciding for it until
// capture.idle_timeout.
func (p *Proxy) associationClosed(a *socks5.Association) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.assocs, a)
	for ep, b := range p.byViewer {
		if b == a {
			delete(p.byViewer, ep)
			p.loop.ForgetViewer(ep)
		}
	}
}

// ErrNoAssociation: a request for a viewer whose association has closed
// since the loop decided it.
var ErrNoAssociation = errors.New("no association: the viewer has left")

// Send sends fairgrid's request from the association's relay socket, the
// endpoint the simulator knows, and measures it as forwarded.
func (p *Proxy) Send(_ context.Context, r throttle.Request) error {
	p.mu.Lock()
	a := p.byViewer[r.Circuit.Viewer]
	p.mu.Unlock()
	if a == nil {
		return fmt.Errorf("circuit %v: %w", r.Circuit, ErrNoAssociation)
	}
	b, err := r.Encode()
	if err != nil {
		return err
	}
	if err := a.WriteTo(b, r.Circuit.Sim); err != nil {
		return err
	}
	p.source.Push(lludp.Datagram{At: time.Now(), Src: r.Circuit.Viewer, Dst: r.Circuit.Sim, Payload: b})
	return nil
}

// hooks is the proxy as the relay's socks5.Hooks. It is unexported, as
// net/http's adapters are: its methods take the internal socks5 types,
// which no code outside the module could name.
type hooks struct{ p *Proxy }

func (h hooks) ClientDatagrams(a *socks5.Association, batch []socks5.Datagram) {
	h.p.clientDatagrams(a, batch)
}

func (h hooks) RemoteDatagrams(a *socks5.Association, batch []socks5.Datagram) {
	h.p.remoteDatagrams(a, batch)
}

func (h hooks) AssociationClosed(a *socks5.Association) { h.p.associationClosed(a) }

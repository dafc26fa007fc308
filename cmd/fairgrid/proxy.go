package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/capture/circuit"
	"github.com/fairgrid/fairgrid/configs"
	"github.com/fairgrid/fairgrid/internal/socks5"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const proxySynopsis = `[--listen ADDR] [--config FILE] [--check-config [FILE]] [--controller C] [--segment S] [--interval D] [--dry-run] [--metrics ADDR] [--log-level L]
       [--user U [--password-file F]] [--allow-ports LIST] [--max-associations N] [--max-connects N]

A SOCKS 5 proxy (RFC 1928, username/password RFC 1929) for Second Life
and OpenSim viewers, on any OS and without root. In the viewer: Preferences
> Network & Files > Proxy Settings > "Use SOCKS 5 proxy for UDP traffic",
host 127.0.0.1, port 1080. Each UDP association gets one relay socket,
the endpoint the simulator sees. The proxy measures every circuit as
fairgrid run does, replaces the body of every AgentThrottle the viewer
sends with fairgrid's current request (same sequence number, flags and
acks), and sends its periodic requests from the association's socket.
CONNECT carries the viewer's login, capabilities and event queue (HTTP),
to the ports --allow-ports lists.

The configuration file, the controller, the metrics and the logs are
those of fairgrid run (configs/fairgrid.toml; flags override it; SIGHUP
reloads it), and its [proxy] table holds the proxy's own settings, each
the key of a flag here (--listen is proxy.listen, --user proxy.username,
--password-file proxy.password_file, and so on); they are read at start,
and a reload names those that changed as needing a restart. The
[capture] interface is not used. --check-config validates the
configuration, the credentials included, and exits. --dry-run measures,
decides, logs and exports, and changes nothing in the viewer's traffic.

Security: --listen is loopback by default. Any other address needs a
username (--user) and a password, read from --password-file or from the
environment variable FAIRGRID_PROXY_PASSWORD, never from the command line
or the configuration file. UDP is accepted only from the client that made
the association; CONNECT only to the allowed ports (default 80, 443,
8002, 9000-13100, 12043, 12046); associations and CONNECTs are limited
per client address.`

// proxyPasswordEnv holds the proxy's password when no file names it: a
// command line is visible to every user of the host.
const proxyPasswordEnv = "FAIRGRID_PROXY_PASSWORD"

func runProxy(args []string, s stdio) int {
	fs, configPath, check := proxyFlags(s)
	if c, ok := parseFlagsArgs(fs, proxySynopsis, args, s); !ok {
		return c
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(s.err, "fairgrid proxy: "+format+"\n", a...)
		return code
	}
	if fs.NArg() > 0 {
		// `proxy --check-config FILE`, as for run.
		if !*check || fs.NArg() > 1 || *configPath != "" {
			return fail(exitUsage, "unexpected argument %q (a configuration file is given with --config FILE, or as the one argument of --check-config)", fs.Arg(fs.NArg()-1))
		}
		*configPath = fs.Arg(0)
	}
	f, err := loadProxyConfig(fs, *configPath)
	if err != nil {
		return fail(exitUsage, "configuration: %v", err)
	}
	auth, err := proxyCredentials(f, os.Getenv(proxyPasswordEnv))
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	if *check {
		fmt.Fprintln(s.out, "configuration ok")
		return exitOK
	}
	level := new(slog.LevelVar)
	log := slog.New(slog.NewTextHandler(s.err, &slog.HandlerOptions{Level: level}))
	cfg := throttle.SidecarConfig{Log: log}
	// SIGHUP reloads what can change live, as for fairgrid run, from the
	// file with the proxy's flags over it.
	hup, stopHUP := notifyReloads()
	defer stopHUP()
	p, d, err := buildProxy(f, auth, cfg, log, level)
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	// The proxy's reload reads its own flags over the file, as at start
	// (run's would name a proxy flag's key as changed at every reload).
	p.sidecarCfg.Reloads, p.sidecarCfg.Reload = hup, d.sidecarReload(func() (*configs.File, error) { return loadProxyConfig(fs, *configPath) })
	ln, err := net.Listen("tcp", f.Proxy.Listen)
	if err != nil {
		return fail(exitFail, "%v", err)
	}
	if f.Metrics.Address != "" {
		if p.sidecarCfg.MetricsListener, err = net.Listen("tcp", f.Metrics.Address); err != nil {
			ln.Close()
			return fail(exitFail, "metrics: %v", err)
		}
		p.sidecarCfg.Metrics = promhttp.HandlerFor(p.registry(d.metrics), promhttp.HandlerOpts{})
		if beyondLoopback(f.Metrics.Address) {
			log.Warn("metrics are served beyond loopback: circuits and agent IDs become visible to the network", "address", f.Metrics.Address)
		}
	}
	ctx, stop := runContext(0)
	defer stop()
	proxyProcs(os.Getenv("GOMAXPROCS"))
	log.Info("fairgrid proxy listening", "listen", ln.Addr().String(), "auth", auth != nil, "controller", f.Control.Controller, "dry_run", f.Send.DryRun, "procs", runtime.GOMAXPROCS(0))
	if err := p.run(ctx, ln); err != nil {
		log.Error("fairgrid proxy stopped", "err", err)
		return exitFail
	}
	log.Info("fairgrid proxy stopped")
	return exitOK
}

// proxyProcs runs the proxy's Go code on one core unless env (the
// GOMAXPROCS environment variable) sets a number. A viewer's traffic is
// far below what one core relays (over 100,000 datagrams a second), and
// the relay's work per wake-up is a few microseconds; with a second
// processor idle, the runtime wakes another thread at each datagram's
// wake-up to look for work that is not there (a futex call, and a
// thread on a second core that finds nothing). At 5 Mbit/s that was
// most of the proxy's system calls beside the relay's own
// (make bench-proxy; README, Speed).
func proxyProcs(env string) {
	if env == "" {
		runtime.GOMAXPROCS(1)
	}
}

// proxyFlags defines the proxy's flags; each [proxy] key's flag shows the
// built-in default.
func proxyFlags(s stdio) (fs *flag.FlagSet, configPath *string, check *bool) {
	fs = newFlagSet("proxy", proxySynopsis, s)
	def := configs.Default().Proxy
	fs.String("listen", def.Listen, "SOCKS5 listen address (beyond loopback only with --user); proxy.listen")
	configPath = fs.String("config", "", "configuration file (default: the built-in defaults, as in configs/fairgrid.toml)")
	check = fs.Bool("check-config", false, "validate the configuration and the credentials, and exit")
	fs.String("controller", "window", "window (window tracking), tfrc, or viewer (the stock rule)")
	segmentFlag(fs)
	fs.Duration("interval", 5*time.Second, "decision interval")
	fs.Bool("dry-run", false, "measure, decide, log and export; rewrite and send nothing")
	fs.String("metrics", "127.0.0.1:9101", "Prometheus metrics address (empty: none)")
	fs.String("log-level", "info", "debug, info, warn or error")
	fs.String("user", def.Username, "username clients must give (RFC 1929); the password comes from --password-file or $"+proxyPasswordEnv+"; proxy.username")
	fs.String("password-file", def.PasswordFile, "file holding the password (its first line); proxy.password_file")
	fs.String("allow-ports", strings.Join(def.AllowPorts, ","), "CONNECT ports and ranges, comma-separated; proxy.allow_ports")
	fs.Int("max-associations", def.MaxAssociations, "UDP associations open at once per client address; proxy.max_associations")
	fs.Int("max-connects", def.MaxConnects, "CONNECT sessions open at once per client address; proxy.max_connects")
	return fs, configPath, check
}

// proxyCredentials reads the proxy's credentials as f names them (the
// password from proxy.password_file, else envPass) and refuses a listen
// address beyond loopback without them.
func proxyCredentials(f *configs.File, envPass string) (*socks5.Auth, error) {
	auth, err := proxyAuth(f.Proxy.Username, f.Proxy.PasswordFile, envPass)
	if err != nil {
		return nil, err
	}
	if err := socks5.CheckListen(f.Proxy.Listen, auth); err != nil {
		return nil, fmt.Errorf("proxy.listen (--listen): %w", err)
	}
	return auth, nil
}

// buildProxy makes the daemon's loop and the proxy around it from f, with
// cfg's sidecar settings; nothing listens or runs yet.
func buildProxy(f *configs.File, auth *socks5.Auth, cfg throttle.SidecarConfig, log *slog.Logger, level *slog.LevelVar) (*proxy, *daemon, error) {
	d, err := newDaemon(f, log, level)
	if err != nil {
		return nil, nil, err
	}
	sc := f.SOCKS5()
	sc.Auth = auth
	p, err := newProxy(d.loop, sc, cfg, f.Send.DryRun, log)
	if err != nil {
		return nil, nil, err
	}
	p.collector = d.metrics
	return p, d, nil
}

// proxyKeys are the [proxy] keys: the proxy reads them once, at start, so
// a reload names each that changed as needing a restart.
var proxyKeys = []string{"proxy.listen", "proxy.allow_ports", "proxy.max_associations", "proxy.max_connects", "proxy.username", "proxy.password_file"}

// loadProxyConfig reads the configuration as run does, then sets the
// [proxy] keys the proxy's flags override. Each flag goes through its
// key's own check, and an error names both.
func loadProxyConfig(fs *flag.FlagSet, path string) (*configs.File, error) {
	f, err := loadDaemonConfig(fs, path)
	if err != nil {
		return nil, err
	}
	var errs []error
	flagErr := func(flag, key string, err error) {
		errs = append(errs, fmt.Errorf("--%s (%s): %w", flag, key, err))
	}
	fs.Visit(func(fl *flag.Flag) {
		v := fl.Value.String()
		switch fl.Name {
		case "listen":
			f.Proxy.Listen = v
			if err := configs.CheckProxyListen(v); err != nil {
				flagErr("listen", "proxy.listen", err)
			}
		case "allow-ports":
			f.Proxy.AllowPorts = strings.Split(v, ",")
			if _, err := configs.ParseAllowPorts(f.Proxy.AllowPorts); err != nil {
				flagErr("allow-ports", "proxy.allow_ports", err)
			}
		case "max-associations":
			f.Proxy.MaxAssociations = fl.Value.(flag.Getter).Get().(int)
			if err := configs.CheckSessionLimit(f.Proxy.MaxAssociations); err != nil {
				flagErr("max-associations", "proxy.max_associations", err)
			}
		case "max-connects":
			f.Proxy.MaxConnects = fl.Value.(flag.Getter).Get().(int)
			if err := configs.CheckSessionLimit(f.Proxy.MaxConnects); err != nil {
				flagErr("max-connects", "proxy.max_connects", err)
			}
		case "user":
			f.Proxy.Username = v
			if len(v) > 255 {
				flagErr("user", "proxy.username", fmt.Errorf("%d bytes: at most 255 bytes (RFC 1929)", len(v)))
			}
		case "password-file":
			f.Proxy.PasswordFile = v
		}
	})
	if f.Proxy.PasswordFile != "" && f.Proxy.Username == "" {
		errs = append(errs, errors.New("--password-file needs --user (proxy.password_file needs proxy.username)"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return f, f.Validate()
}

// proxyAuth reads the credentials: none, or a username with a password
// from the file or else the environment.
func proxyAuth(user, passFile, envPass string) (*socks5.Auth, error) {
	if user == "" {
		if passFile != "" {
			return nil, errors.New("--password-file needs --user (proxy.password_file needs proxy.username)")
		}
		return nil, nil
	}
	pass := envPass
	if passFile != "" {
		b, err := os.ReadFile(passFile)
		if err != nil {
			return nil, fmt.Errorf("--password-file (proxy.password_file): %w", err)
		}
		pass, _, _ = strings.Cut(string(b), "\n")
		pass = strings.TrimSuffix(pass, "\r")
	}
	if pass == "" {
		return nil, fmt.Errorf("--user (proxy.username) %q needs a password: --password-file FILE (proxy.password_file) or $%s", user, proxyPasswordEnv)
	}
	if len(user) > 255 || len(pass) > 255 {
		return nil, errors.New("--user and the password must each be at most 255 bytes (RFC 1929)")
	}
	return &socks5.Auth{Username: user, Password: pass}, nil
}

// proxyBuffer holds the datagrams relayed and not yet measured: at
// 5 Mbit/s of small datagrams, about a second's worth, in case the
// sidecar is descheduled (a datagram it misses would measure as a loss).
// proxyBufferBytes bounds their payloads as well: 4096 datagrams of a
// simulator's 1 KB ImagePackets fit, and a client spraying 64 KB
// datagrams cannot make the buffer grow to a quarter of a gigabyte.
const (
	proxyBuffer      = 4096
	proxyBufferBytes = proxyBuffer * 2048
)

// batchEvery is how long the measurement lets relayed datagrams gather
// before it takes them: woken per datagram, the sidecar's reader would
// cost the relay a goroutine hand-off each (most of the proxy's CPU at a
// viewer's rates). Each datagram carries its relay time, so measurement
// is as exact; the loop sees it at most this much later, which nothing
// the loop decides at intervals of seconds notices. Each gathering ends
// in a timer's wake-up of its own: at 20 ms that was a fifth of the
// proxy's wake-ups at 5 Mbit/s of 1 KB datagrams (perf trace: 50 a second
// beside the relay's 180). A relay that fills half the buffer sooner
// (above 20,000 datagrams a second) wakes the reader early
// (TestBatchSourceHalfFullWakesReader), so nothing is dropped at the
// proxy's full rate.
const batchEvery = 100 * time.Millisecond

// batchSource is the proxy's throttle.Source: the relay pushes what it
// forwards a batch at a time without blocking (a full buffer drops and
// counts, as throttle.ChanSource does), and Next hands the sidecar the
// datagrams gathered since its last batch. Payloads are copied into an
// arena the source reuses once the sidecar has read them, so measuring
// allocates nothing per datagram.
type batchSource struct {
	mu         sync.Mutex
	pending    []capture.Datagram
	arena      []byte // pending's payloads
	limit      int
	limitBytes int
	closed     bool
	wake       chan struct{} // a datagram arrived while the reader may wait
	half       chan struct{} // half the buffer is queued: the gathering ends
	done       chan struct{}
	once       sync.Once
	dropped    atomic.Uint64

	// The reader's own: the batch it is handing out and its payloads.
	batch      []capture.Datagram
	batchArena []byte
	next       int
	timer      *time.Timer
}

func newBatchSource(limit, limitBytes int) *batchSource {
	return &batchSource{limit: limit, limitBytes: limitBytes, wake: make(chan struct{}, 1), half: make(chan struct{}, 1), done: make(chan struct{})}
}

// Push queues a copy of d and reports whether it was queued: false when
// the buffer is full (counted) or the source closed.
func (s *batchSource) Push(d capture.Datagram) bool {
	return s.PushBatch([]capture.Datagram{d}) == 1
}

// PushBatch queues copies of ds, in order, under one lock, and returns how
// many it queued: those that do not fit are dropped and counted; none is
// queued once the source is closed.
func (s *batchSource) PushBatch(ds []capture.Datagram) int {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return 0
	}
	first := len(s.pending) == 0
	queued := 0
	for _, d := range ds {
		if len(s.pending) >= s.limit || len(s.arena)+len(d.Payload) > s.limitBytes {
			break
		}
		// A slice into an arena that append later moves still holds the
		// bytes copied here: the old array lives on as long as it does.
		start := len(s.arena)
		s.arena = append(s.arena, d.Payload...)
		d.Payload = s.arena[start:len(s.arena):len(s.arena)]
		s.pending = append(s.pending, d)
		queued++
	}
	half := len(s.pending) >= s.limit/2 || len(s.arena) >= s.limitBytes/2
	s.mu.Unlock()
	if half {
		select {
		case s.half <- struct{}{}:
		default:
		}
	}
	if queued < len(ds) {
		s.dropped.Add(uint64(len(ds) - queued))
	}
	if first && queued > 0 {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	return queued
}

// Next returns the next datagram pushed, in order, and
// throttle.ErrSourceClosed once the source is closed and drained. Its
// payload is valid until the following call.
//
// While datagrams flow, the reader sleeps batchEvery between batches and
// is woken only by its timer; after a batch comes up empty it waits for
// the next push, so an idle proxy's measurement does not wake at all.
func (s *batchSource) Next() (capture.Datagram, error) {
	for s.next >= len(s.batch) {
		flowing := len(s.batch) > 0
		// The batch handed out is read: its memory goes back to the pushers.
		clear(s.batch)
		s.batch, s.next = s.batch[:0], 0
		if flowing && !s.sleep() {
			continue // closed: drain what is queued
		}
		s.mu.Lock()
		s.batch, s.pending = s.pending, s.batch
		s.batchArena, s.arena = s.arena, s.batchArena[:0]
		closed := s.closed
		s.mu.Unlock()
		if len(s.batch) > 0 {
			break
		}
		if closed {
			return capture.Datagram{}, throttle.ErrSourceClosed
		}
		select {
		case <-s.wake:
		case <-s.done:
		}
	}
	d := s.batch[s.next]
	s.next++
	return d, nil
}

// sleep lets datagrams gather for batchEvery, or until half the buffer
// is queued; false if the source closed meanwhile.
func (s *batchSource) sleep() bool {
	if s.timer == nil {
		s.timer = time.NewTimer(batchEvery)
	} else {
		s.timer.Reset(batchEvery)
	}
	select {
	case <-s.timer.C:
		return true
	case <-s.half:
		s.timer.Stop()
		return true
	case <-s.done:
		return false
	}
}

// Close ends the source: Push refuses, Next returns what is queued, then
// throttle.ErrSourceClosed.
func (s *batchSource) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(s.done)
	})
	return nil
}

// Dropped counts datagrams Push dropped because the buffer was full.
func (s *batchSource) Dropped() uint64 { return s.dropped.Load() }

// proxy is `fairgrid proxy`'s wiring: the SOCKS5 server's hooks feed the
// sidecar what they relay and put its requests into the viewer's
// AgentThrottles; the sidecar sends its own through the associations.
type proxy struct {
	srv        *socks5.Server
	source     *batchSource
	loop       *throttle.Loop
	sidecarCfg throttle.SidecarConfig
	dryRun     bool
	log        *slog.Logger
	// collector, if set, exports the sidecar's reload outcomes once run
	// has made it.
	collector *throttle.Collector

	mu       sync.Mutex
	assocs   map[*socks5.Association]*association
	byViewer map[netip.AddrPort]*socks5.Association // the circuit's viewer endpoint → its association

	rewritten, beforeDecision, malformed atomic.Uint64
	malformedOnce                        sync.Once
}

// association is what the proxy keeps per SOCKS5 association.
type association struct {
	// local maps a remote address to the local address the relay socket
	// sends to it from, when the socket is bound to every address.
	local map[netip.Addr]netip.Addr

	// The client direction's own (the relay calls ClientDatagrams one batch
	// at a time per association): the batch as measured, and the rewritten
	// AgentThrottle before it is copied over the viewer's.
	up      []capture.Datagram
	rewrite []byte
	// The remote direction's own.
	down []capture.Datagram
}

// newProxy builds the server and the sidecar around loop; sc's Loop,
// Source and Sender are the proxy's. The sidecar starts with run.
func newProxy(loop *throttle.Loop, sc socks5.Config, cfg throttle.SidecarConfig, dryRun bool, log *slog.Logger) (*proxy, error) {
	p := &proxy{source: newBatchSource(proxyBuffer, proxyBufferBytes), loop: loop, dryRun: dryRun, log: log,
		assocs: map[*socks5.Association]*association{}, byViewer: map[netip.AddrPort]*socks5.Association{}}
	sc.Hooks = p
	srv, err := socks5.New(sc, log.With("component", "socks5"))
	if err != nil {
		return nil, err
	}
	p.srv = srv
	cfg.Loop, cfg.Source, cfg.Sender = loop, p.source, p
	if dryRun {
		cfg.Sender = dryRunSender{log}
	}
	p.sidecarCfg = cfg
	return p, nil
}

// registry is the proxy's metrics: the daemon's, the server's and the
// rewrite's, in one registry.
func (p *proxy) registry(own prometheus.Collector) *prometheus.Registry {
	reg := registry(own)
	reg.MustRegister(p.srv.Collector())
	outcome := func(name string, c *atomic.Uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "fairgrid_proxy_agent_throttles_total",
			Help:        "AgentThrottles the viewers sent, by outcome: rewritten to fairgrid's request, passed before its first decision, or passed because they did not decode.",
			ConstLabels: prometheus.Labels{"outcome": name}}, func() float64 { return float64(c.Load()) })
	}
	reg.MustRegister(outcome("rewritten", &p.rewritten), outcome("before_decision", &p.beforeDecision), outcome("malformed", &p.malformed),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "fairgrid_proxy_unmeasured_datagrams_total",
			Help: "Datagrams relayed but not measured because the measurement fell behind."}, func() float64 { return float64(p.source.Dropped()) }))
	return reg
}

// run serves SOCKS5 on ln and runs the sidecar until ctx ends or either
// fails; it returns the first failure once both have stopped.
func (p *proxy) run(ctx context.Context, ln net.Listener) error {
	sc, err := throttle.NewSidecar(p.sidecarCfg)
	if err != nil {
		ln.Close()
		return err
	}
	if p.collector != nil {
		p.collector.Reloads = sc.ReloadStats
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() {
		err := p.srv.Serve(ctx, ln)
		cancel()
		served <- err
	}()
	err = sc.Run(ctx)
	cancel()
	if serr := <-served; err == nil && serr != nil {
		err = fmt.Errorf("socks5: %w", serr)
	}
	return err
}

// state returns the association's state, made at its first datagram.
func (p *proxy) state(a *socks5.Association) *association {
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
func (p *proxy) viewerEndpointLocked(a *socks5.Association, st *association, remote netip.AddrPort) netip.AddrPort {
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

// ClientDatagrams puts fairgrid's current request into each AgentThrottle
// the viewer sends, and hands what is forwarded to measurement: one lock
// for the batch's endpoints, one for the hand-off.
func (p *proxy) ClientDatagrams(a *socks5.Association, batch []socks5.Datagram) {
	p.mu.Lock()
	st := p.state(a)
	ds := st.up[:0]
	for _, d := range batch {
		ds = append(ds, capture.Datagram{At: d.At, Src: p.viewerEndpointLocked(a, st, d.Remote), Dst: d.Remote})
	}
	p.mu.Unlock()
	for i := range batch {
		payload := batch[i].Payload
		if h, _, _, err := lludp.ParseHeader(payload); err == nil && h.ID == lludp.AgentThrottleID && !p.dryRun {
			if out, ok := p.rewrite(st, circuit.Key{Viewer: ds[i].Src, Sim: ds[i].Dst}, payload); ok {
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
func (p *proxy) rewrite(st *association, k circuit.Key, payload []byte) ([]byte, bool) {
	r, ok := p.loop.Request(k)
	if !ok {
		p.beforeDecision.Add(1)
		return nil, false
	}
	out, err := lludp.AppendReplacedThrottles(st.rewrite[:0], payload, r.Throttles)
	if err != nil {
		p.malformed.Add(1)
		p.malformedOnce.Do(func() {
			p.log.Warn("an AgentThrottle did not decode: relayed unchanged (counted in fairgrid_proxy_agent_throttles_total{outcome=\"malformed\"})", "circuit", k, "err", err)
		})
		return nil, false
	}
	st.rewrite = out
	p.rewritten.Add(1)
	return out, true
}

// RemoteDatagrams measures what the simulators send.
func (p *proxy) RemoteDatagrams(a *socks5.Association, batch []socks5.Datagram) {
	p.mu.Lock()
	st := p.state(a)
	ds := st.down[:0]
	for _, d := range batch {
		ds = append(ds, capture.Datagram{At: d.At, Src: d.Remote, Dst: p.viewerEndpointLocked(a, st, d.Remote), Payload: d.Payload})
	}
	p.mu.Unlock()
	p.source.PushBatch(ds)
	clear(ds)
	st.down = ds[:0]
}

// AssociationClosed forgets the association and its circuits: the viewer
// has gone, and the loop would otherwise go on deciding for it until
// capture.idle_timeout.
func (p *proxy) AssociationClosed(a *socks5.Association) {
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

// errNoAssociation: a request for a viewer whose association has closed
// since the loop decided it.
var errNoAssociation = errors.New("no association: the viewer has left")

// Send sends fairgrid's request from the association's relay socket, the
// endpoint the simulator knows, and measures it as forwarded.
func (p *proxy) Send(_ context.Context, r throttle.Request) error {
	p.mu.Lock()
	a := p.byViewer[r.Circuit.Viewer]
	p.mu.Unlock()
	if a == nil {
		return fmt.Errorf("circuit %v: %w", r.Circuit, errNoAssociation)
	}
	b, err := r.Encode()
	if err != nil {
		return err
	}
	if err := a.WriteTo(b, r.Circuit.Sim); err != nil {
		return err
	}
	p.source.Push(capture.Datagram{At: time.Now(), Src: r.Circuit.Viewer, Dst: r.Circuit.Sim, Payload: b})
	return nil
}

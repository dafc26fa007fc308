package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"syscall"
	"time"

	"github.com/fairgrid/fairgrid/configs"
	"github.com/fairgrid/fairgrid/throttle/group"
	"github.com/fairgrid/fairgrid/throttle/proxy"
	"github.com/fairgrid/fairgrid/throttle/sidecar"
	"github.com/fairgrid/fairgrid/throttle/status"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const proxySynopsis = `[--listen ADDR] [--config FILE] [--check-config [FILE]] [--controller C] [--segment S] [--interval D] [--dry-run] [--metrics ADDR] [--log-level L] [--log-format F]
       [--user U [--password-file F]] [--allow-ports LIST] [--sim-ports LIST] [--max-associations N] [--max-connects N]

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

Security: --listen is loopback by default. Any other address (a name is
resolved first) needs a username (--user) and a password, read from
--password-file or from the environment variable FAIRGRID_PROXY_PASSWORD,
never from the command line or the configuration file. UDP is accepted
only from the client that made the association and goes only to the
simulator ports (--sim-ports, capture.ports); CONNECT only to the allowed ports
(default 80, 443, 8002, 9000-13100, 12043, 12046) and, beyond loopback,
never to the host's loopback, link-local addresses or the proxy's own.
Sessions are capped per client address and in all (proxy.max_sessions),
idle ones end (proxy.idle_timeout, proxy.half_close_timeout), and failed
logins back off per address: docs/proxy.md.`

// proxyPasswordEnv holds the proxy's password when no file names it: a
// command line is visible to every user of the host.
const proxyPasswordEnv = "FAIRGRID_PROXY_PASSWORD"

func runProxy(args []string, s stdio) int {
	fs, set, configPath, check := proxyFlags(s)
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
	f, err := set.load(*configPath)
	if err != nil {
		return fail(exitUsage, "configuration: %v", err)
	}
	pc, listen, err := proxyConfig(f, os.Getenv(proxyPasswordEnv))
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	if *check {
		fmt.Fprintln(s.out, "configuration ok")
		return exitOK
	}
	level := new(slog.LevelVar)
	log := newLogger(s.err, f.Log.Format, level)
	// SIGHUP reloads what can change live, as for fairgrid run, from the
	// file with the proxy's flags over it (run's flags would name a proxy
	// flag's key as changed at every reload).
	hup, stopHUP := sidecar.NotifyReloads()
	defer stopHUP()
	d, err := newDaemon(f, func() (*configs.File, error) { return set.load(*configPath) }, log, level)
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	sc := sidecar.Config{Loop: d.Loop, Log: log, Reloads: hup, Reloader: d.Running}
	if pc.DryRun {
		sc.Sender = sidecar.DryRunSender{Log: log}
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fail(exitFail, "SOCKS 5 on %s (proxy.listen): the address is in use, perhaps by another proxy; choose another with --listen ADDR", listen)
		}
		return fail(exitFail, "SOCKS 5 on %s (proxy.listen, --listen): %v", listen, err)
	}
	if !f.Metrics.ProxyAddress.IsZero() {
		if sc.MetricsListener, err = metricsListener(f.Metrics.ProxyAddress.String(), "metrics.proxy_address"); err != nil {
			ln.Close()
			return fail(exitFail, "%v", err)
		}
		if !f.Metrics.ProxyAddress.Loopback() {
			log.Warn("metrics are served beyond loopback: circuits and agent IDs become visible to the network", "address", f.Metrics.ProxyAddress)
		}
	}
	p, page, _, err := newProxy(d, pc, sc, log)
	if err != nil {
		ln.Close()
		if sc.MetricsListener != nil {
			sc.MetricsListener.Close()
		}
		return fail(exitUsage, "%v", err)
	}
	ctx, stop := runContext(0, logNotice(log))
	defer stop()
	proxyProcs(os.Getenv("GOMAXPROCS"))
	log.Info("fairgrid proxy listening", "listen", ln.Addr().String(), "auth", pc.Username != "", "controller", f.Control.Controller, "dry_run", pc.DryRun, "procs", runtime.GOMAXPROCS(0))
	var g group.Group
	p.AddTo(&g, ln)
	addStatus(&g, page)
	if err := g.Run(ctx); err != nil {
		log.Error("fairgrid proxy stopped", "err", err)
		return exitFail
	}
	log.Info("fairgrid proxy stopped", append(page.Summary(time.Now()).Attrs(), "viewer_throttles_rewritten", p.Counts().Rewritten)...)
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
// (make bench-proxy; docs/speed.md).
func proxyProcs(env string) {
	if env == "" {
		runtime.GOMAXPROCS(1)
	}
}

// proxyFlags defines the proxy's flags: run's, and one for each of the
// [proxy] keys a command line needs.
func proxyFlags(s stdio) (fs *flag.FlagSet, set *settings, configPath *string, check *bool) {
	fs = newFlagSet("proxy", proxySynopsis, s)
	configPath, check = configFlags(fs)
	set = bindSettings(fs, append(frontEndSettings(metricsKey("proxy")), dryRunSetting,
		setting{"listen", "proxy.listen", "SOCKS5 listen `address` (beyond loopback only with --user)"},
		setting{"user", "proxy.username", "`username` clients must give (RFC 1929); the password comes from --password-file or $" + proxyPasswordEnv},
		setting{"password-file", "proxy.password_file", "`file` holding the password (its first line)"},
		setting{"allow-ports", "proxy.allow_ports", "CONNECT `ports` and ranges, comma-separated"},
		setting{"sim-ports", "capture.ports", "the simulators' UDP `ports` and ranges, comma-separated: the only ones the relay sends to"},
		setting{"max-associations", "proxy.max_associations", "UDP associations open at once per client address"},
		setting{"max-connects", "proxy.max_connects", "CONNECT sessions open at once per client address"})...)
	return fs, set, configPath, check
}

// proxyConfig is the proxy's configuration from f, with its credentials
// (the password from proxy.password_file, else envPass), and the address
// to listen on: proxy.listen resolved, refused beyond loopback without
// credentials.
func proxyConfig(f *configs.File, envPass string) (proxy.Config, string, error) {
	pc := f.ProxyConfig()
	var err error
	if pc.Username, pc.Password, err = proxy.Credentials(f.Proxy.Username, f.Proxy.PasswordFile, envPass, proxyPasswordEnv); err != nil {
		return proxy.Config{}, "", err
	}
	listen, err := pc.CheckListen(string(f.Proxy.Listen))
	if err != nil {
		return proxy.Config{}, "", fmt.Errorf("proxy.listen (--listen): %w", err)
	}
	return pc, listen, nil
}

// newProxy builds the proxy around d's loop with sc's sidecar settings,
// and its metrics (the daemon's, the process's and the proxy's) on sc's
// listener if it has one, and its live page. Nothing listens or runs
// yet.
func newProxy(d *daemon, pc proxy.Config, sc sidecar.Config, log *slog.Logger) (*proxy.Proxy, *status.Page, *prometheus.Registry, error) {
	sc.Loop = d.Loop
	reg := sidecar.Registry(d.Metrics)
	page := loopPage("proxy", d.Loop, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), listenHealth("the SOCKS 5 proxy"), log)
	if sc.MetricsListener != nil {
		sc.Metrics = page
	}
	p, err := proxy.New(pc, sc, log)
	if err != nil {
		return nil, nil, nil, err
	}
	reg.MustRegister(p.Collectors()...)
	d.Metrics.Reloads = p.Sidecar().ReloadStats
	return p, page, reg, nil
}

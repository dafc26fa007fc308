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
	"github.com/fairgrid/fairgrid/internal/cli"
	"github.com/fairgrid/fairgrid/throttle/group"
	"github.com/fairgrid/fairgrid/throttle/proxy"
	"github.com/fairgrid/fairgrid/throttle/sidecar"
	"github.com/fairgrid/fairgrid/throttle/status"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func runProxy(args []string, s stdio) int {
	fs, set, configPath, check := proxyFlags(s)
	if c, ok := parseFlagsArgs(fs, cli.ProxySynopsis, args, s); !ok {
		return c
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(s.err, "fairgrid proxy: "+format+"\n", a...)
		return code
	}
	if err := cli.ConfigArg(fs, configPath, *check); err != nil {
		return fail(exitUsage, "%v", err)
	}
	f, err := set.Load(*configPath)
	if err != nil {
		return fail(exitUsage, "configuration: %v", err)
	}
	pc, listen, err := cli.ProxyConfig(f, os.Getenv(cli.ProxyPasswordEnv))
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	if *check {
		fmt.Fprintln(s.out, "configuration ok")
		return exitOK
	}
	level := new(slog.LevelVar)
	log := cli.NewLogger(s.err, f.Log.Format, level)
	// SIGHUP reloads what can change live, as for fairgrid run, from the
	// file with the proxy's flags over it (run's flags would name a proxy
	// flag's key as changed at every reload).
	hup, stopHUP := sidecar.NotifyReloads()
	defer stopHUP()
	d, err := newDaemon(f, func() (*configs.File, error) { return set.Load(*configPath) }, log, level)
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
		if sc.MetricsListener, err = cli.MetricsListener(f.Metrics.ProxyAddress.String(), "metrics.proxy_address"); err != nil {
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
	ctx, stop := cli.RunContext(0, cli.LogNotice(log))
	defer stop()
	proxy.SetProcs(os.Getenv("GOMAXPROCS"))
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

// proxyFlags defines the proxy's flags: run's, and one for each of the
// [proxy] keys a command line needs.
func proxyFlags(s stdio) (fs *flag.FlagSet, set *cli.Settings, configPath *string, check *bool) {
	fs = newFlagSet("proxy", cli.ProxySynopsis, s)
	configPath, check = cli.ConfigFlags(fs)
	set = cli.BindSettings(fs, cli.ProxySettings()...)
	return fs, set, configPath, check
}

// newProxy builds the proxy around d's loop with sc's sidecar settings,
// and its metrics (the daemon's, the process's and the proxy's) on sc's
// listener if it has one, and its live page. Nothing listens or runs
// yet.
func newProxy(d *daemon, pc proxy.Config, sc sidecar.Config, log *slog.Logger) (*proxy.Proxy, *status.Page, *prometheus.Registry, error) {
	sc.Loop = d.Loop
	reg := sidecar.Registry(d.Metrics)
	page := loopPage("proxy", d.Loop, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), status.ListenHealth("the SOCKS 5 proxy"), log)
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

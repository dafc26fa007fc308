package main

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/fairgrid/fairgrid/configs"
	"github.com/fairgrid/fairgrid/internal/lifecycletest"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/fairgrid/fairgrid/throttle/group"
	"github.com/fairgrid/fairgrid/throttle/proxy"
	"github.com/fairgrid/fairgrid/throttle/sidecar"
	"github.com/prometheus/client_golang/prometheus"
)

// runTestProxy runs the proxy around d as the command wires it (newProxy,
// one group) on a free loopback port until the test ends; the group's
// error fails the test.
func runTestProxy(t *testing.T, d *daemon, pc proxy.Config, sc sidecar.Config) (*proxy.Proxy, *prometheus.Registry, string) {
	t.Helper()
	if pc.UDPPorts == nil {
		pc.UDPPorts = testSimPorts
	}
	return runTestProxyOn(t, "127.0.0.1:0", d, pc, sc)
}

// runTestProxyOn is runTestProxy listening on listen.
func runTestProxyOn(t *testing.T, listen string, d *daemon, pc proxy.Config, sc sidecar.Config) (*proxy.Proxy, *prometheus.Registry, string) {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	if sc.Log == nil {
		sc.Log = log
	}
	p, _, reg, err := newProxy(d, pc, sc, log)
	if err != nil {
		t.Fatal(err)
	}
	return p, reg, lifecycletest.Serve(t, listen, func(g *group.Group, ln net.Listener) { p.AddTo(g, ln) })
}

// testSimPorts let the relay send to the tests' regions, which listen on
// ephemeral ports rather than the simulator ports.
var testSimPorts = lludp.Ports{{Lo: 1, Hi: 65535}}

// TestProxyMetrics: one registry holds the loop's, the server's and the
// rewrite's metrics.
func TestProxyMetrics(t *testing.T) {
	d, err := newDaemon(configs.Default(), nil, slog.New(slog.DiscardHandler), new(slog.LevelVar))
	if err != nil {
		t.Fatal(err)
	}
	_, reg, _ := runTestProxy(t, d, proxy.Config{}, sidecar.Config{})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, want := range []string{"fairgrid_proxy_agent_throttles_total", "fairgrid_proxy_unmeasured_datagrams_total",
		"fairgrid_proxy_associations", "fairgrid_proxy_relayed_datagrams_total", "process_resident_memory_bytes"} {
		if !names[want] {
			t.Errorf("no %s among %d metrics", want, len(names))
		}
	}
}

// TestViewerCommandThroughProxy: `fairgrid viewer --socks5` logs in to a
// region through the proxy (exit 0 means it did), with and without
// username/password; a wrong password fails with exit 1.
func TestViewerCommandThroughProxy(t *testing.T) {
	auth := proxy.Config{Username: "viewer", Password: "secret"}
	for _, tc := range []struct {
		name   string
		server proxy.Config
		flags  []string
		code   int
		want   string
	}{
		{"no auth", proxy.Config{}, nil, exitOK, "received"},
		{"auth", auth, []string{"--socks5-user", "viewer", "--socks5-pass", "secret"}, exitOK, "received"},
		{"wrong password", auth, []string{"--socks5-user", "viewer", "--socks5-pass", "guess"}, exitFail, "socks5"},
	} {
		// Not parallel: circuit.NewTracker races with itself (fastBodies
		// encodes shared values), and each run builds two.
		t.Run(tc.name, func(t *testing.T) {
			log := slog.New(slog.DiscardHandler)
			sim, err := region.New(region.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Activity: region.Walking}, log)
			if err != nil {
				t.Fatal(err)
			}
			d, err := newDaemon(configs.Default(), nil, log, new(slog.LevelVar))
			if err != nil {
				t.Fatal(err)
			}
			_, _, addr := runTestProxy(t, d, tc.server, sidecar.Config{})
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Go(func() { sim.Run(ctx) })
			args := append([]string{"viewer", "--sim", sim.Addr().String(), "--socks5", addr, "--duration", "1s"}, tc.flags...)
			code, out, errOut := runCmd(t, "", args...)
			cancel()
			wg.Wait()
			if code != tc.code || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d with %q", code, out, errOut, tc.code, tc.want)
			}
		})
	}
}

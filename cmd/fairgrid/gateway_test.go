package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fairgrid/fairgrid/configs"
	"github.com/fairgrid/fairgrid/internal/cli"
	"github.com/fairgrid/fairgrid/internal/lab/viewer"
	"github.com/fairgrid/fairgrid/opensim/gateway"
	"github.com/fairgrid/fairgrid/opensim/gateway/gatewaytest"
	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/sidecar"
)

// TestGatewayRefused: bad command lines and configurations are refused
// with exit 2 and a message naming the flag or key, before anything binds.
func TestGatewayRefused(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("[gateway]\nmax_viewers = 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	route := []string{"--listen", "127.0.0.1:9300", "--region", "127.0.0.1:9000"}
	loops := filepath.Join(dir, "loops.toml")
	if err := os.WriteFile(loops, []byte("[gateway]\nroutes = [\"127.0.0.1:9300=127.0.0.1:9301\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no region", nil, "no region"},
		{"listen alone", []string{"--listen", "127.0.0.1:9300"}, "--listen and --region go together"},
		{"region alone", []string{"--region", "127.0.0.1:9000"}, "--listen and --region go together"},
		{"region unspecified", []string{"--listen", "127.0.0.1:9300", "--region", "0.0.0.0:9000"}, "gateway.routes"},
		{"listen not an address", []string{"--listen", "gateway", "--region", "127.0.0.1:9000"}, "gateway.routes"},
		{"controller", append([]string{"--controller", "bbr"}, route...), "control.controller"},
		{"segment", append([]string{"--segment", "jumbo"}, route...), "control.segment"},
		{"interval", append([]string{"--interval", "1ms"}, route...), "control.interval"},
		{"scene max", append([]string{"--scene-max", "0"}, route...), "--scene-max"},
		{"bind", append([]string{"--bind", "here"}, route...), "gateway.bind"},
		{"metrics", append([]string{"--metrics", "nowhere"}, route...), "metrics.gateway_address"},
		{"log level", append([]string{"--log-level", "loud"}, route...), "log.level"},
		{"log format", append([]string{"--log-format", "yaml"}, route...), "log.format"},
		{"config", append([]string{"--config", bad}, route...), "gateway.max_viewers"},
		{"argument is the file to check", append([]string{"extra"}, route...), `open extra`},
		// Issue 34, item 5: the routes that turn the gateway on itself.
		{"self-loop", []string{"--listen", "127.0.0.1:9300", "--region", "127.0.0.1:9300"}, "the route's own listen address"},
		{"self-loop through 0.0.0.0", []string{"--listen", "0.0.0.0:9300", "--region", "127.0.0.1:9300"}, "the route's own listen address"},
		{"loop between routes", []string{"--config", loops, "--listen", "127.0.0.1:9301", "--region", "127.0.0.1:9000"}, "a loop between routes"},
		{"broadcast region", []string{"--listen", "127.0.0.1:9300", "--region", "255.255.255.255:9000"}, "broadcast"},
		{"multicast region", []string{"--listen", "127.0.0.1:9300", "--region", "239.0.0.1:9000"}, "multicast"},
		{"metrics off loopback", append([]string{"--metrics", "0.0.0.0:9103"}, route...), "gateway.metrics_public"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCmd(t, "", append([]string{"gateway", "--check-config"}, tc.args...)...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) || out != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and %q", code, out, errOut, tc.want)
			}
		})
	}
	if code, _, errOut := runCmd(t, "", append([]string{"gateway", "extra"}, route...)...); code != exitUsage || !strings.Contains(errOut, `unexpected argument "extra"`) {
		t.Errorf("an argument: exit %d, %q", code, errOut)
	}
	if code, out, errOut := runCmd(t, "", append([]string{"gateway", "--check-config"}, route...)...); code != exitOK || out != "configuration ok\n" {
		t.Errorf("a good command line: exit %d, %q %q", code, out, errOut)
	}
	// A region port of a well-known service is warned about, not refused.
	for _, port := range []string{"22", "53"} {
		code, out, errOut := runCmd(t, "", "gateway", "--check-config", "--listen", "127.0.0.1:9300", "--region", "127.0.0.1:"+port)
		if code != exitOK || out != "configuration ok\n" || !strings.Contains(errOut, "warning: route 0: region port "+port+" is outside the simulator range") {
			t.Errorf("region port %s: exit %d, %q %q; want ok and a warning", port, code, out, errOut)
		}
	}
	good := filepath.Join(dir, "good.toml")
	if err := os.WriteFile(good, []byte("[gateway]\nroutes = [\"127.0.0.1:9300=127.0.0.1:9000\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCmd(t, "", "gateway", "--check-config", good); code != exitOK || out != "configuration ok\n" {
		t.Errorf("--check-config FILE: exit %d, %q %q", code, out, errOut)
	}
}

// TestGatewayFlags: each flag changes the gateway's configuration.
func TestGatewayFlags(t *testing.T) {
	route := []string{"--listen", "127.0.0.1:9300", "--region", "127.0.0.1:9000"}
	parse := func(args ...string) (*configs.File, gateway.Config) {
		t.Helper()
		c := gatewayFlags(stdio{nil, io.Discard, io.Discard})
		if err := c.fs.Parse(append(route, args...)); err != nil {
			t.Fatal(err)
		}
		f, cfg, err := c.Load()
		if err != nil {
			t.Fatal(err)
		}
		return f, cfg
	}
	f0, base := parse()
	if len(base.Routes) != 1 || base.Routes[0] != (gateway.Route{Listen: netip.MustParseAddrPort("127.0.0.1:9300"), Region: netip.MustParseAddrPort("127.0.0.1:9000")}) {
		t.Errorf("--listen/--region: routes %v", base.Routes)
	}
	for _, tc := range []struct {
		args  []string
		check func(*configs.File, gateway.Config) bool
	}{
		{[]string{"--controller", "tfrc"}, func(_ *configs.File, c gateway.Config) bool { return c.Control.Controller == throttle.TFRC }},
		{[]string{"--segment", "nominal"}, func(_ *configs.File, c gateway.Config) bool { return c.Control.Segment == throttle.SegmentNominal }},
		{[]string{"--interval", "2s"}, func(_ *configs.File, c gateway.Config) bool { return c.Control.Interval == 2*time.Second }},
		{[]string{"--scene-max", "10M"}, func(_ *configs.File, c gateway.Config) bool { return c.Scheduler.SceneMax == 1_250_000 }},
		{[]string{"--bind", "127.0.0.2"}, func(_ *configs.File, c gateway.Config) bool { return c.Bind == netip.MustParseAddr("127.0.0.2") }},
		{[]string{"--metrics", "127.0.0.1:9999"}, func(f *configs.File, _ gateway.Config) bool {
			return f.Metrics.GatewayAddress.String() == "127.0.0.1:9999"
		}},
		{[]string{"--log-level", "debug"}, func(f *configs.File, _ gateway.Config) bool { return f.Log.Level.Level() == slog.LevelDebug }},
		{[]string{"--log-format", "json"}, func(f *configs.File, _ gateway.Config) bool { return f.Log.Format == configs.LogJSON }},
	} {
		f, c := parse(tc.args...)
		if !tc.check(f, c) {
			t.Errorf("%v changed nothing", tc.args)
		}
	}
	_ = f0
}

// freeUDP returns a loopback UDP port free a moment ago.
func freeUDP(t *testing.T) netip.AddrPort {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).AddrPort()
}

// TestGatewayCommand: `fairgrid gateway` in front of a test region carries
// a viewer's circuit, then stops at --duration with exit 0.
func TestGatewayCommand(t *testing.T) {
	sim, err := region.New(region.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Activity: region.Walking}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	simDone := make(chan struct{})
	go func() { sim.Run(ctx); close(simDone) }()
	defer func() { cancel(); <-simDone }()
	listen := freeUDP(t)
	done := make(chan int, 1)
	var errOut string
	go func() {
		code, _, e := runCmd(t, "", "gateway", "--listen", listen.String(), "--region", sim.Addr().String(), "--metrics", "", "--duration", "3s")
		errOut = e
		done <- code
	}()
	v, err := viewer.New(viewer.Config{Sim: listen, Throttle: ratecalc.RateFromBits(300_000), CircuitCode: 9}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	vctx, vcancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer vcancel()
	v.Run(vctx)
	rep := v.Report()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !rep.LoggedIn || rep.ReliableReceived == 0 {
		t.Errorf("the viewer got nothing through fairgrid gateway: %+v\n%s", rep, errOut)
	}
	// The operator sees it work (issue 34, item 9): the circuit opened,
	// and the totals at exit.
	for _, want := range []string{"fairgrid gateway listening", "gateway: circuit opened", "fairgrid gateway stopped", "opened=1", "probes_sent=1"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the log has no %q: %s", want, errOut)
		}
	}
}

// TestGatewayHealthz (issue 34, item 9): /healthz answers 200 while each
// route's region answers, and 503 naming the route once one has left the
// gateway's datagrams unanswered for the region timeout.
func TestGatewayHealthz(t *testing.T) {
	dead := gatewaytest.StartRegion(t)
	dead.Close()
	u := gatewaytest.Start(t, gateway.Config{RegionTimeout: 200 * time.Millisecond}, dead)
	h := gatewayHandler(u.GW, http.NotFoundHandler())
	get := func() (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := get(); code != http.StatusOK {
		t.Errorf("before anything was sent: %d %q", code, body)
	}
	v := gatewaytest.NewViewer(t, u.GW.Addr(0), 1, gatewaytest.Loopback)
	v.UseCircuitCode(t)
	v.Prove(t) // the gateway passes the UseCircuitCode to the dead region
	gatewaytest.WaitUntil(t, "healthz turns 503", func() bool { code, _ := get(); return code == http.StatusServiceUnavailable })
	if _, body := get(); !strings.Contains(body, "route 0 region "+dead.Addr().String()+": not answering") {
		t.Errorf("healthz: %q", body)
	}
}

// TestGatewayReload: a reload applies the new controller and names a new
// route, log format and metrics address or limit as needing a restart; a
// bad file keeps the old configuration and is refused in the log. Both go
// through sidecar.Reloads, run's and proxy's mechanism, which counts them
// for fairgrid_config_reloads_total.
func TestGatewayReload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "gw.toml")
		write := func(s string) {
			if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		write("[gateway]\nroutes = [\"127.0.0.1:0=127.0.0.1:9000\"]\n")
		c := gatewayFlags(stdio{nil, io.Discard, io.Discard})
		c.ConfigPath = &path
		load := c.Load
		start, cfg, err := load()
		if err != nil {
			t.Fatal(err)
		}
		gw, err := gateway.New(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		var logged strings.Builder
		log := slog.New(slog.NewTextHandler(&logged, nil))
		level := new(slog.LevelVar)
		asks := make(chan struct{})
		reloads := sidecar.NewReloads(asks, cli.GatewayReloader(gw, load, start, level, log), log)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- reloads.Run(ctx) }()
		// The log's format, the metrics listener and the collector's limit
		// are made at start: named too, as run and proxy name theirs.
		write("[gateway]\nroutes = [\"127.0.0.1:0=127.0.0.1:9001\"]\n[control]\ncontroller = \"tfrc\"\n[log]\nlevel = \"debug\"\nformat = \"json\"\n" +
			"[metrics]\ngateway_address = \"127.0.0.1:9203\"\nmax_circuits = 7\n")
		asks <- struct{}{}
		synctest.Wait()
		if !strings.Contains(logged.String(), "needs_restart=routes,metrics.gateway_address,metrics.max_circuits,log.format") || !strings.Contains(logged.String(), "controller=tfrc") || level.Level() != slog.LevelDebug {
			t.Errorf("reload: %s (level %v)", logged.String(), level.Level())
		}
		if got := reloads.Stats(); got != (sidecar.ReloadStats{Applied: 1}) {
			t.Errorf("after a good reload: %+v", got)
		}
		logged.Reset()
		write("[gateway]\nmax_viewers = 0\n")
		asks <- struct{}{}
		synctest.Wait()
		if !strings.Contains(logged.String(), "reload refused") {
			t.Errorf("bad reload: %s", logged.String())
		}
		if got := reloads.Stats(); got != (sidecar.ReloadStats{Applied: 1, Rejected: 1}) {
			t.Errorf("after a bad reload: %+v", got)
		}
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

// TestGatewayServiceUnit: the systemd unit's command line is one the
// gateway takes, on the shipped configuration with a route added.
func TestGatewayServiceUnit(t *testing.T) {
	_, exec := unitExecStart(t, "../../configs/fairgrid-gateway.service")
	if len(exec) < 2 || !strings.HasSuffix(exec[0], "/fairgrid") || exec[1] != "gateway" {
		t.Fatalf("ExecStart %v", exec)
	}
	conf := filepath.Join(t.TempDir(), "gw.toml")
	example := strings.Replace(string(configs.Example), "routes = []", `routes = ["127.0.0.1:9300=127.0.0.1:9000"]`, 1)
	if err := os.WriteFile(conf, []byte(example), 0o600); err != nil {
		t.Fatal(err)
	}
	args := exec[1:]
	for i, a := range args {
		if a == "/etc/fairgrid-gateway.toml" {
			args[i] = conf
		}
	}
	if code, out, errOut := runCmd(t, "", append(args, "--check-config")...); code != exitOK || out != "configuration ok\n" {
		t.Errorf("%v: exit %d, %q %q", args, code, out, errOut)
	}
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/configs"
	"github.com/fairgrid/fairgrid/internal/lab/demo"
	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/internal/lab/viewer"
	"github.com/fairgrid/fairgrid/internal/lifecycletest"
	"github.com/fairgrid/fairgrid/opensim/gateway"
	"github.com/fairgrid/fairgrid/opensim/gateway/gatewaytest"
	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/fairgrid/fairgrid/throttle/group"
	"github.com/fairgrid/fairgrid/throttle/proxy"
	"github.com/fairgrid/fairgrid/throttle/sidecar"
	"github.com/fairgrid/fairgrid/throttle/status"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// lossyLink is the path of the live front-ends' tests: 2 Mbit/s, 50 ms,
// 3 % loss, so a circuit has a loss event rate, an RTT and one share.
func lossyLink(t *testing.T, upstream netip.AddrPort, log *slog.Logger) *link.Relay {
	t.Helper()
	lc, err := demo.LinkConfig("2M,50ms,3%,100")
	if err != nil {
		t.Fatal(err)
	}
	relay, err := link.New(link.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Upstream: upstream, Down: lc.Link, Up: lc.Link, Seed: 1}, log)
	if err != nil {
		t.Fatal(err)
	}
	return relay
}

// runAll runs each until the test ends, or until stop is called; stop
// returns once they have returned.
func runAll(t *testing.T, runs ...func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Go(func() { r(ctx) })
	}
	stop = func() { cancel(); wg.Wait() }
	t.Cleanup(stop)
	return stop
}

// liveProxy runs a region behind a lossy link, the proxy with its page on
// a loopback port, and a stock viewer through the proxy, until the test
// ends; it returns the page's address once a circuit receives.
func liveProxy(t *testing.T) (string, *status.Page) {
	addr, _, page, _ := liveProxyViewer(t)
	return addr, page
}

// liveProxyViewer is liveProxy, and a function that stops the viewer: it
// logs out and closes its association.
func liveProxyViewer(t *testing.T) (string, *daemon, *status.Page, func()) {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	sim, err := region.New(region.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Activity: region.Flying}, log)
	if err != nil {
		t.Fatal(err)
	}
	relay := lossyLink(t, sim.Addr(), log)
	f := configs.Default()
	f.Control.Interval.Duration = time.Second
	d, err := newDaemon(f, nil, log, new(slog.LevelVar))
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p, page, _, err := newProxy(d, proxy.Config{UDPPorts: testSimPorts}, sidecar.Config{Log: log, MetricsListener: metrics}, log)
	if err != nil {
		t.Fatal(err)
	}
	runAll(t, sim.Run, relay.Run)
	socks := lifecycletest.Serve(t, "127.0.0.1:0", func(g *group.Group, ln net.Listener) { p.AddTo(g, ln); addStatus(g, page) })
	v, err := viewer.New(viewer.Config{Sim: relay.Addr(), SOCKS5: socks, FollowViewerRule: true, CircuitCode: 4242}, log)
	if err != nil {
		t.Fatal(err)
	}
	stop := runAll(t, v.Run)
	addr := metrics.Addr().String()
	waitFlowing(t, addr)
	return addr, d, page, stop
}

// liveGateway runs a region, the gateway in front of it with its page on
// a loopback port, and a stock viewer through a lossy link to it, until
// the test ends; it returns the page's address once a circuit receives.
func liveGateway(t *testing.T) (string, *status.Page) {
	t.Helper()
	return liveGatewayIdentifying(t, false)
}

// liveGatewayIdentifying is liveGateway with gateway.metrics_identify_viewers
// set to identify.
func liveGatewayIdentifying(t *testing.T, identify bool) (string, *status.Page) {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	sim, err := region.New(region.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Activity: region.Flying}, log)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{Routes: []gateway.Route{{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Region: sim.Addr()}},
		IdentifyViewers: identify}, log)
	if err != nil {
		t.Fatal(err)
	}
	relay := lossyLink(t, gw.Addr(0), log)
	metrics, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	page := gatewayHandler(gw, promhttp.HandlerFor(sidecar.Registry(gateway.NewCollector(gw, 0)), promhttp.HandlerOpts{}))
	reloads := sidecar.NewReloads(nil, sidecar.ReloadFunc(func() ([]string, []string, error) { return nil, nil, nil }), log)
	g := gatewayGroup(gw, metrics, page, reloads)
	addStatus(g, page)
	runAll(t, sim.Run, relay.Run, g.Run)
	v, err := viewer.New(viewer.Config{Sim: relay.Addr(), FollowViewerRule: true, CircuitCode: 4343}, log)
	if err != nil {
		t.Fatal(err)
	}
	runAll(t, v.Run)
	addr := metrics.Addr().String()
	waitFlowing(t, addr)
	return addr, page
}

// waitFlowing waits until the page at addr shows a circuit established,
// receiving, with a request of fairgrid's in force.
func waitFlowing(t *testing.T, addr string) {
	t.Helper()
	gatewaytest.WaitUntil(t, "a circuit receives and fairgrid asks", func() bool {
		s, err := status.Fetch(addr, time.Second)
		if err != nil {
			return false
		}
		for _, c := range s.Circuits {
			if c.ReceivedBPS > 0 && c.AskedBPS > 0 && !c.Pending {
				return true
			}
		}
		return false
	})
}

// TestGatewayPageIdentifiesOnlyWhenAsked: the gateway's page and
// status.json show a viewer's endpoint and AgentID only with
// gateway.metrics_identify_viewers, as its metrics do; otherwise the
// circuit's ordinal stands for the viewer (the page may be served off
// loopback).
func TestGatewayPageIdentifiesOnlyWhenAsked(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a region, a viewer and the gateway on loopback for seconds")
	}
	t.Parallel()
	for _, identify := range []bool{false, true} {
		t.Run(fmt.Sprintf("identify=%v", identify), func(t *testing.T) {
			t.Parallel()
			addr, _ := liveGatewayIdentifying(t, identify)
			s, err := status.Fetch(addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Circuits) == 0 {
				t.Fatal("no circuit on the page")
			}
			for _, c := range s.Circuits {
				shown := c.Agent != "" || strings.HasPrefix(c.Viewer, "127.0.0.1:")
				if shown != identify {
					t.Errorf("viewer %q, agent %q: identified %v, want %v", c.Viewer, c.Agent, shown, identify)
				}
			}
		})
	}
}

// TestStatusCommand: fairgrid status against a running proxy and gateway
// prints their circuits and exits 0; against nothing it says that nothing
// answers, and exits 1.
func TestStatusCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a region, a viewer and the front-ends on loopback for seconds")
	}
	t.Parallel()
	proxyAddr, _ := liveProxy(t)
	gatewayAddr, _ := liveGateway(t)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nothing := closed.Addr().String()
	closed.Close()
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		out, err []string
	}{
		{"proxy", []string{"status", proxyAddr}, exitOK, []string{"fairgrid proxy: working", "REGION", "asking the region for", "kbit/s"}, nil},
		{"gateway", []string{"status", "http://" + gatewayAddr + "/"}, exitOK, []string{"fairgrid gateway: working", "ROUTE", "answers", "yes", "established 1", "asking the region for"}, nil},
		{"nothing", []string{"status", nothing}, exitFail, nil, []string{"nothing answers at " + nothing, "is fairgrid proxy, run or gateway running"}},
		{"two addresses", []string{"status", nothing, nothing}, exitUsage, nil, []string{"one address at most"}},
		{"the page's metrics URL", []string{"status", "http://" + proxyAddr + "/metrics"}, exitOK, []string{"fairgrid proxy: working"}, nil},
		// A bad ADDR exits 2 (throttle/status's TestParseAddr has the rules).
		{"no port", []string{"status", "127.0.0.1"}, exitUsage, nil, []string{`fairgrid status: ADDR "127.0.0.1": want HOST:PORT, such as 127.0.0.1:9102; see fairgrid status --help`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(tc.args, stdio{strings.NewReader(""), &out, &errOut})
			if code != tc.code {
				t.Errorf("exit %d, want %d; stdout %q, stderr %q", code, tc.code, out.String(), errOut.String())
			}
			for _, w := range tc.out {
				if !strings.Contains(out.String(), w) {
					t.Errorf("stdout has no %q:\n%s", w, out.String())
				}
			}
			for _, w := range tc.err {
				if !strings.Contains(errOut.String(), w) {
					t.Errorf("stderr has no %q: %s", w, errOut.String())
				}
			}
		})
	}
}

// TestStatusIdle: a front-end with no circuit is "nothing flowing", exit
// 1, its page saying what to check.
func TestStatusIdle(t *testing.T) {
	d, err := newDaemon(configs.Default(), nil, slog.New(slog.DiscardHandler), new(slog.LevelVar))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(loopPage("proxy", d.Loop, nil, status.ListenHealth("the SOCKS 5 proxy"), nil))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	var out, errOut bytes.Buffer
	if code := run([]string{"status", addr}, stdio{strings.NewReader(""), &out, &errOut}); code != exitFail ||
		!strings.Contains(out.String(), "no circuit") || !strings.Contains(errOut.String(), "nothing is flowing at "+addr) {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1, no circuit, nothing flowing", code, out.String(), errOut.String())
	}
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), "Use SOCKS 5 proxy for UDP traffic") {
		t.Errorf("the idle proxy's page does not say what to set in the viewer:\n%s", body)
	}
}

// TestStatusRun: fairgrid run (the built binary, capturing lo) shows the
// circuit of a viewer on loopback to fairgrid status, answers /healthz
// 200 while it captures, and logs its summary when it stops.
func TestStatusRun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: fairgrid run captures lo: needs root (CI runs as root)")
	}
	t.Parallel() // the binary and the viewer wait on their clocks
	log := slog.New(slog.DiscardHandler)
	sim, err := region.New(region.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Activity: region.Flying}, log)
	if err != nil {
		t.Fatal(err)
	}
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := free.Addr().String()
	free.Close()
	daemon := startBinary(t, time.Minute, "run", "--interface", "lo", "--dry-run", "--interval", "1s", "--metrics", addr,
		"--config", writeConfig(t, fmt.Sprintf("[capture]\nports = [\"%d\"]\n", sim.Addr().Port())))
	if daemon.waitLine(regexp.MustCompile(`(msg="fairgrid running")`)) == "" {
		code, _, errOut := daemon.stop(t, syscall.SIGTERM)
		t.Fatalf("run exited %d before running: %s", code, errOut)
	}
	v, err := viewer.New(viewer.Config{Sim: sim.Addr(), CircuitCode: 4444}, log)
	if err != nil {
		t.Fatal(err)
	}
	runAll(t, sim.Run, v.Run)
	waitFlowing(t, addr)
	var out, errOut bytes.Buffer
	if code := run([]string{"status", addr}, stdio{strings.NewReader(""), &out, &errOut}); code != exitOK || !strings.Contains(out.String(), "fairgrid run: working (capture on lo:") ||
		!strings.Contains(out.String(), sim.Addr().String()) {
		t.Errorf("status: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	if resp, err := http.Get("http://" + addr + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("healthz while capturing: %v %v", resp, err)
	}
	code, _, logs := daemon.stop(t, syscall.SIGTERM)
	if code != exitOK || !regexp.MustCompile(`msg="fairgrid stopped" ran=\S+ circuits_seen=1 asked_kbps_mean=[1-9]`).MatchString(logs) {
		t.Errorf("exit %d; no summary line with the circuit and its mean request:\n%s", code, logs)
	}
}

// writeConfig writes a configuration file for the test and returns its
// path.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fairgrid.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestProxyForgetsLoggedOutViewer (issue 37): once the viewer logs out
// (LogoutRequest, the region's LogoutReply) and closes its association,
// the proxy reports no circuit, and none comes back from what was still
// on its way; the loop counts the circuit forgotten.
func TestProxyForgetsLoggedOutViewer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a region, a viewer and the proxy on loopback for seconds")
	}
	t.Parallel()
	addr, d, _, stopViewer := liveProxyViewer(t)
	stopViewer()
	gatewaytest.WaitUntil(t, "the proxy reports no circuit", func() bool {
		s, err := status.Fetch(addr, time.Second)
		return err == nil && len(s.Circuits) == 0
	})
	if st := d.Loop.Stats(); st.Forgotten == 0 {
		t.Errorf("no circuit counted as forgotten: %+v", st)
	}
	if keys := d.Loop.Keys(); len(keys) != 0 {
		t.Errorf("the loop still holds %v", keys)
	}
}

// TestStatusWait: --wait asks again until a circuit receives; without it
// the first answer, nothing flowing yet, is the verdict.
func TestStatusWait(t *testing.T) {
	var mu sync.Mutex
	asked := 0
	page, err := status.New(status.Config{Front: "proxy", Source: func(time.Time) status.Snapshot {
		mu.Lock()
		defer mu.Unlock()
		asked++
		if asked < 3 { // the circuit's first datagrams arrive at the third look
			return status.Snapshot{}
		}
		return status.Snapshot{Circuits: []status.Circuit{{ID: "c", Region: "127.0.0.1:9000", ReceivedBPS: 500_000}}}
	}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(page)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"status", addr}, exitFail},
		{[]string{"status", "--wait", "20s", addr}, exitOK},
	} {
		var out, errOut bytes.Buffer
		if code := run(tc.args, stdio{strings.NewReader(""), &out, &errOut}); code != tc.code {
			t.Errorf("%v: exit %d, want %d; %q %q", tc.args, code, tc.code, out.String(), errOut.String())
		}
	}
}

// TestSummariesOnExit: the proxy and the gateway, stopped, log what they
// did (run's is TestStatusRun's): how long they ran, the circuits seen,
// the mean rates, their totals.
func TestSummariesOnExit(t *testing.T) {
	builtBinary(t)
	t.Parallel() // separate processes
	for _, tc := range []struct {
		name string
		args []string
		want *regexp.Regexp
	}{
		{"proxy", []string{"proxy", "--listen", "127.0.0.1:0", "--metrics", ""},
			regexp.MustCompile(`msg="fairgrid proxy stopped" ran=\S+ circuits_seen=0 asked_kbps_mean=0 share_kbps_mean=0 received_kbps_mean=0 requests_sent=0 viewer_overrides_re_asserted=0 .* viewer_throttles_rewritten=0`)},
		{"gateway", []string{"gateway", "--listen", "127.0.0.1:0", "--region", "127.0.0.1:9", "--metrics", ""},
			regexp.MustCompile(`msg="fairgrid gateway stopped" circuits=0 opened=0 .* ran=\S+ circuits_seen=0 asked_kbps_mean=0 .* circuits_opened=0`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fe := startBinary(t, time.Minute, tc.args...)
			if fe.waitLine(regexp.MustCompile(`(listening)`)) == "" {
				code, _, errOut := fe.stop(t, syscall.SIGTERM)
				t.Fatalf("exited %d before listening: %s", code, errOut)
			}
			code, _, logs := fe.stop(t, syscall.SIGTERM)
			if code != exitOK || !tc.want.MatchString(logs) {
				t.Errorf("exit %d; no summary matching %v in:\n%s", code, tc.want, logs)
			}
		})
	}
}

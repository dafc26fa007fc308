//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/configs"
	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/internal/lab/viewer"
	"github.com/fairgrid/fairgrid/internal/lifecycletest"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/lludp/lludptest"
	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/circuit"
	"github.com/fairgrid/fairgrid/throttle/sidecar"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// honestLog is a log the daemon writes while the test waits for lines.
type honestLog struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

func newHonestLog() *honestLog { return &honestLog{changed: make(chan struct{})} }

func (l *honestLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	close(l.changed)
	l.changed = make(chan struct{})
	return l.b.Write(p)
}

func (l *honestLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor returns the first line containing every substring once one is
// logged, or fails the test after limit.
func (l *honestLog) waitFor(t *testing.T, limit time.Duration, subs ...string) string {
	t.Helper()
	deadline := time.After(limit)
	for {
		l.mu.Lock()
		text, changed := l.b.String(), l.changed
		l.mu.Unlock()
		for line := range strings.Lines(text) {
			if containsAll(line, subs) {
				return line
			}
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no line with %q in %v; log:\n%s", subs, limit, text)
		}
	}
}

func containsAll(line string, subs []string) bool {
	for _, s := range subs {
		if !strings.Contains(line, s) {
			return false
		}
	}
	return true
}

// honestDaemon runs `fairgrid run` with args until the test ends, and
// returns its log once it is running.
func honestDaemon(t *testing.T, args ...string) *honestLog {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the daemon captures on lo: needs root (CI runs as root)")
	}
	return honestCommand(t, "run", "fairgrid running", args...)
}

// honestCommand runs a long-running command with args until the test
// ends, and returns its log once it has logged ready, in whichever log
// format.
func honestCommand(t *testing.T, command, ready string, args ...string) *honestLog {
	t.Helper()
	log := newHonestLog()
	exit := make(chan int, 1)
	go func() {
		exit <- run(append([]string{command}, args...), stdio{strings.NewReader(""), &bytes.Buffer{}, log})
	}()
	running := make(chan string, 1)
	go func() {
		defer close(running)
		deadline := time.After(10 * time.Second)
		for {
			log.mu.Lock()
			text, changed := log.b.String(), log.changed
			log.mu.Unlock()
			if strings.Contains(text, ready) {
				running <- text
				return
			}
			select {
			case <-changed:
			case <-deadline:
				return
			}
		}
	}()
	select {
	case _, ok := <-running:
		if !ok {
			t.Fatalf("%s did not start in 10 s:\n%s", command, log.String())
		}
	case code := <-exit:
		t.Fatalf("%s exited %d before running:\n%s", command, code, log.String())
	}
	t.Cleanup(func() {
		select {
		case code := <-exit:
			// Ended on its own: a SIGTERM now would reach no handler and
			// end the test binary.
			t.Errorf("%s exited %d during the test:\n%s", command, code, log.String())
			return
		default:
		}
		syscall.Kill(os.Getpid(), syscall.SIGTERM) // its signal context catches it
		select {
		case code := <-exit:
			if code != exitOK {
				t.Errorf("%s exit %d after SIGTERM:\n%s", command, code, log.String())
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s still running 10 s after SIGTERM", command)
		}
	})
	return log
}

// reloadCase is a change of one key and, if it applies live, how to see
// that the running daemon took it.
type reloadCase struct {
	base   func(f *configs.File) // nil: the defaults
	change any                   // the key's new value
	live   func(d *daemon) bool  // nil: the key needs a restart
}

// otherSegment is the segment setting that is not the default.
func otherSegment() throttle.Segment {
	if configs.Default().Control.Segment == throttle.SegmentNominal {
		return throttle.SegmentMean
	}
	return throttle.SegmentNominal
}

// reloadCases has an entry for every key of the configuration: a key
// without one fails TestReloadEveryKey.
var reloadCases = map[string]reloadCase{
	"capture.interface":    {change: "eth9"},
	"capture.ports":        {change: configs.PortList{{Lo: 9000, Hi: 9000}}},
	"capture.sims":         {change: []configs.AddrPort{{AddrPort: netip.MustParseAddrPort("10.0.0.1:9000")}}},
	"capture.max_circuits": {change: 10},
	"capture.idle_timeout": {change: configs.Duration{Duration: 90 * time.Second},
		live: func(d *daemon) bool { return d.Loop.Config().IdleTimeout == 90*time.Second }},
	"control.controller": {change: throttle.TFRC},
	"control.segment": {change: otherSegment(),
		live: func(d *daemon) bool { return d.Loop.Config().Segment == otherSegment() }},
	"control.interval": {change: configs.Duration{Duration: 2 * time.Second}},
	"control.min_bps": {change: 100_000.0,
		live: func(d *daemon) bool { return d.Loop.Config().Min == ratecalc.RateFromBits(100_000) }},
	"control.max_bps": {change: 2_000_000.0,
		live: func(d *daemon) bool { return d.Loop.Config().Max == ratecalc.RateFromBits(2_000_000) }},
	"control.floor_bps": {change: 200_000.0,
		live: func(d *daemon) bool { return d.Loop.Config().Floor == ratecalc.RateFromBits(200_000) }},
	"control.min_change": {change: 0.2,
		live: func(d *daemon) bool { return *d.Loop.Config().MinChange == 0.2 }},
	"control.resend_every": {change: 7,
		live: func(d *daemon) bool { return d.Loop.Config().ResendEvery == 7 }},
	"control.split": {change: configs.SplitWeights,
		live: func(d *daemon) bool { return d.Loop.Config().Weights != nil && d.Loop.Config().FixedSplit }},
	"control.viewer_limit": {change: false,
		live: func(d *daemon) bool { return d.Loop.Config().AboveViewer }},
	"control.split_weights": {base: func(f *configs.File) { f.Control.Split = configs.SplitWeights }, change: []float64{1, 1, 1, 1, 1, 1, 1},
		live: func(d *daemon) bool { return slices.Equal(d.Loop.Config().Weights, []float64{1, 1, 1, 1, 1, 1, 1}) }},
	"send.dry_run": {change: true},
	"send.regions": {change: configs.RegionsRoot,
		live: func(d *daemon) bool { return d.Loop.Config().RootOnly }},
	"metrics.address": {change: mustAddress("127.0.0.1:9999")},
	"metrics.max_circuits": {change: 7,
		live: func(d *daemon) bool { return d.Metrics.MaxCircuits.Load() == 7 }},
	"log.level": {change: configs.LogLevel(slog.LevelDebug),
		live: func(d *daemon) bool { return d.LogLevel() == slog.LevelDebug }},
	// The handler is made once, at start.
	"log.format": {change: configs.LogJSON},
	// The proxy reads its keys at start only.
	"proxy.listen":             {change: configs.HostPort("127.0.0.1:1081")},
	"proxy.allow_ports":        {change: configs.PortList{{Lo: 443, Hi: 443}}},
	"proxy.max_associations":   {change: 2},
	"proxy.max_connects":       {change: 3},
	"proxy.max_sessions":       {change: 4},
	"proxy.idle_timeout":       {change: configs.Duration{Duration: time.Minute}},
	"proxy.half_close_timeout": {change: configs.Duration{Duration: time.Second}},
	"proxy.username":           {change: "viewer"},
	"proxy.password_file":      {base: func(f *configs.File) { f.Proxy.Username = "viewer" }, change: "/etc/fairgrid/proxy.pass"},
}

// mustAddress is a metrics address for a test.
func mustAddress(s string) configs.Address {
	a, err := configs.ParseAddress(s)
	if err != nil {
		panic(err)
	}
	return a
}

// TestReloadEveryKey (issue 11, item 7): whichever key differs after a
// reload is applied to the running daemon — seen in its state — or named
// as needing a restart, and nothing else is claimed.
func TestReloadEveryKey(t *testing.T) {
	for _, key := range configs.Keys() {
		t.Run(key, func(t *testing.T) {
			tc, ok := reloadCases[key]
			if !ok {
				t.Fatalf("no reload case for %s: add one", key)
			}
			base := configs.Default()
			if tc.base != nil {
				tc.base(base)
			}
			d, err := newDaemon(base, nil, slog.New(slog.DiscardHandler), new(slog.LevelVar))
			if err != nil {
				t.Fatal(err)
			}
			nf := *base
			nf.Field(key).Set(reflect.ValueOf(tc.change))
			if err := nf.Validate(); err != nil {
				t.Fatalf("the case's value is invalid: %v", err)
			}
			if tc.live != nil && tc.live(d) {
				t.Fatal("the running daemon already shows the change")
			}
			// The sidecar's reload path, reading this file.
			d.Running.SetLoad(func() (*configs.File, error) { return &nf, nil })
			applied, restart, err := d.Running.Reload()
			if err != nil {
				t.Fatal(err)
			}
			if tc.live == nil {
				if !slices.Equal(restart, []string{key}) || len(applied) != 0 {
					t.Errorf("applied %v, need restart %v; want %s named as needing a restart", applied, restart, key)
				}
				return
			}
			if !slices.Equal(applied, []string{key}) || len(restart) != 0 {
				t.Errorf("applied %v, need restart %v; want %s applied", applied, restart, key)
			}
			if !tc.live(d) {
				t.Errorf("reported applied, but the running daemon does not show it")
			}
			// Applied means in force: a second identical reload finds
			// nothing to do.
			if applied, restart, _ := d.Running.Reload(); len(applied)+len(restart) != 0 {
				t.Errorf("the same file again: applied %v, need restart %v", applied, restart)
			}
		})
	}
}

// TestReloadSIGHUP: the running daemon, sent SIGHUP after its file
// changed, applies the log level, the idle timeout and the clamps, and
// names metrics.address as needing a restart (before: none of the first
// three was reported, and the log level stayed).
func TestReloadSIGHUP(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "fairgrid.toml")
	write := func(level, idle, metrics string) {
		toml := fmt.Sprintf("[capture]\ninterface = \"lo\"\nports = [\"39999\"]\nidle_timeout = %q\n[send]\ndry_run = true\n[metrics]\naddress = %q\n[log]\nlevel = %q\n", idle, metrics, level)
		if err := os.WriteFile(conf, []byte(toml), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("info", "60s", "")
	log := honestDaemon(t, "--config", conf, "--interval", "100ms")
	write("debug", "90s", "127.0.0.1:0")
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	line := log.waitFor(t, 10*time.Second, `msg="configuration reloaded"`)
	for _, want := range []string{"applied=\"[capture.idle_timeout log.level]\"", "need_restart=[metrics.address]"} {
		if !strings.Contains(line, want) {
			t.Errorf("reload line %q lacks %s", line, want)
		}
	}
	// At debug level the loop's quiet per-interval summary appears.
	log.waitFor(t, 10*time.Second, `level=DEBUG`, `msg=interval`)
}

// TestMetricsBeyondLoopbackWarns (issue 11, item 10): metrics served on
// an address other hosts reach log a warning; loopback does not.
func TestMetricsBeyondLoopbackWarns(t *testing.T) {
	for _, tc := range []struct {
		address string
		warn    bool
	}{
		{"127.0.0.1:0", false},
		{"[::1]:0", false},
		{"0.0.0.0:0", true},
		{":0", true},
		{"[::]:0", true},
	} {
		t.Run(tc.address, func(t *testing.T) {
			// The metrics are served, and the warning logged, before the
			// daemon says it is running.
			log := honestDaemon(t, "--metrics", tc.address, "--dry-run")
			warned := strings.Contains(log.String(), "agent IDs become visible to the network")
			if warned != tc.warn {
				t.Errorf("warned %v, want %v:\n%s", warned, tc.warn, log.String())
			}
		})
	}
}

// TestControllerOneParser (issue 11, item 8): the --controller flag and
// control.controller go through the same parser, with the same message.
func TestControllerOneParser(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "bad.toml")
	os.WriteFile(conf, []byte("[control]\ncontroller = \"cubic\"\n"), 0o644)
	const want = `"cubic": want vtcp, window, tfrc or viewer`
	for _, args := range [][]string{
		{"run", "--controller", "cubic", "--check-config"},
		{"run", "--config", conf, "--check-config"},
	} {
		code, _, errOut := runCmd(t, "", args...)
		if code != exitUsage || !strings.Contains(errOut, "control.controller") || !strings.Contains(errOut, want) {
			t.Errorf("%v: exit %d, %q; want exit 2 naming control.controller and %s", args, code, errOut, want)
		}
	}
	for _, name := range []string{"vtcp", "window", "tfrc", "viewer"} {
		if code, _, errOut := runCmd(t, "", "run", "--controller", name, "--check-config"); code != exitOK {
			t.Errorf("--controller %s: exit %d, %s", name, code, errOut)
		}
	}
}

// relaySender sends the loop's requests up the link, as if from the
// viewer, and remembers them.
type relaySender struct {
	relay *link.Relay
	mu    sync.Mutex
	sent  map[[lludp.NumCategories]float32]bool
}

func (s *relaySender) Send(_ context.Context, r throttle.Request) error {
	b, err := r.Encode()
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.sent[r.Throttles] = true
	s.mu.Unlock()
	s.relay.InjectUp(r.Circuit.Viewer, b)
	return nil
}

// TestSplitReachesTheSim (issue 11, item 8): the configured split is the
// one in the AgentThrottle a region receives and applies. A region, a
// link and a viewer run on loopback; the loop, built from the
// configuration file as the daemon builds it, sees the link's traffic and
// sends through it. Before the fix, split = "weights" was validated and
// then dropped: the sim got the viewer's split. The default, "demand",
// follows what each category carried (Walking's load is not in the
// viewer's proportions): what the region receives differs from the
// viewer's split of its total.
func TestSplitReachesTheSim(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds on loopback")
	}
	weights := []float64{1, 2, 0, 0, 4, 8, 1}
	viewerSplit := func(total float64) [lludp.NumCategories]float64 {
		var out [lludp.NumCategories]float64
		for c, v := range throttle.ViewerSplit(ratecalc.RateFromBits(total)) {
			out[c] = float64(v)
		}
		return out
	}
	for _, tc := range []struct {
		name, toml string
		want       func(total float64) [lludp.NumCategories]float64
		// notWant, if set, is what the region must not have received for
		// at least one of the loop's requests.
		notWant func(total float64) [lludp.NumCategories]float64
	}{
		{"demand", "[control]\ninterval = \"200ms\"\n", nil, viewerSplit},
		{"viewer", "[control]\ninterval = \"200ms\"\nsplit = \"viewer\"\n", viewerSplit, nil},
		{"weights", "[control]\ninterval = \"200ms\"\nsplit = \"weights\"\nsplit_weights = [1, 2, 0, 0, 4, 8, 1]\n", func(total float64) [lludp.NumCategories]float64 {
			var out [lludp.NumCategories]float64
			for c, w := range weights {
				out[c] = total * w / 16
			}
			return out
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := configs.Parse([]byte(tc.toml))
			if err != nil {
				t.Fatal(err)
			}
			discard := slog.New(slog.DiscardHandler)
			loop, err := throttle.New(f.Throttle(), discard)
			if err != nil {
				t.Fatal(err)
			}
			type received struct {
				throttles [lludp.NumCategories]float32
				at        time.Time
			}
			var mu sync.Mutex
			var upThrottles []received // AgentThrottles on their way to the region
			var applied []float64      // totals the region applied
			sim, err := region.New(region.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Activity: region.Walking,
				OnThrottle: func(_ netip.AddrPort, requestedBPS float64, _ int64, _ time.Time) {
					mu.Lock()
					applied = append(applied, requestedBPS)
					mu.Unlock()
				}}, discard)
			if err != nil {
				t.Fatal(err)
			}
			pipe := link.PipeConfig{Rate: 2_000_000 / 8, Delay: 10 * time.Millisecond, Buffer: 100}
			relay, err := link.New(link.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Upstream: sim.Addr(), Down: pipe, Up: pipe, Seed: 3,
				Tap: func(d link.Datagram) {
					var p lludp.Packet
					var m lludp.AgentThrottle
					loop.Observe(capture.Datagram{At: d.At, Src: d.Src, Dst: d.Dst, Payload: d.Payload})
					if d.Up && p.DecodeFromBytes(d.Payload) == nil && p.ID == lludp.AgentThrottleID && p.Unmarshal(&m) == nil {
						mu.Lock()
						upThrottles = append(upThrottles, received{m.Throttles, d.At})
						mu.Unlock()
					}
				}}, discard)
			if err != nil {
				t.Fatal(err)
			}
			v, err := viewer.New(viewer.Config{Sim: relay.Addr(), CircuitCode: 91}, discard)
			if err != nil {
				t.Fatal(err)
			}
			sender := &relaySender{relay: relay, sent: map[[lludp.NumCategories]float32]bool{}}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			for _, run := range []func(context.Context) error{sim.Run, relay.Run, v.Run} {
				wg.Add(1)
				go func() { defer wg.Done(); run(ctx) }()
			}
			// Run until the region has applied three of the loop's requests.
			var ours []received
			loop.Run(ctx, sender, func(time.Time, []throttle.Request) {
				mu.Lock()
				defer mu.Unlock()
				ours = ours[:0]
				for _, r := range upThrottles {
					if sender.sent[r.throttles] && slices.Contains(applied, totalOf(r.throttles)) {
						ours = append(ours, r)
					}
				}
				if len(ours) >= 3 {
					cancel()
				}
			})
			wg.Wait()
			mu.Lock()
			defer mu.Unlock()
			if len(ours) < 3 {
				t.Fatalf("the region applied %d of the loop's requests in 20 s (%d AgentThrottles up, %d applied)", len(ours), len(upThrottles), len(applied))
			}
			near := func(got [lludp.NumCategories]float32, want [lludp.NumCategories]float64, total float64) bool {
				for c := range got {
					if math.Abs(float64(got[c])-want[c]) > 0.001*total {
						return false
					}
				}
				return true
			}
			differs := false
			for _, r := range ours {
				total := totalOf(r.throttles)
				if tc.want != nil && !near(r.throttles, tc.want(total), total) {
					t.Errorf("the region received %v for %.0f bit/s; want %.0f", r.throttles, total, tc.want(total))
				}
				if tc.notWant != nil && !near(r.throttles, tc.notWant(total), total) {
					differs = true
				}
			}
			if tc.notWant != nil && !differs {
				t.Errorf("every request the region applied was the viewer's split: %v", ours)
			}
		})
	}
}

// totalOf sums an AgentThrottle's categories as the region does.
func totalOf(v [lludp.NumCategories]float32) float64 {
	m := lludp.AgentThrottle{Throttles: v}
	return m.Total()
}

// TestDaemonMetricsSeries (issue 11, item 10): the running daemon's
// metrics carry its own series and its process's: Go runtime, CPU and
// memory, and build.
func TestDaemonMetricsSeries(t *testing.T) { liveMetrics(t) }

// liveMetrics scrapes a running daemon on the address it was given.
func liveMetrics(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // the daemon takes the port over
	honestDaemon(t, "--metrics", addr, "--dry-run")
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fairgrid_circuits", "fairgrid_build_info", "go_goroutines", "go_memstats_heap_alloc_bytes",
		"process_cpu_seconds_total", "process_resident_memory_bytes", "go_build_info", "fairgrid_config_reloads_total"} {
		if !regexp.MustCompile(`(?m)^` + name + `[{ ]`).Match(body) {
			t.Errorf("no %s series in the daemon's metrics", name)
		}
	}
}

// scenario is what a daemon built from a configuration did with a
// scripted minute of traffic: two viewers, the first also in a neighbour
// region, with loss, in virtual time.
type scenario struct {
	d        *daemon
	requests []throttle.Request
	keysEnd  int // circuits measured at the end of the traffic
	keysIdle int // and two seconds later
	infoLogs int // info lines logged
}

var (
	scenarioSim       = netip.MustParseAddrPort("10.0.0.1:9000")
	scenarioNeighbour = netip.MustParseAddrPort("10.0.0.3:9001")
	scenarioViewerA   = netip.MustParseAddrPort("10.0.0.2:50000")
	scenarioViewerB   = netip.MustParseAddrPort("10.0.0.4:50001")
	// scenarioViewerBAsks is viewer B's own request, bits/s.
	scenarioViewerBAsks = 400_000.0
	scenarioAgentA      = lludp.AgentData{AgentID: lludp.UUID{0xA}, SessionID: lludp.UUID{0xA, 1}}
	scenarioAgentB      = lludp.AgentData{AgentID: lludp.UUID{0xB}, SessionID: lludp.UUID{0xB, 1}}
	scenarioStart       = time.Unix(1_700_000_000, 0)
)

// countingHandler counts the records it is enabled for.
type countingHandler struct {
	level *slog.LevelVar
	info  *int
}

func (h countingHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }
func (h countingHandler) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h countingHandler) WithGroup(string) slog.Handler                { return h }
func (h countingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Level == slog.LevelInfo {
		*h.info++
	}
	return nil
}

// runScenario builds the daemon's loop from toml, as runDaemon does, feeds
// it the scripted traffic and ticks it every interval.
func runScenario(t *testing.T, toml string) scenario {
	t.Helper()
	f, err := configs.Parse([]byte(toml))
	if err != nil {
		t.Fatal(err)
	}
	var s scenario
	level := new(slog.LevelVar)
	if s.d, err = newDaemon(f, nil, slog.New(countingHandler{level, &s.infoLogs}), level); err != nil {
		t.Fatal(err)
	}
	script := &lludptest.Script{T: t, Start: scenarioStart, Observe: func(d lludp.Datagram) { s.d.Loop.Observe(d) }}
	send := script.Send
	root := []struct {
		viewer netip.AddrPort
		agent  lludp.AgentData
	}{{scenarioViewerA, scenarioAgentA}, {scenarioViewerB, scenarioAgentB}}
	for i, v := range root {
		send(0, v.viewer, scenarioSim, &lludp.UseCircuitCode{Code: uint32(i + 1), SessionID: v.agent.SessionID, AgentID: v.agent.AgentID})
		send(time.Millisecond, v.viewer, scenarioSim, &lludp.CompleteAgentMovement{AgentData: v.agent, CircuitCode: uint32(i + 1)})
	}
	send(2*time.Millisecond, scenarioViewerA, scenarioNeighbour, &lludp.UseCircuitCode{Code: 1, SessionID: scenarioAgentA.SessionID, AgentID: scenarioAgentA.AgentID})
	// Viewer B asks for less than one share on its path: its limit.
	send(3*time.Millisecond, scenarioViewerB, scenarioSim, &lludp.AgentThrottle{AgentData: scenarioAgentB, CircuitCode: 2,
		Throttles: throttle.ViewerSplit(ratecalc.RateFromBits(scenarioViewerBAsks))})
	interval := f.Control.Interval.Duration
	const length = 60 * time.Second
	next := interval
	for at := 10 * time.Millisecond; at <= length; at += 10 * time.Millisecond {
		for _, v := range root {
			if at%(100*time.Millisecond) == 0 {
				send(at, v.viewer, scenarioSim, &lludp.AgentUpdate{AgentData: v.agent})
			}
			if at%time.Second == 0 {
				send(at, v.viewer, scenarioSim, &lludp.StartPingCheck{PingID: uint8(at / time.Second)})
				send(at+80*time.Millisecond, scenarioSim, v.viewer, &lludp.CompletePingCheck{PingID: uint8(at / time.Second)})
			}
			if at%(970*time.Millisecond) == 0 {
				script.Lose(scenarioSim, v.viewer)
			}
			send(at, scenarioSim, v.viewer, &lludp.ImagePacket{Data: make([]byte, 970)})
		}
		send(at, scenarioNeighbour, scenarioViewerA, &lludp.ImagePacket{Data: make([]byte, 200)})
		if at >= next {
			s.requests = append(s.requests, s.d.Loop.Tick(scenarioStart.Add(at))...)
			next += interval
		}
	}
	s.keysEnd = len(s.d.Loop.Keys())
	s.d.Loop.Tick(scenarioStart.Add(length + 2*time.Second))
	s.keysIdle = len(s.d.Loop.Keys())
	return s
}

// totals returns the totals requested for one circuit, in bit/s.
func (s scenario) totals(viewer, sim netip.AddrPort) []float64 {
	var out []float64
	for _, r := range s.requests {
		if r.Circuit.Viewer == viewer && r.Circuit.Sim == sim {
			out = append(out, r.Total.BitsPerSecond())
		}
	}
	return out
}

// behaviourCase is a key's change and what it must change in what the
// daemon does, against the defaults.
type behaviourCase struct {
	toml  string
	check func(t *testing.T, def, changed scenario)
}

func everyTotal(t *testing.T, s scenario, ok func(bps float64) bool, what string) {
	t.Helper()
	if len(s.requests) == 0 {
		t.Fatal("no requests")
	}
	for _, r := range s.requests {
		if !ok(r.Total.BitsPerSecond()) {
			t.Errorf("a request for %.0f bit/s; want %s", r.Total.BitsPerSecond(), what)
		}
	}
}

// behaviourCases covers every key: a key without a case fails
// TestEveryKeyChangesBehaviour. Keys whose effect is outside the loop
// run the daemon itself, as root.
var behaviourCases = map[string]behaviourCase{
	"capture.sims": {"[capture]\nsims = [\"10.9.9.9:9000\"]\n", func(t *testing.T, def, s scenario) {
		if len(def.requests) == 0 || len(s.requests) != 0 || s.keysEnd != 0 {
			t.Errorf("with another sim configured: %d requests, %d circuits; want none (default: %d requests)", len(s.requests), s.keysEnd, len(def.requests))
		}
	}},
	"capture.idle_timeout": {"[capture]\nidle_timeout = \"1s\"\n", func(t *testing.T, def, s scenario) {
		if def.keysIdle != 3 || s.keysIdle != 0 {
			t.Errorf("circuits 2 s after the traffic stopped: %d (default %d); want 0 (default 3)", s.keysIdle, def.keysIdle)
		}
	}},
	"capture.max_circuits": {"[capture]\nmax_circuits = 1\n", func(t *testing.T, def, s scenario) {
		if def.keysEnd != 3 || s.keysEnd != 1 {
			t.Errorf("circuits: %d (default %d); want 1 (default 3)", s.keysEnd, def.keysEnd)
		}
	}},
	"control.controller": {"[control]\ncontroller = \"viewer\"\n", func(t *testing.T, def, s scenario) {
		if slices.Equal(def.totals(scenarioViewerA, scenarioSim), s.totals(scenarioViewerA, scenarioSim)) {
			t.Errorf("the viewer rule requested what the default controller did: %v", s.totals(scenarioViewerA, scenarioSim))
		}
	}},
	"control.segment": {"[control]\ncontroller = \"window\"\nviewer_limit = false\nsegment = \"" + string(otherSegment()) + "\"\n", func(t *testing.T, _, s scenario) {
		// Window tracking's request is cwnd·s/RTT, and the window itself
		// does not depend on s: each request moves by the ratio of the two
		// settings' s (1460 over the mean payload, about 1000 B here). The
		// default controller (vtcp) always stands on 1460 B, so the
		// baseline is window tracking with the default segment. Viewer B,
		// with one circuit (A shares one share with its neighbour) and
		// its own request's limit lifted.
		def := runScenario(t, "[control]\ncontroller = \"window\"\nviewer_limit = false\n")
		k := circuit.Key{Viewer: scenarioViewerB, Sim: scenarioSim}
		_, defStats, ok1 := def.d.Loop.Circuit(k)
		_, stats, ok2 := s.d.Loop.Circuit(k)
		if !ok1 || !ok2 || s.d.Loop.Config().Segment != otherSegment() {
			t.Fatalf("circuit measured: %v, %v; segment %q", ok1, ok2, s.d.Loop.Config().Segment)
		}
		want := stats.FairSegmentSize / defStats.FairSegmentSize
		d, c := def.totals(scenarioViewerB, scenarioSim), s.totals(scenarioViewerB, scenarioSim)
		t.Logf("s %.1f B → %.1f B; requests %v → %v", defStats.FairSegmentSize, stats.FairSegmentSize, d, c)
		if math.Abs(want-1) < 0.2 || len(d) != len(c) {
			t.Fatalf("s %.1f B and %.1f B, %d and %d requests: the case shows nothing", defStats.FairSegmentSize, stats.FairSegmentSize, len(d), len(c))
		}
		clamped := func(bps float64) bool { return bps <= 64e3 || bps >= 5.12e6 }
		compared := 0
		for i := range d {
			if clamped(d[i]) || clamped(c[i]) {
				continue
			}
			compared++
			if got := c[i] / d[i]; math.Abs(got/want-1) > 1e-3 {
				t.Errorf("request %d: %.0f bit/s, default %.0f: ×%.4f, want ×%.4f", i, c[i], d[i], got, want)
			}
		}
		if compared < len(d)/2 {
			t.Errorf("only %d of %d requests unclamped", compared, len(d))
		}
	}},
	"control.interval": {"[control]\ninterval = \"2s\"\n", func(t *testing.T, def, s scenario) {
		if d, c := def.d.Loop.Interval(), s.d.Loop.Interval(); d != 5*time.Second || c != 2*time.Second {
			t.Errorf("intervals %v and %v", d, c)
		}
		// The ticks of the loop's Run, in a bubble of virtual time (where
		// the loop must be made too).
		for _, tc := range []struct {
			toml  string
			ticks int
		}{{"", 2}, {"[control]\ninterval = \"2s\"\n", 5}} {
			synctest.Test(t, func(t *testing.T) {
				f, err := configs.Parse([]byte(tc.toml))
				if err != nil {
					t.Fatal(err)
				}
				d, err := newDaemon(f, nil, slog.New(slog.DiscardHandler), new(slog.LevelVar))
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second+time.Millisecond)
				defer cancel()
				ticks := 0
				d.Loop.Run(ctx, sidecar.DryRunSender{Log: slog.New(slog.DiscardHandler)}, func(time.Time, []throttle.Request) { ticks++ })
				if ticks != tc.ticks {
					t.Errorf("%q: %d decisions in 10 s; want %d", tc.toml, ticks, tc.ticks)
				}
			})
		}
	}},
	"control.min_bps": {"[control]\nmin_bps = 4000000\n", func(t *testing.T, def, s scenario) {
		everyTotal(t, s, func(bps float64) bool { return bps >= 4e6 }, "at least 4 Mbit/s")
		everyTotal(t, def, func(bps float64) bool { return bps >= 64e3 }, "at least 64 kbit/s")
		if slices.Min(def.totals(scenarioViewerA, scenarioSim)) >= 4e6 {
			t.Error("the default requests never went below 4 Mbit/s: the case shows nothing")
		}
	}},
	"control.max_bps": {"[control]\nmax_bps = 100000\n", func(t *testing.T, def, s scenario) {
		everyTotal(t, s, func(bps float64) bool { return bps <= 100e3 }, "at most 100 kbit/s")
		if slices.Max(def.totals(scenarioViewerA, scenarioSim)) <= 100e3 {
			t.Error("the default requests never exceeded 100 kbit/s: the case shows nothing")
		}
	}},
	"control.floor_bps": {"[control]\nfloor_bps = 3000000\n", func(t *testing.T, def, s scenario) {
		everyTotal(t, s, func(bps float64) bool { return bps >= 3e6 }, "at least the 3 Mbit/s floor")
		if slices.Min(def.totals(scenarioViewerA, scenarioSim)) >= 3e6 {
			t.Error("the default requests never went below 3 Mbit/s: the case shows nothing")
		}
	}},
	"control.min_change": {"[control]\nmin_change = 0.9\nresend_every = 100\n", func(t *testing.T, def, s scenario) {
		// Against resend_every = 100 alone: min_change decides.
		if n := len(s.totals(scenarioViewerA, scenarioSim)); n != 1 {
			t.Errorf("%d requests with min_change 0.9 and no refresh; want the first only", n)
		}
		// 0 is a setting, not the default's stand-in: every change is
		// sent, one of less than the default's 5 % too, and no unchanged
		// rate (the refresh is resend_every's). The split fixed: a split
		// that follows demand moves apart from the total.
		steps := func(s scenario) (small, unchanged int) {
			totals := s.totals(scenarioViewerA, scenarioSim)
			for i := 1; i < len(totals); i++ {
				switch d := math.Abs(totals[i]/totals[i-1] - 1); {
				case d == 0:
					unchanged++
				case d < 0.05:
					small++
				}
			}
			return small, unchanged
		}
		zero := runScenario(t, "[control]\nmin_change = 0\nresend_every = 100\nsplit = \"viewer\"\n")
		small, unchanged := steps(zero)
		t.Logf("min_change = 0: %d requests, %d steps under 5 %%, %d unchanged", len(zero.totals(scenarioViewerA, scenarioSim)), small, unchanged)
		if small == 0 || unchanged != 0 {
			t.Errorf("min_change = 0: %d steps under 5 %%, %d unchanged; want some under 5 %% and none unchanged", small, unchanged)
		}
		if small, _ := steps(runScenario(t, "[control]\nresend_every = 100\nsplit = \"viewer\"\n")); small != 0 {
			t.Errorf("min_change by default: %d steps under 5 %% sent", small)
		}
	}},
	"control.resend_every": {"[control]\nresend_every = 1\nmin_change = 0.9\n", func(t *testing.T, def, s scenario) {
		// Every interval a request, changed or not: 12 in 60 s.
		if n := len(s.totals(scenarioViewerA, scenarioSim)); n != 12 {
			t.Errorf("%d requests with resend_every 1; want 12", n)
		}
	}},
	"control.split": {"[control]\nsplit = \"weights\"\n", func(t *testing.T, def, s scenario) {
		r := s.requests[0]
		w := configs.Default().Control.SplitWeights
		if want := throttle.WeightedSplit(r.Total, w); r.Throttles != want || def.requests[0].Throttles == throttle.WeightedSplit(def.requests[0].Total, w) {
			t.Errorf("split %v; want %v", r.Throttles, want)
		}
	}},
	"control.viewer_limit": {"[control]\nviewer_limit = false\n", func(t *testing.T, def, s scenario) {
		// Viewer B asked for 400 kbit/s, under one share on its path.
		limited, lifted := def.totals(scenarioViewerB, scenarioSim), s.totals(scenarioViewerB, scenarioSim)
		if len(limited) == 0 || slices.Max(limited) > scenarioViewerBAsks || len(lifted) == 0 || slices.Max(lifted) <= scenarioViewerBAsks {
			t.Errorf("viewer B asked %.0f bit/s: requests %v with its limit kept, %v with it lifted; want none above and some above", scenarioViewerBAsks, limited, lifted)
		}
	}},
	"control.split_weights": {"[control]\nsplit = \"weights\"\nsplit_weights = [0, 0, 0, 0, 0, 1, 0]\n", func(t *testing.T, def, s scenario) {
		r := s.requests[0]
		if r.Throttles[lludp.Texture] != float32(r.Total.BitsPerSecond()) {
			t.Errorf("split %v; want everything in Texture", r.Throttles)
		}
	}},
	"send.regions": {"[send]\nregions = \"root\"\n", func(t *testing.T, def, s scenario) {
		if len(def.totals(scenarioViewerA, scenarioNeighbour)) == 0 || len(s.totals(scenarioViewerA, scenarioNeighbour)) != 0 || len(s.totals(scenarioViewerA, scenarioSim)) == 0 {
			t.Errorf("neighbour requests: %d with regions = root, %d with all; root requests %d",
				len(s.totals(scenarioViewerA, scenarioNeighbour)), len(def.totals(scenarioViewerA, scenarioNeighbour)), len(s.totals(scenarioViewerA, scenarioSim)))
		}
	}},
	"metrics.max_circuits": {"[metrics]\nmax_circuits = 1\n", func(t *testing.T, def, s scenario) {
		got := testutil.CollectAndCount(s.d.Metrics, "fairgrid_circuit_requests_sent_total")
		want := testutil.CollectAndCount(def.d.Metrics, "fairgrid_circuit_requests_sent_total")
		if got != 1 || want != 3 {
			t.Errorf("per-circuit series: %d (default %d); want 1 (default 3)", got, want)
		}
	}},
	"log.level": {"[log]\nlevel = \"warn\"\n", func(t *testing.T, def, s scenario) {
		if def.infoLogs == 0 || s.infoLogs != 0 {
			t.Errorf("info lines: %d at warn, %d at info", s.infoLogs, def.infoLogs)
		}
	}},
	"capture.interface": {"", func(t *testing.T, _, _ scenario) { liveInterface(t) }},
	"capture.ports":     {"", func(t *testing.T, _, _ scenario) { livePorts(t) }},
	"send.dry_run":      {"", func(t *testing.T, _, _ scenario) { liveDryRun(t) }},
	"metrics.address":   {"", func(t *testing.T, _, _ scenario) { liveMetrics(t) }},
	// The proxy's keys act on the proxy, shown on one running from the
	// file (proxy_keys_test.go).
	"proxy.listen":             {"", func(t *testing.T, _, _ scenario) { proxyKeyListen(t) }},
	"proxy.allow_ports":        {"", func(t *testing.T, _, _ scenario) { proxyKeyAllowPorts(t) }},
	"proxy.max_associations":   {"", func(t *testing.T, _, _ scenario) { proxyKeyMaxAssociations(t) }},
	"proxy.max_connects":       {"", func(t *testing.T, _, _ scenario) { proxyKeyMaxConnects(t) }},
	"proxy.max_sessions":       {"", func(t *testing.T, _, _ scenario) { proxyKeyMaxSessions(t) }},
	"proxy.idle_timeout":       {"", func(t *testing.T, _, _ scenario) { proxyKeyIdleTimeout(t) }},
	"proxy.half_close_timeout": {"", func(t *testing.T, _, _ scenario) { proxyKeyHalfCloseTimeout(t) }},
	"proxy.username":           {"", func(t *testing.T, _, _ scenario) { proxyKeyUsername(t) }},
	"proxy.password_file":      {"", func(t *testing.T, _, _ scenario) { proxyKeyPasswordFile(t) }},
}

// TestEveryKeyChangesBehaviour (issue 11, item 8): each key of the
// configuration, changed from its default, changes what the daemon does.
func TestEveryKeyChangesBehaviour(t *testing.T) {
	def := runScenario(t, "")
	for _, key := range configs.Keys() {
		t.Run(key, func(t *testing.T) {
			tc, ok := behaviourCases[key]
			if !ok {
				t.Fatalf("no behaviour case for %s: add one", key)
			}
			var changed scenario
			if tc.toml != "" {
				changed = runScenario(t, tc.toml)
			}
			tc.check(t, def, changed)
		})
	}
}

// liveInterface: the daemon captures on the interface it is given.
func liveInterface(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("opening an interface needs root (CI runs as root)")
	}
	code, _, errOut := runCmd(t, "", "run", "--interface", "nosuch0", "--dry-run", "--metrics", "")
	if code != exitFail || !strings.Contains(errOut, `no interface "nosuch0" here (interfaces: `) || !strings.Contains(errOut, "lo") ||
		strings.Count(errOut, "nosuch0") != 1 {
		t.Errorf("--interface nosuch0: exit %d, %q; want exit 1 naming it once and listing the interfaces there are", code, errOut)
	}
}

// udpFrom sends LLUDP messages, as a viewer, from a socket of its own.
func udpFrom(t *testing.T, to netip.AddrPort, ms ...lludp.Typed) {
	t.Helper()
	// Unconnected: nothing listens on the port, and a connected socket
	// would report the ICMP refusal of one datagram on the next write.
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i, m := range ms {
		b, err := lludp.AppendMessage(nil, lludp.Header{Flags: lludp.FlagReliable, Sequence: uint32(i + 1)}, m, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.WriteToUDPAddrPort(b, to); err != nil {
			t.Fatal(err)
		}
	}
}

// livePorts: the daemon captures the configured ports only. A login to a
// port outside them, then one to a port inside, on lo: the summary line
// counts one circuit.
func livePorts(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "fairgrid.toml")
	os.WriteFile(conf, []byte("[capture]\ninterface = \"lo\"\nports = [\"39011\"]\n[send]\ndry_run = true\n[metrics]\naddress = \"\"\n[log]\nlevel = \"debug\"\n"), 0o644)
	log := honestDaemon(t, "--config", conf, "--interval", "100ms")
	login := func(port uint16) {
		udpFrom(t, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port),
			&lludp.UseCircuitCode{Code: 5, AgentID: lludp.UUID{5}, SessionID: lludp.UUID{5, 1}},
			&lludp.AgentUpdate{AgentData: lludp.AgentData{AgentID: lludp.UUID{5}, SessionID: lludp.UUID{5, 1}}},
			&lludp.AgentUpdate{AgentData: lludp.AgentData{AgentID: lludp.UUID{5}, SessionID: lludp.UUID{5, 1}}})
	}
	login(39012) // outside capture.ports: first, so that it would be seen first
	login(39011)
	line := log.waitFor(t, 10*time.Second, "msg=interval", "circuits=1")
	// Captured in order, the outside port's circuit would be counted by now.
	if strings.Contains(log.String(), "circuits=2") {
		t.Errorf("a login outside capture.ports became a circuit:\n%s", log.String())
	}
	t.Log(line)
}

// liveDryRun: with --dry-run the daemon decides and logs, and the region
// receives only the viewer's own AgentThrottle.
func liveDryRun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the daemon captures on lo: needs root (CI runs as root)")
	}
	discard := slog.New(slog.DiscardHandler)
	var mu sync.Mutex
	var applied []float64
	sim, err := region.New(region.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Activity: region.Walking,
		OnThrottle: func(_ netip.AddrPort, requestedBPS float64, _ int64, _ time.Time) {
			mu.Lock()
			applied = append(applied, requestedBPS)
			mu.Unlock()
		}}, discard)
	if err != nil {
		t.Fatal(err)
	}
	v, err := viewer.New(viewer.Config{Sim: sim.Addr(), CircuitCode: 92}, discard)
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "fairgrid.toml")
	os.WriteFile(conf, []byte(fmt.Sprintf("[capture]\ninterface = \"lo\"\nports = [\"%d\"]\n[metrics]\naddress = \"\"\n", sim.Addr().Port())), 0o644)
	log := honestDaemon(t, "--config", conf, "--interval", "200ms", "--dry-run")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{sim.Run, v.Run} {
		wg.Add(1)
		go func() { defer wg.Done(); run(ctx) }()
	}
	// Three decisions not sent, then the region's view.
	for range 3 {
		log.waitFor(t, 10*time.Second, `msg="dry run: not sent"`)
	}
	line := log.waitFor(t, 10*time.Second, `msg="dry run: not sent"`)
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	viewerOwn := v.Report().ThrottleBPS
	for _, bps := range applied {
		if bps != viewerOwn {
			t.Errorf("the region applied %.0f bit/s, not the viewer's own %.0f: the dry run sent (%s)", bps, viewerOwn, line)
		}
	}
	if strings.Contains(log.String(), "send AgentThrottle") {
		t.Errorf("the dry run tried to send:\n%s", log.String())
	}
}

// TestEveryFlagReachesItsKey (issue 11, item 8): each flag of the daemon
// sets its key — a bad value is refused naming the key — so that
// TestEveryKeyChangesBehaviour covers the flag too. The flags come from
// the synopsis of `fairgrid run --help`.
func TestEveryFlagReachesItsKey(t *testing.T) {
	_, help, _ := runCmd(t, "", "run", "--help")
	synopsis, _, _ := strings.Cut(help, "\n")
	flags := regexp.MustCompile(`\[--([a-z-]+)`).FindAllStringSubmatch(synopsis, -1)
	missing := filepath.Join(t.TempDir(), "missing.toml")
	cases := map[string]struct {
		args []string
		code int
		want string
	}{
		"config":       {[]string{"--config", missing, "--check-config"}, exitUsage, "missing.toml"},
		"check-config": {[]string{"--check-config"}, exitOK, "configuration ok"},
		"interface":    {[]string{"--interface", "", "--check-config"}, exitUsage, "capture.interface"},
		"controller":   {[]string{"--controller", "reno", "--check-config"}, exitUsage, "control.controller"},
		"segment":      {[]string{"--segment", "1460", "--check-config"}, exitUsage, "control.segment"},
		"interval":     {[]string{"--interval", "10ms", "--check-config"}, exitUsage, "control.interval"},
		"metrics":      {[]string{"--metrics", "everywhere", "--check-config"}, exitUsage, "metrics.address"},
		"log-level":    {[]string{"--log-level", "chatty", "--check-config"}, exitUsage, "log.level"},
		"log-format":   {[]string{"--log-format", "xml", "--check-config"}, exitUsage, "log.format"},
		// A boolean has no bad value: it is shown live (liveDryRun).
		"dry-run": {},
	}
	if len(flags) < 8 {
		t.Fatalf("found %d flags in the synopsis %q", len(flags), synopsis)
	}
	for _, m := range flags {
		name := m[1]
		t.Run(name, func(t *testing.T) {
			tc, ok := cases[name]
			if !ok {
				t.Fatalf("no case for --%s: add one", name)
			}
			if tc.args == nil {
				liveDryRun(t)
				return
			}
			code, out, errOut := runCmd(t, "", append([]string{"run"}, tc.args...)...)
			if code != tc.code || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("%v: exit %d, %q %q; want exit %d with %q", tc.args, code, out, errOut, tc.code, tc.want)
			}
		})
	}
}

// TestRunDaemonFlood (issue 11, item 3): the daemon itself, capturing lo
// beside a region and a viewer, while 5,000 spoofed endpoints from fresh
// 127.x.y.z addresses send the region AgentThrottles, three each with
// advancing sequence numbers so that they pass for circuits. It measures
// at most capture.max_circuits circuits, its heap stays bounded, it sends
// nothing in a spoofed identity, it keeps serving the real viewer, and it
// logs a summary line per interval rather than lines per fake circuit.
func TestRunDaemonFlood(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("spoofing sources and capturing lo need root (CI runs as root)")
	}
	if testing.Short() {
		t.Skip("a few seconds on loopback")
	}
	discard := slog.New(slog.DiscardHandler)
	var mu sync.Mutex
	var applied []time.Time
	sim, err := region.New(region.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Activity: region.Walking,
		OnThrottle: func(_ netip.AddrPort, _ float64, _ int64, at time.Time) {
			mu.Lock()
			applied = append(applied, at)
			mu.Unlock()
		}}, discard)
	if err != nil {
		t.Fatal(err)
	}
	v, err := viewer.New(viewer.Config{Sim: sim.Addr(), CircuitCode: 93}, discard)
	if err != nil {
		t.Fatal(err)
	}
	const maxCircuits = 16
	conf := filepath.Join(t.TempDir(), "fairgrid.toml")
	os.WriteFile(conf, []byte(fmt.Sprintf("[capture]\ninterface = \"lo\"\nports = [\"%d\"]\nmax_circuits = %d\n[metrics]\naddress = \"\"\n", sim.Addr().Port(), maxCircuits)), 0o644)
	log := honestDaemon(t, "--config", conf, "--interval", "200ms")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{sim.Run, v.Run} {
		wg.Add(1)
		go func() { defer wg.Done(); run(ctx) }()
	}
	defer func() { cancel(); wg.Wait() }()
	log.waitFor(t, 10*time.Second, `msg="throttle decision"`)

	raw, err := sidecar.NewRawSender()
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	before := lifecycletest.HeapInUse()
	rng := rand.New(rand.NewPCG(5, 5))
	const fakes = 5000
	for i := range fakes {
		src := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 1 + byte(i>>16), byte(i >> 8), byte(i)}), 40000)
		r := throttle.Request{Circuit: circuit.Key{Viewer: src, Sim: sim.Addr()},
			Agent:     lludp.AgentData{AgentID: lludp.UUID{byte(rng.Uint32()), 1}, SessionID: lludp.UUID{byte(rng.Uint32()), 2}},
			Throttles: throttle.ViewerSplit(ratecalc.RateFromBits(100_000))}
		for seq := range uint32(3) {
			r.Sequence = seq + 1
			if err := raw.Send(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	flooded := time.Now()
	// The evictions are reported at the next interval.
	log.waitFor(t, 10*time.Second, "msg=interval", "evicted=")
	// Served after the flood: two more of the daemon's requests applied.
	// The summary line every interval wakes the wait.
	deadline := time.After(15 * time.Second)
	for {
		mu.Lock()
		served := 0
		for _, at := range applied {
			if at.After(flooded) {
				served++
			}
		}
		mu.Unlock()
		if served >= 2 {
			break
		}
		select {
		case <-deadline:
			t.Fatalf("the region applied %d requests in the 15 s after the flood", served)
		case <-log.nextWrite():
		}
	}
	grown := int64(lifecycletest.HeapInUse()) - int64(before)
	logs := log.String()
	intervals, others := 0, 0
	for line := range strings.Lines(logs) {
		switch {
		case strings.Contains(line, "msg=interval"):
			intervals++
			if n := circuitsIn(line); n > maxCircuits {
				t.Errorf("%d circuits measured, more than %d: %s", n, maxCircuits, line)
			}
		case strings.Contains(line, `msg="throttle decision"`):
			// The viewer is on 127.0.0.1, the spoofed sources elsewhere.
			if !strings.Contains(line, "circuit=127.0.0.1:") {
				t.Errorf("a decision for a circuit not the viewer's: %s", line)
			}
		default:
			others++
		}
	}
	if others > 5 {
		t.Errorf("%d log lines neither summaries nor decisions:\n%s", others, logs)
	}
	if grown > 8<<20 { // 5,000 circuits tracked would be 24 MiB
		t.Errorf("the heap grew by %d MiB under the flood", grown>>20)
	}
	if !regexp.MustCompile(`evicted=[1-9]`).MatchString(logs) {
		t.Errorf("no eviction reported under the flood:\n%s", logs)
	}
	t.Logf("%d spoofed endpoints, %d summary lines, heap grew %d KiB", fakes, intervals, grown>>10)
}

// nextWrite is closed at the log's next write.
func (l *honestLog) nextWrite() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

func circuitsIn(line string) int {
	m := regexp.MustCompile(` circuits=(\d+)`).FindStringSubmatch(line)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestDemoSegment: run --demo takes --segment, refuses a bad one with the
// names, and runs its loop, and its TCP-fair column, with the one given.
func TestDemoSegment(t *testing.T) {
	code, _, errOut := runCmd(t, "", "run", "--demo", "--segment", "1460", "--interval", "100ms", "--duration", "300ms")
	if code != exitUsage || !strings.Contains(errOut, `--segment (control.segment): "1460": want mean or nominal`) {
		t.Errorf("--segment 1460: exit %d, %q; want exit 2 with the names", code, errOut)
	}
	for _, segment := range []throttle.Segment{throttle.SegmentMean, throttle.SegmentNominal} {
		code, out, errOut := runCmd(t, "", "run", "--demo", "--segment", string(segment), "--interval", "100ms", "--duration", "300ms", "--format", "json")
		if code != exitOK {
			t.Fatalf("--segment %s: exit %d, %s", segment, code, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var sum struct {
			Summary bool             `json:"summary"`
			Segment throttle.Segment `json:"segment"`
		}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || !sum.Summary || sum.Segment != segment {
			t.Errorf("--segment %s: summary %q (%v)", segment, lines[len(lines)-1], err)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/configs"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim/link"
	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/fairgrid/fairgrid/opensim/viewer"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
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
	log := newHonestLog()
	exit := make(chan int, 1)
	go func() {
		exit <- run(append([]string{"run"}, args...), stdio{strings.NewReader(""), &bytes.Buffer{}, log})
	}()
	running := make(chan string, 1)
	go func() {
		defer close(running)
		deadline := time.After(10 * time.Second)
		for {
			log.mu.Lock()
			text, changed := log.b.String(), log.changed
			log.mu.Unlock()
			if strings.Contains(text, `msg="fairgrid running"`) {
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
			t.Fatalf("the daemon did not start in 10 s:\n%s", log.String())
		}
	case code := <-exit:
		t.Fatalf("the daemon exited %d before running:\n%s", code, log.String())
	}
	t.Cleanup(func() {
		syscall.Kill(os.Getpid(), syscall.SIGTERM) // its signal context catches it
		select {
		case code := <-exit:
			if code != exitOK {
				t.Errorf("daemon exit %d after SIGTERM:\n%s", code, log.String())
			}
		case <-time.After(10 * time.Second):
			t.Errorf("daemon still running 10 s after SIGTERM")
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

// reloadCases has an entry for every key of the configuration: a key
// without one fails TestReloadEveryKey.
var reloadCases = map[string]reloadCase{
	"capture.interface":    {change: "eth9"},
	"capture.ports":        {change: []string{"9000"}},
	"capture.sims":         {change: []string{"10.0.0.1:9000"}},
	"capture.max_circuits": {change: 10},
	"capture.idle_timeout": {change: configs.Duration{Duration: 90 * time.Second},
		live: func(d *daemon) bool { return d.loop.Config().IdleTimeout == 90*time.Second }},
	"control.controller": {change: throttle.TFRC},
	"control.interval":   {change: configs.Duration{Duration: 2 * time.Second}},
	"control.min_bps": {change: 100_000.0,
		live: func(d *daemon) bool { return d.loop.Config().Min == ratecalc.RateFromBits(100_000) }},
	"control.max_bps": {change: 2_000_000.0,
		live: func(d *daemon) bool { return d.loop.Config().Max == ratecalc.RateFromBits(2_000_000) }},
	"control.floor_bps": {change: 200_000.0,
		live: func(d *daemon) bool { return d.loop.Config().Floor == ratecalc.RateFromBits(200_000) }},
	"control.min_change": {change: 0.2,
		live: func(d *daemon) bool { return d.loop.Config().MinChange == 0.2 }},
	"control.resend_every": {change: 7,
		live: func(d *daemon) bool { return d.loop.Config().ResendEvery == 7 }},
	"control.split": {change: "weights",
		live: func(d *daemon) bool { return d.loop.Config().Weights != nil }},
	"control.split_weights": {base: func(f *configs.File) { f.Control.Split = "weights" }, change: []float64{1, 1, 1, 1, 1, 1, 1},
		live: func(d *daemon) bool { return slices.Equal(d.loop.Config().Weights, []float64{1, 1, 1, 1, 1, 1, 1}) }},
	"send.dry_run": {change: true},
	"send.regions": {change: "root",
		live: func(d *daemon) bool { return d.loop.Config().RootOnly }},
	"metrics.address": {change: "127.0.0.1:9999"},
	"metrics.max_circuits": {change: 7,
		live: func(d *daemon) bool { return d.metrics.MaxCircuits.Load() == 7 }},
	"log.level": {change: "debug",
		live: func(d *daemon) bool { return d.level.Level() == slog.LevelDebug }},
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
			d, err := newDaemon(base, slog.New(slog.DiscardHandler), new(slog.LevelVar))
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
			applied, restart, err := d.reload(&nf)
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
			if applied, restart, _ := d.reload(&nf); len(applied)+len(restart) != 0 {
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
	const want = `"cubic": want window, tfrc or viewer`
	for _, args := range [][]string{
		{"run", "--controller", "cubic", "--check-config"},
		{"run", "--config", conf, "--check-config"},
	} {
		code, _, errOut := runCmd(t, "", args...)
		if code != exitUsage || !strings.Contains(errOut, "control.controller") || !strings.Contains(errOut, want) {
			t.Errorf("%v: exit %d, %q; want exit 2 naming control.controller and %s", args, code, errOut, want)
		}
	}
	for _, name := range []string{"window", "tfrc", "viewer"} {
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
// then dropped: the sim got the viewer's split.
func TestSplitReachesTheSim(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds on loopback")
	}
	weights := []float64{1, 2, 0, 0, 4, 8, 1}
	for _, tc := range []struct {
		name, toml string
		want       func(total float64) [lludp.NumCategories]float64
	}{
		{"viewer", "[control]\ninterval = \"200ms\"\n", func(total float64) [lludp.NumCategories]float64 {
			var out [lludp.NumCategories]float64
			for c, v := range throttle.ViewerSplit(ratecalc.RateFromBits(total)) {
				out[c] = float64(v)
			}
			return out
		}},
		{"weights", "[control]\ninterval = \"200ms\"\nsplit = \"weights\"\nsplit_weights = [1, 2, 0, 0, 4, 8, 1]\n", func(total float64) [lludp.NumCategories]float64 {
			var out [lludp.NumCategories]float64
			for c, w := range weights {
				out[c] = total * w / 16
			}
			return out
		}},
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
			for _, r := range ours {
				total := totalOf(r.throttles)
				want := tc.want(total)
				for c, got := range r.throttles {
					if math.Abs(float64(got)-want[c]) > 0.001*total {
						t.Errorf("the region received %v for %.0f bit/s; want %.0f", r.throttles, total, want)
						break
					}
				}
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
func TestDaemonMetricsSeries(t *testing.T) {
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
		"process_cpu_seconds_total", "process_resident_memory_bytes", "go_build_info"} {
		if !regexp.MustCompile(`(?m)^` + name + `[{ ]`).Match(body) {
			t.Errorf("no %s series in the daemon's metrics", name)
		}
	}
}

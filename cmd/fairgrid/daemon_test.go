//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/internal/lab/viewer"
	"github.com/fairgrid/fairgrid/opensim/region"
)

// TestRunCheckConfig: --check-config validates and starts nothing; a bad
// file is exit 2 with the key named.
func TestRunCheckConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.toml")
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(good, []byte("[control]\ninterval = \"2s\"\n"), 0o644)
	os.WriteFile(bad, []byte("[control]\nintervall = \"2s\"\n"), 0o644)
	for _, tc := range []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"run", "--check-config"}, exitOK, "configuration ok", ""},
		{[]string{"run", "--config", good, "--check-config"}, exitOK, "configuration ok", ""},
		{[]string{"run", "--config", bad, "--check-config"}, exitUsage, "", "control.intervall"},
		{[]string{"run", "--config", bad}, exitUsage, "", "control.intervall"},
		{[]string{"run", "--config", good, "--controller", "nonesuch", "--check-config"}, exitUsage, "", "control.controller"},
		{[]string{"run", "--config", filepath.Join(dir, "missing.toml"), "--check-config"}, exitUsage, "", "missing.toml"},
	} {
		var out, errOut bytes.Buffer
		code := run(tc.args, stdio{strings.NewReader(""), &out, &errOut})
		if code != tc.code || !strings.Contains(out.String(), tc.out) || !strings.Contains(errOut.String(), tc.err) {
			t.Errorf("%v: exit %d, out %q, err %q; want exit %d with %q / %q", tc.args, code, out.String(), errOut.String(), tc.code, tc.out, tc.err)
		}
	}
}

// TestRunDaemonLive is the end-to-end test of `fairgrid run` itself:
// a region, a lossy delayed link and a stock viewer (asking for its own
// 1,500 kbit/s and following the ±10 % rule) on loopback, and the daemon
// capturing lo and sending through raw sockets. The region must apply
// every decision the daemon logs, replace the viewer's own AgentThrottle
// with the daemon's within 100 ms, and the daemon must stop cleanly on
// SIGTERM. (The ±25 % fairness of the same control loop over 90 s is
// internal/lab/demo's TestLive.)
func TestRunDaemonLive(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the daemon captures lo and sends with raw sockets: needs root (CI runs as root)")
	}
	if testing.Short() {
		t.Skip("a 15-second run on loopback")
	}
	t.Parallel() // it waits on the clock, as the proxy's end-to-end run does
	type appliedThrottle struct {
		bps float64
		at  time.Time
	}
	var mu sync.Mutex
	var applied []appliedThrottle
	discard := slog.New(slog.DiscardHandler)
	sim, err := region.New(region.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Activity: region.Flying,
		OnThrottle: func(_ netip.AddrPort, requestedBPS float64, _ int64, at time.Time) {
			mu.Lock()
			applied = append(applied, appliedThrottle{requestedBPS, at})
			mu.Unlock()
		}}, discard)
	if err != nil {
		t.Fatal(err)
	}
	// 5 % loss downstream makes the viewer's ±10 % rule tighten, and so send
	// its own AgentThrottle, every 5 s; upstream is lossless so that every
	// request the daemon sends arrives (each is one unreliable datagram).
	down := link.PipeConfig{Rate: 2_000_000 / 8, Delay: 20 * time.Millisecond, Loss: 0.05, Buffer: 100}
	up := down
	up.Loss = 0
	relay, err := link.New(link.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Upstream: sim.Addr(), Down: down, Up: up, Seed: 7}, discard)
	if err != nil {
		t.Fatal(err)
	}
	v, err := viewer.New(viewer.Config{Sim: relay.Addr(), FollowViewerRule: true, CircuitCode: 77}, discard)
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "fairgrid.toml")
	os.WriteFile(conf, []byte(fmt.Sprintf("[capture]\ninterface = \"lo\"\nports = [\"%d\"]\n[metrics]\naddress = \"\"\n", relay.Addr().Port())), 0o644)

	// The daemon is the built binary, so that its SIGTERM is its own and
	// this test runs beside the package's other clock-bound tests.
	daemon := startBinary(t, time.Minute, "run", "--config", conf, "--interval", "1s", "--controller", "tfrc")
	// The viewer logs in only once the daemon captures, so that it sees the
	// circuit's identity.
	if daemon.waitLine(regexp.MustCompile(`(msg="fairgrid running")`)) == "" {
		code, _, errOut := daemon.stop(t, syscall.SIGTERM)
		t.Fatalf("daemon exited %d before running: %s", code, errOut)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{sim.Run, relay.Run, v.Run} {
		wg.Add(1)
		go func() { defer wg.Done(); run(ctx) }()
	}
	wg.Wait()
	code, _, logs := daemon.stop(t, syscall.SIGTERM)
	if code != exitOK {
		t.Errorf("daemon exit %d after SIGTERM", code)
	}
	if !strings.Contains(logs, "fairgrid stopped") {
		t.Errorf("no clean stop in the log:\n%s", logs)
	}

	// The daemon's decisions, from its log: one line per decision.
	type decision struct {
		bps float64
		at  time.Time
	}
	var decisions []decision
	// rate_bps is a whole number, never 5.12e+06
	rate := regexp.MustCompile(`^time=(\S+) .*msg="throttle decision" .*rate_bps=([0-9]+) `)
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		if m := rate.FindStringSubmatch(sc.Text()); m != nil {
			at, err := time.Parse(time.RFC3339Nano, m[1])
			bps, err2 := strconv.ParseFloat(m[2], 64)
			if err != nil || err2 != nil {
				t.Fatalf("decision line %q: %v %v", sc.Text(), err, err2)
			}
			decisions = append(decisions, decision{bps, at})
		}
	}
	if len(decisions) < 3 {
		t.Fatalf("%d throttle decisions in 15 s at a 1 s interval; log:\n%s", len(decisions), logs)
	}
	ours := func(bps float64) bool {
		for _, d := range decisions {
			if bps > d.bps*0.995 && bps < d.bps*1.005 {
				return true
			}
		}
		return false
	}
	mu.Lock()
	defer mu.Unlock()
	for _, d := range decisions {
		if end, _ := ctx.Deadline(); d.at.After(end.Add(-500 * time.Millisecond)) {
			continue // decided as the region stopped
		}
		found := false
		for _, a := range applied {
			found = found || (a.bps > d.bps*0.995 && a.bps < d.bps*1.005 && !a.at.Before(d.at) && a.at.Sub(d.at) <= 2*time.Second)
		}
		if !found {
			t.Errorf("the daemon decided %.0f bit/s at %v; the region did not apply it within 2 intervals", d.bps, d.at)
			for _, a := range applied {
				if a.at.Sub(d.at).Abs() < 3*time.Second {
					t.Logf("applied %.0f at %v", a.bps, a.at)
				}
			}
			t.Logf("log:\n%s", logs)
		}
	}
	// Each of the viewer's own requests after the daemon's first must be
	// replaced by the daemon's within 100 ms.
	overrides := 0
	seenOurs := false
	var since time.Time
	for _, a := range applied {
		switch {
		case ours(a.bps):
			seenOurs = true
			if !since.IsZero() {
				if held := a.at.Sub(since); held > 100*time.Millisecond {
					t.Errorf("the viewer's own throttle held %v before the daemon's replaced it", held)
				}
				since = time.Time{}
			}
		case seenOurs && since.IsZero():
			overrides++
			since = a.at
		}
	}
	if !since.IsZero() {
		t.Errorf("the viewer's last throttle, applied at %v, was never replaced", since)
	}
	if overrides == 0 {
		t.Errorf("the viewer never sent its own throttle after the daemon's first (%d applied)", len(applied))
	}
	t.Logf("%d decisions, %d applied throttles, %d viewer overrides replaced", len(decisions), len(applied), overrides)
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strings"
	"testing"

	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// TestViewerStressFlags: the stress flags are the viewer's, so what a
// run cannot measure or would ignore exits 2 naming the flag
// (internal/lab/viewer tests each case).
func TestViewerStressFlags(t *testing.T) {
	for _, args := range [][]string{{"--stress", "--sim", "nowhere"}, {"--sim", "127.0.0.1:9", "--fleet", "shared"}} {
		var out, errOut bytes.Buffer
		code := run(append([]string{"viewer"}, args...), stdio{strings.NewReader(""), &out, &errOut})
		if code != exitUsage || !strings.HasPrefix(errOut.String(), "fairgrid viewer: "+args[len(args)-2]) {
			t.Errorf("%v: exit %d, %q; want %d naming %s", args, code, errOut.String(), exitUsage, args[len(args)-2])
		}
	}
}

// TestViewerStressMeasures: a stress step against a region with metrics
// prints the region's rates and CPU, not dashes, and 8 neighbours a move
// or near it in the world sized for them.
func TestViewerStressMeasures(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: a long end-to-end run in real time")
	}
	srv := startStressRegion(t)
	reg := prometheus.NewRegistry()
	reg.MustRegister(region.NewCollector(srv), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer metrics.Close()

	var out, errOut bytes.Buffer
	code := run([]string{"viewer", "--stress", "--sim", srv.Addr().String(), "--clients", "60", "--duration", "4s",
		"--neighbours", "8", "--sim-metrics", metrics.URL, "--format", "json"}, stdio{strings.NewReader(""), &out, &errOut})
	t.Logf("%s%s", out.String(), errOut.String())
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	var step struct {
		Fleet      string  `json:"fleet"`
		LoggedIn   int     `json:"logged_in"`
		Neighbours float64 `json:"neighbours_per_move"`
		At         string  `json:"neighbours_counted_at"`
		Region     *struct {
			In  float64 `json:"datagrams_in_per_s"`
			Out float64 `json:"datagrams_out_per_s"`
			CPU float64 `json:"cpu_s"`
		} `json:"region"`
	}
	if err := json.Unmarshal([]byte(strings.SplitN(out.String(), "\n", 2)[0]), &step); err != nil {
		t.Fatal(err)
	}
	if step.LoggedIn != 60 || step.Region == nil || step.At != "region" || step.Region.In <= 0 || step.Region.Out <= step.Region.In || step.Region.CPU <= 0 {
		t.Errorf("step %+v, region %+v", step, step.Region)
	}
	// The default fleet shares sockets where it can: Linux, a region on
	// IPv4 loopback.
	if runtime.GOOS == "linux" && step.Fleet != "shared" {
		t.Errorf("fleet %q on Linux against 127.0.0.1, want shared", step.Fleet)
	}
	// 60 viewers give a small sample of positions: within a third of 8.
	if step.Neighbours < 8*2/3.0 || step.Neighbours > 8*4/3.0 {
		t.Errorf("%.1f neighbours per move, want about 8", step.Neighbours)
	}
}

// TestViewerStressFleetFlag: --fleet per-viewer gives each viewer a
// socket, and the step's row says so.
func TestViewerStressFleetFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: a long end-to-end run in real time")
	}
	srv := startStressRegion(t)
	var out, errOut bytes.Buffer
	code := run([]string{"viewer", "--stress", "--sim", srv.Addr().String(), "--clients", "20", "--duration", "4s",
		"--fleet", "per-viewer"}, stdio{strings.NewReader(""), &out, &errOut})
	t.Logf("%s%s", out.String(), errOut.String())
	lines := strings.Split(out.String(), "\n")
	if code != exitOK || len(lines) < 2 || !strings.HasSuffix(lines[0], "fleet") || !strings.HasSuffix(lines[1], " per-viewer") {
		t.Errorf("exit %d; want a fleet column saying per-viewer", code)
	}
}

// startStressRegion runs an idle region in stress mode on loopback until
// the test ends.
func startStressRegion(t *testing.T) *region.Server {
	t.Helper()
	srv, err := region.New(region.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Activity: region.Idle,
		Stress: region.StressConfig{Enabled: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return srv
}

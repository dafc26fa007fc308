package viewer

import (
	"context"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// TestWorldForNeighbours: viewers placed where stress mode places them
// (spread), in the world WorldForNeighbours sizes, see on average the
// neighbours asked for within the view distance, counted pair by pair.
func TestWorldForNeighbours(t *testing.T) {
	tests := []struct {
		n       int
		k, view float64
	}{
		{500, 8, 32},
		{2000, 8, 32},
		{5530, 8, 32},
		{2000, 32, 32},
		{4000, 32, 32},
		{1000, 8, 8},
	}
	for _, tt := range tests {
		world, err := WorldForNeighbours(tt.n, tt.k, tt.view)
		if err != nil {
			t.Fatalf("%+v: %v", tt, err)
		}
		xs, ys := make([]float64, tt.n), make([]float64, tt.n)
		for i := range tt.n {
			code := uint32(1000 + i)
			xs[i], ys[i] = float64(spread(code, 0))*world, float64(spread(code, 1))*world
		}
		pairs := 0
		for i := range tt.n {
			for j := i + 1; j < tt.n; j++ {
				if dx, dy := xs[i]-xs[j], ys[i]-ys[j]; dx*dx+dy*dy <= tt.view*tt.view {
					pairs++
				}
			}
		}
		got := 2 * float64(pairs) / float64(tt.n)
		t.Logf("%d viewers, %v neighbours within %v m: world %.0f m, counted %.2f", tt.n, tt.k, tt.view, world, got)
		if math.Abs(got/tt.k-1) > 0.05 {
			t.Errorf("%d viewers in a %.0f m world: %.2f neighbours each, want %v", tt.n, world, got, tt.k)
		}
	}
}

// TestStressMeasured: with the region's metrics, a stress step reports
// the region's datagram rates, CPU and neighbours per move, and they agree
// with what the viewers did: every viewer moves once a second, and each
// move goes out once to the mover and once to each neighbour.
func TestStressMeasured(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: a long end-to-end run in real time")
	}
	sim := startRegion(t, region.Config{Activity: region.Idle, Stress: region.StressConfig{Enabled: true}})
	reg := prometheus.NewRegistry()
	reg.MustRegister(region.NewCollector(sim), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer metrics.Close()
	const n = 40
	res, err := RunStress(context.Background(), StressOptions{Sim: sim.Addr(), Viewers: n, Duration: 5 * time.Second,
		Warmup: 2 * time.Second, FirstCode: 7000, World: 100, RegionMetrics: metrics.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v, region %+v", res, res.Region)
	if res.Region == nil || res.NeighboursAt != "region" || res.LoggedIn != n || res.World != 100 {
		t.Fatalf("%+v", res)
	}
	// 40 viewers in 100 m × 100 m with a 32 m view: about a quarter of
	// the others each (fewer at the border).
	if res.Neighbours < 0.1*(n-1) || res.Neighbours > 0.3*(n-1) {
		t.Errorf("%.1f neighbours per move, want a quarter of the %d others or so", res.Neighbours, n-1)
	}
	moves := float64(n) // a second each
	if in := res.Region.InPerSecond; in < 0.8*moves || in > 2*moves {
		t.Errorf("%.0f datagrams/s in for %d viewers moving once a second (and pinging every 5 s)", in, n)
	}
	if out := res.Region.OutPerSecond; out < 0.8*moves*(res.Neighbours+1) || out > 1.5*moves*(res.Neighbours+1)+moves {
		t.Errorf("%.0f datagrams/s out for %.0f moves/s to %.1f avatars each", out, moves, res.Neighbours+1)
	}
	if res.Region.CPUSeconds <= 0 || res.WindowSeconds < 2.5 || res.WindowSeconds > 3.5 {
		t.Errorf("region CPU %.3f s over a %.2f s window", res.Region.CPUSeconds, res.WindowSeconds)
	}
	if runtime.GOOS == "linux" && res.ViewerCPUSeconds <= 0 {
		t.Errorf("viewer CPU %.3f s", res.ViewerCPUSeconds)
	}
	// Every viewer logged out at the end, as Run's do.
	if k := sim.Counters(); k.LoggedOut != n {
		t.Errorf("%d of %d viewers logged out", k.LoggedOut, n)
	}
}

// TestIPv6 serves a viewer over IPv6 loopback: the region's batched reads
// key a client by the address ReadFromUDPAddrPort would give.
func TestIPv6(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: a long end-to-end run in real time")
	}
	probe, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	probe.Close()
	sim := startRegion(t, region.Config{Listen: netip.MustParseAddrPort("[::1]:0"), Activity: region.Walking,
		Stress: region.StressConfig{Enabled: true}})
	v, rep := runViewer(t, Config{Sim: sim.Addr(), CircuitCode: 61, Throttle: ratecalc.RateFromBits(300_000)}, 2*time.Second)
	if !rep.LoggedIn || rep.ReliableReceived == 0 || v.Reliability().GaveUp != 0 {
		t.Errorf("over IPv6: %+v, %+v", rep, v.Reliability())
	}
	res, err := RunStress(context.Background(), StressOptions{Sim: sim.Addr(), Viewers: 5, Duration: 3 * time.Second,
		Warmup: 1500 * time.Millisecond, FirstCode: 62, World: 50})
	if err != nil || res.LoggedIn != 5 || res.Echoes == 0 {
		t.Errorf("stress over IPv6: %+v, %v", res, err)
	}
}

// TestScrapeRegion: a reading of the region's metrics names what it
// lacks, and a server that is not the region's is an error, not zeros.
func TestScrapeRegion(t *testing.T) {
	full := `fairgrid_sim_datagrams_total{direction="in"} 10
fairgrid_sim_datagrams_total{direction="out"} 30
fairgrid_sim_stress_moves_total 5
fairgrid_sim_stress_echoes_total 25
process_cpu_seconds_total 1.5
`
	tests := []struct {
		name, body string
		status     int
		want       regionSample
		err        string
	}{
		{"region", full, http.StatusOK, regionSample{in: 10, out: 30, moves: 5, echoes: 25, cpu: 1.5}, ""},
		{"no process collector", strings.ReplaceAll(full, "process_cpu_seconds_total 1.5\n", ""), http.StatusOK, regionSample{}, "process_cpu_seconds_total"},
		{"no direction out", strings.ReplaceAll(full, `direction="out"`, `direction="sideways"`), http.StatusOK, regionSample{}, "fairgrid_sim_datagrams_total"},
		{"not found", "", http.StatusNotFound, regionSample{}, "404"},
		{"not metrics", "<html>hello</html>", http.StatusOK, regionSample{}, "text format parsing error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			got, err := scrapeRegion(context.Background(), srv.URL)
			if tt.err == "" {
				if err != nil || got != tt.want {
					t.Errorf("got %+v, %v; want %+v", got, err, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("err %v, want one mentioning %q", err, tt.err)
			}
		})
	}
}

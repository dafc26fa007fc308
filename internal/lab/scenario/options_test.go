package scenario

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
)

// fakeJobs are runs that take no time: each taps one delivered packet
// (for a capture) and measures its seed as its seconds.
func fakeJobs(o Options) []job {
	var jobs []job
	for _, name := range []string{"a", "b"} {
		seed := o.Seed
		jobs = append(jobs, job{name: name, custom: func(_ context.Context, tap func(link.Event), _ *slog.Logger) (Measurement, error) {
			if tap != nil {
				tap(link.Event{Kind: link.Delivered, At: time.Unix(1700000000, 0), Dir: link.Up, Packet: []byte{0x40, 0, 0, 0},
					UDP: link.UDPEndpoints{Src: pcapViewer, Dst: pcapRegion}})
			}
			return Measurement{Seconds: float64(seed)}, nil
		}})
	}
	return jobs
}

func fakeResult(_ []job, runs []RunResult) Result {
	r := Result{Scenario: "fake", Runs: runs}
	for _, run := range runs {
		r.Comparisons = append(r.Comparisons, ours("fake", run.Name, "seed", "", "a test", 0, run.Measurement.Seconds, "-", everySeed("at most 2", func(x float64) bool { return x <= 2 })))
	}
	return r
}

// TestOptionsSeeds: Seeds repeats every run with seeds Seed, Seed+1, …
// and each comparison reports their median, range and a verdict over all.
func TestOptionsSeeds(t *testing.T) {
	for _, tc := range []struct {
		seeds          int
		wantRuns       int
		median, maxima float64
		verdict        string
	}{
		{1, 2, 5, 5, "at most 2 only not in the one seed run (--seeds N judges the spread)"},
		{3, 6, 6, 7, "at most 2 only in 0 of 3 seeds"},
	} {
		res, err := runSeeded(context.Background(), Options{Seed: 5, Seeds: tc.seeds}, fakeJobs, fakeResult)
		if err != nil {
			t.Fatal(err)
		}
		c := res.Comparisons[0]
		if len(res.Runs) != tc.wantRuns || len(c.Samples) != tc.seeds || c.Measured != tc.median || c.Max != tc.maxima || c.Judgement != Reported || !strings.HasSuffix(c.Verdict, tc.verdict) {
			t.Errorf("seeds %d: %d runs, comparison %+v; want %d runs, median %v, max %v", tc.seeds, len(res.Runs), c, tc.wantRuns, tc.median, tc.maxima)
		}
		if tc.seeds > 1 && res.Runs[2].Name != "a seed=6" {
			t.Errorf("seeds %d: run 2 is %q, want the second seed's a", tc.seeds, res.Runs[2].Name)
		}
	}
}

// TestOptionsPcap: with OutDir, a run writes no capture unless Pcap is
// set; with it, one per run.
func TestOptionsPcap(t *testing.T) {
	for _, pcap := range []bool{false, true} {
		dir := t.TempDir()
		if _, err := runAll(context.Background(), Options{OutDir: dir, Pcap: pcap}.withDefaults(), fakeJobs(Options{Seed: 1})); err != nil {
			t.Fatal(err)
		}
		got, _ := filepath.Glob(filepath.Join(dir, "*.pcap"))
		if want := map[bool]int{false: 0, true: 2}[pcap]; len(got) != want {
			t.Errorf("pcap %v: %d captures %v, want %d", pcap, len(got), got, want)
		}
		for _, f := range got {
			if st, err := os.Stat(f); err != nil || st.Size() == 0 {
				t.Errorf("%s: %v, %v", f, st, err)
			}
		}
	}
}

// TestOptionsDuration: Duration wins, then Full's published duration,
// then the scenario's default; Full's coexistence measures the last
// 200 s of 1,000.
func TestOptionsDuration(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want time.Duration
	}{
		{Options{}, multiplexDefault},
		{Options{Full: true}, multiplexPublished},
		{Options{Full: true, Duration: 7 * time.Second}, 7 * time.Second},
	} {
		if got := tc.o.duration(multiplexDefault, multiplexPublished); got != tc.want {
			t.Errorf("%+v: %v, want %v", tc.o, got, tc.want)
		}
	}
	if w, d := coexistenceTimes(Options{Full: true}); w != 800*time.Second || d != 200*time.Second {
		t.Errorf("coexistence --full: warm-up %v, measured %v; want 800s and 200s", w, d)
	}
	if w, d := coexistenceTimes(Options{}); w != coexistenceWarmup || d != coexistenceDefault {
		t.Errorf("coexistence: warm-up %v, measured %v", w, d)
	}
}

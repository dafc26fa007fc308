package scenario

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// emptyRuns are runs of jobs, each with an empty measurement of its
// shape: what the comparisons are built from without running.
func emptyRuns(jobs []job) []RunResult {
	runs := make([]RunResult, len(jobs))
	for i, j := range jobs {
		m := Measurement{Seconds: 1, TCP: make([]TCPResult, len(j.cfg.TCP)+len(j.cfg.Kernel))}
		if j.cfg.Viewer != nil {
			m.Viewer = &ViewerResult{Mode: j.cfg.Viewer.Mode}
		}
		if j.custom != nil {
			m.Branches = make([]BranchResult, 2)
		}
		runs[i] = RunResult{Name: j.name, Measurement: m}
	}
	return runs
}

// fakeRuns are the runs of every scenario's jobs with o, as `all` saves
// them, each with an empty measurement.
func fakeRuns(o Options) []RunResult {
	var runs []RunResult
	for _, sc := range Scenarios() {
		all, _ := seededJobs(o.withDefaults(), sc.seeding(o.withDefaults()).mk)
		runs = append(runs, emptyRuns(all)...)
	}
	return runs
}

// TestRender: a result saved as JSON renders again, without running,
// into the comparisons its runs make; a saved run this code's jobs do
// not make, or one without options, is an error.
func TestRender(t *testing.T) {
	o := Options{Seed: 3, Seeds: 2, Duration: 15 * time.Second}
	s := Result{Scenario: "all", Command: "fairgrid lab all --seed 3 --seeds 2 --duration 15s --format markdown --out X", Seconds: 12, Options: saved(o), Runs: fakeRuns(o)}
	var b bytes.Buffer
	if err := WriteJSON(&b, s); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "all.json"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := RenderFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := everyComparisonWith(t, o)
	if len(res.Comparisons) != len(want) {
		t.Fatalf("%d comparisons rendered, %d made", len(res.Comparisons), len(want))
	}
	for i, c := range res.Comparisons {
		if c.Case != want[i].Case || c.Differs != want[i].Differs || len(c.Samples)+c.Unmeasured != 2 {
			t.Errorf("row %d: %s / %s with %d samples, want %s", i, c.Scenario, c.Case, len(c.Samples), want[i].Case)
		}
	}
	if res.Command != s.Command || res.Seconds != 12 {
		t.Errorf("rendered %q, %v s", res.Command, res.Seconds)
	}
	for name, mutate := range map[string]func(*Result){
		"no options":  func(r *Result) { r.Options = nil },
		"other seeds": func(r *Result) { r.Options = saved(Options{Seed: 3, Seeds: 3, Duration: 15 * time.Second}) },
		"a run more":  func(r *Result) { r.Runs = append(r.Runs, r.Runs[0]) },
		"renamed":     func(r *Result) { r.Runs[4].Name += "x" },
	} {
		bad := s
		bad.Runs = append([]RunResult(nil), s.Runs...)
		mutate(&bad)
		if _, err := Render(bad); err == nil {
			t.Errorf("%s: rendered", name)
		}
	}
	var back Result
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back.Options == nil || back.Options.Seeds != 2 || !strings.Contains(b.String(), `"duration_seconds": 15`) {
		t.Errorf("the JSON's options: %v, %+v", err, back.Options)
	}
}

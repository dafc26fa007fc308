package scenario

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// seedsDir is ../shared/seeds from the worktree's root.
var seedsDir, _ = filepath.Abs("../../../../shared/seeds")

// seedLines reads a seed document's lines, 1-based (lines[0] is empty).
func seedLines(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(seedsDir, file))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	defer f.Close()
	lines := []string{""}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return lines
}

// TestCitedFiguresStandOnTheirLines: every figure a scenario quotes as
// published stands on the line of the seed document it cites, its quote
// word for word and its number written in the quote.
func TestCitedFiguresStandOnTheirLines(t *testing.T) {
	if _, err := os.Stat(seedsDir); err != nil {
		t.Skipf("the source documents are not here (%v): ../shared/seeds holds them beside the worktree", err)
	}
	if len(cited) == 0 {
		t.Fatal("no figure cited")
	}
	docs := map[string][]string{}
	for _, f := range cited {
		lines, ok := docs[f.File]
		if !ok {
			lines = seedLines(t, f.File)
			docs[f.File] = lines
		}
		if f.Line < 1 || f.Line >= len(lines) {
			t.Errorf("%s: line %d of %d", f.Source(), f.Line, len(lines)-1)
			continue
		}
		if !strings.Contains(lines[f.Line], f.Quote) {
			t.Errorf("%s: %q is not on the line, which reads %q", f.Source(), f.Quote, lines[f.Line])
		}
		if f.Value != 0 && !containsNumber(f.Quote, f.Value) {
			t.Errorf("%s: the quote %q does not give %v", f.Source(), f.Quote, f.Value)
		}
	}
}

// containsNumber reports whether text writes v as a number of its own.
func containsNumber(text string, v float64) bool {
	for _, m := range regexp.MustCompile(`[0-9]+(\.[0-9]+)?`).FindAllString(text, -1) {
		if x, err := strconv.ParseFloat(m, 64); err == nil && x == v {
			return true
		}
	}
	return false
}

// TestContainsNumber: the seed test's number finder takes whole numbers
// only, not a digit inside another.
func TestContainsNumber(t *testing.T) {
	for _, tc := range []struct {
		text string
		v    float64
		want bool
	}{
		{"BW node0->node1 = 144kbps", 144, true},
		{"BW node0->node1 = 144kbps", 14, false},
		{"BW node0->node1 = 144kbps", 0, true},
		{"is nearly 300 ms", 300, true},
		{"265.5 packets", 265.5, true},
		{"265.5 packets", 265, false},
	} {
		if got := containsNumber(tc.text, tc.v); got != tc.want {
			t.Errorf("containsNumber(%q, %v) = %v, want %v", tc.text, tc.v, got, tc.want)
		}
	}
}

// TestComparisonSources: every comparison a scenario can make cites a
// declared figure's FILE:LINE or says it is ours. Built from the result
// functions with empty measurements, without running anything.
func TestComparisonSources(t *testing.T) {
	sources := map[string]bool{}
	for _, f := range cited {
		sources[f.Source()] = true
	}
	var cs []Comparison
	// multiplexing: every case and variant.
	variants := []muxVariant{variantSawtooth, variantTCM}
	var runs []RunResult
	for range len(multiplexCases) * len(variants) {
		runs = append(runs, RunResult{Measurement: Measurement{Branches: make([]BranchResult, 2)}})
	}
	cs = append(cs, multiplexResult(multiplexCases, variants, multiplexDefault, runs).Comparisons...)
	for _, v := range mongooseVariants {
		for _, loss := range mongooseLosses {
			if c, ok := mongooseComparison(v, loss, 1); ok {
				cs = append(cs, c)
			}
		}
	}
	if len(cs) < 12+12 {
		t.Fatalf("%d comparisons, want every case's", len(cs))
	}
	for _, c := range cs {
		if !sources[c.Source] && !isOurs(c.Source) {
			t.Errorf("%s %s %s: source %q is neither a cited figure nor ours", c.Scenario, c.Case, c.Metric, c.Source)
		}
		if c.Differs == "" {
			t.Errorf("%s %s %s: no differs", c.Scenario, c.Case, c.Metric)
		}
	}
}

// TestMergeSeeds: comparisons over seeds report the median, the range
// and a verdict that judges every seed.
func TestMergeSeeds(t *testing.T) {
	fig := Figure{File: "x.txt", Line: 3, Quote: "ten", Value: 10}
	j := allAtMost(1.03, "no better", "better")
	var rs []Result
	for _, v := range []float64{0.9, 1.1, 0.95} {
		rs = append(rs, Result{Scenario: "s", Comparisons: []Comparison{fig.compare("s", "A", "ratio", "×", v, "d", j)}})
	}
	got, err := mergeSeeds(rs)
	if err != nil {
		t.Fatal(err)
	}
	c := got.Comparisons[0]
	if c.Measured != 0.95 || c.Min != 0.9 || c.Max != 1.1 || len(c.Samples) != 3 || c.OK || !strings.HasPrefix(c.Verdict, "better") {
		t.Errorf("merged %+v: want median 0.95, 0.9–1.1, 3 samples, judged better", c)
	}
	if c.Source != "x.txt:3" || c.PublishedText != "10" {
		t.Errorf("source %q, published %q", c.Source, c.PublishedText)
	}
	if _, err := mergeSeeds([]Result{rs[0], {Scenario: "s"}}); err == nil {
		t.Error("seeds with different comparisons merged")
	}
}

// TestWriteMarkdown: the summary as markdown has the columns, a
// row per comparison with its FILE:LINE, and pipes in cells escaped.
func TestWriteMarkdown(t *testing.T) {
	fig := Figure{File: "001_e9d8247e49fbaed2.txt", Line: 68, Quote: "BW node0->node1 = 144kbps", Value: 144, Unit: "kbit/s"}
	c := fig.compare("multiplexing", "B", "sawtooth branch", "kbit/s", 58, "60 s | not 200 s", logged("reported"))
	c.Samples = []float64{58, 40, 70}
	c = c.judged()
	o := ours("coexistence", "200 packets, FTP cubic", "delay", "ms", "no cubic in the document", 0, 1200, "d", nil)
	var b strings.Builder
	if err := WriteMarkdown(&b, Result{Scenario: "all", Comparisons: []Comparison{c, o}}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| scenario | case | metric | document | published | measured | differs | verdict |",
		"| multiplexing | B | sawtooth branch | `001_e9d8247e49fbaed2.txt:68` | 144 kbit/s | 58 kbit/s (40–70, 3 seeds) | 60 s \\| not 200 s | reported |",
		"| coexistence | 200 packets, FTP cubic | delay | ours: no cubic in the document | - | 1200 ms | d | - |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}

// TestResultJSONHasSources: the JSON of a result carries each
// comparison's source, differs and verdict.
func TestResultJSONHasSources(t *testing.T) {
	fig := Figure{File: "f.txt", Line: 1, Quote: "q", Value: 2}
	var b strings.Builder
	if err := WriteJSON(&b, Result{Comparisons: []Comparison{fig.compare("s", "A", "m", "", 1, "scaled", logged("ok"))}}); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Comparisons []map[string]any `json:"comparisons"`
	}
	if err := json.Unmarshal([]byte(b.String()), &back); err != nil {
		t.Fatal(err)
	}
	c := back.Comparisons[0]
	if c["source"] != "f.txt:1" || c["differs"] != "scaled" || c["verdict"] != "ok" {
		t.Errorf("JSON comparison %v", c)
	}
}

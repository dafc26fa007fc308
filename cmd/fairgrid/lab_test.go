package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLabCommandLine: bad command lines exit 2 with a message naming
// what is wrong, before anything runs.
func TestLabCommandLine(t *testing.T) {
	aFile := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(aFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no scenario", []string{"lab"}, "want one scenario"},
		{"two scenarios", []string{"lab", "coexistence", "all"}, "want one scenario"},
		{"unknown scenario", []string{"lab", "nosuch"}, `unknown scenario "nosuch"; the scenarios are:`},
		{"a scenario's typo", []string{"lab", "mongose"}, "did you mean mongoose?"},
		{"short duration", []string{"lab", "coexistence", "--duration", "1s"}, "at least 5s"},
		{"negative duration", []string{"lab", "coexistence", "--duration", "-3s"}, "at least 5s"},
		{"no parallelism", []string{"lab", "coexistence", "--parallel", "0"}, "--parallel 0"},
		{"bad format", []string{"lab", "coexistence", "--format", "xml"}, "want text, json or markdown"},
		{"no seeds", []string{"lab", "coexistence", "--seeds", "0"}, "--seeds 0"},
		{"full and a duration", []string{"lab", "coexistence", "--full", "--duration", "10s"}, "choose one"},
		{"pcap without out", []string{"lab", "coexistence", "--pcap"}, "--pcap needs --out"},
		{"out under a file", []string{"lab", "coexistence", "--out", filepath.Join(aFile, "results")}, "--out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCmd(t, "", tc.args...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errOut, exitUsage, tc.want)
			}
		})
	}
	code, out, _ := runCmd(t, "", "lab", "--help")
	if code != exitOK || !strings.Contains(out, "coexistence") || !strings.Contains(out, "all") {
		t.Errorf("lab --help: exit %d, %q", code, out)
	}
}

// TestLabFairnessCommandLine: lab fairness refuses bad flags with a
// message naming them, before anything runs, and lists its own flags.
func TestLabFairnessCommandLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown controller", []string{"lab", "fairness", "--controllers", "vtcp,cubic"}, `--controllers: "cubic"`},
		{"unknown tcp", []string{"lab", "fairness", "--tcp", "vegas"}, `--tcp "vegas"`},
		{"unknown reference", []string{"lab", "fairness", "--reference", "cubic,vegas"}, `--reference "vegas"`},
		{"nothing to measure", []string{"lab", "fairness", "--seats", ""}, "nothing to measure"},
		{"no seeds", []string{"lab", "fairness", "--seeds", "0"}, "--seeds 0"},
		{"seed 0", []string{"lab", "fairness", "--seed", "0"}, "--seed 0"},
		{"short duration", []string{"lab", "fairness", "--duration", "1s"}, "at least 5s"},
		{"negative warm-up", []string{"lab", "fairness", "--warmup", "-1s"}, "--warmup"},
		{"bad interval", []string{"lab", "fairness", "--interval", "1ms"}, "--interval"},
		{"bad design", []string{"lab", "fairness", "--design", "all"}, `--design "all"`},
		{"no parallelism", []string{"lab", "fairness", "--parallel", "0"}, "--parallel 0"},
		{"bad format", []string{"lab", "fairness", "--format", "xml"}, "want text or json"},
		{"positional", []string{"lab", "fairness", "extra"}, "unexpected argument"},
		{"unknown seat", []string{"lab", "fairness", "--seats", "sidecar,daemon"}, `--seats "daemon"`},
		{"unknown seat tcp", []string{"lab", "fairness", "--seats", "tcp:vegas"}, `"vegas"`},
		{"neighbours out of range", []string{"lab", "fairness", "--seats", "sidecar", "--neighbours", "9"}, "--neighbours 9"},
		{"neighbours without a product", []string{"lab", "fairness", "--seats", "tcp:cubic", "--neighbours", "2"}, "only a product seat"},
		{"controllers alone, neighbours", []string{"lab", "fairness", "--controllers", "vtcp", "--neighbours", "2"}, "only a product seat"},
		{"unknown workload", []string{"lab", "fairness", "--seats", "stock", "--limited", "flying"}, `--limited: demand "flying"`},
		{"unknown region", []string{"lab", "fairness", "--seats", "stock", "--region", "secondlife"}, `--region "secondlife"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCmd(t, "", tc.args...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errOut, exitUsage, tc.want)
			}
		})
	}
	code, out, _ := runCmd(t, "", "lab", "fairness", "--help")
	if code != exitOK || !strings.Contains(out, "--design") || !strings.Contains(out, "viewer") {
		t.Errorf("lab fairness --help: exit %d, %q", code, out)
	}
	if code, out, _ := runCmd(t, "", "lab", "--help"); code != exitOK || !strings.Contains(out, "fairness") {
		t.Errorf("lab --help does not list fairness: exit %d, %q", code, out)
	}
}

// TestLabFairnessReference: --reference puts a TCP flow in the viewer's
// seat: its rows are tcp:KIND, in the table, the JSON and a panel of the
// figure of their own, and with --controllers empty they are all there
// is; --seed sets the first seed. One centre cell, 5 s measured.
func TestLabFairnessReference(t *testing.T) {
	if testing.Short() {
		t.Skip("a real-time gVisor TCP run (5 s): not in -short")
	}
	dir := t.TempDir()
	code, out, errOut := runCmd(t, "", "lab", "fairness", "--seats", "", "--reference", "cubic", "--tcp", "cubic",
		"--design", "centre", "--seeds", "1", "--seed", "3", "--warmup", "0s", "--duration", "5s", "--format", "json", "--out", dir)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	if !strings.Contains(errOut, "[1/1] tcp:cubic beside 1 cubic, 6000 kbit/s, 80 ms, 100 packets, 0% loss, seed 3:") {
		t.Errorf("stderr %q: want the one run, seed 3 (--seed)", errOut)
	}
	var row struct {
		Controller string  `json:"controller"`
		ViewerBPS  float64 `json:"viewer_bps"`
		TCP        float64 `json:"tcp_bps_per_flow"`
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &row) != nil || row.Controller != "tcp:cubic" || row.ViewerBPS <= 0 || row.TCP <= 0 {
		t.Fatalf("stdout %q: want one row of controller tcp:cubic with both flows moving", out)
	}
	for name, want := range map[string]string{"table.md": "| tcp:cubic | — | saturating | tcp:cubic | cubic | 1 |", "figure.html": "tcp:cubic"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %q (%v)", name, want, err)
		}
	}
}

// TestLabFairnessSeats: --seats puts the product's path in the viewer's
// seat beside the control: a sidecar row with --neighbours' child
// circuits, its application-limited row (--limited) and the tcp:cubic
// row, each with its seat in the JSON, the table and a panel of the
// figure; --region names the product rows' region (a tcp seat has none). One centre cell, 5 s measured: the rows' shape, not their
// figures (internal/lab/fairness's TestProductSeats judges those).
func TestLabFairnessSeats(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time runs of the product beside gVisor TCP (7 s): not in -short")
	}
	dir := t.TempDir()
	code, out, errOut := runCmd(t, "", "lab", "fairness", "--seats", "sidecar,tcp:cubic", "--neighbours", "1", "--limited", "avatars",
		"--region", "fairgrid", "--tcp", "cubic", "--design", "centre", "--seeds", "1", "--warmup", "2s", "--duration", "5s", "--interval", "1s", "--format", "json", "--out", dir)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	type row struct {
		Seat       string  `json:"seat"`
		Demand     string  `json:"demand"`
		Neighbours int     `json:"neighbours"`
		Region     string  `json:"region"`
		Controller string  `json:"controller"`
		ViewerBPS  float64 `json:"viewer_bps"`
		Loss       float64 `json:"loss"`
	}
	var rows []row
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var r row
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("stdout line %q: %v", l, err)
		}
		rows = append(rows, r)
	}
	want := []row{{Seat: "sidecar", Neighbours: 1, Region: "fairgrid", Controller: "vtcp"}, {Seat: "sidecar", Demand: "avatars", Neighbours: 1, Region: "fairgrid", Controller: "vtcp", Loss: 0.03}, {Seat: "tcp:cubic", Controller: "tcp:cubic"}}
	if len(rows) != len(want) {
		t.Fatalf("stdout %q: want %d rows", out, len(want))
	}
	for i, r := range rows {
		if r.ViewerBPS <= 0 {
			t.Errorf("row %d: the seat received nothing: %+v", i, r)
		}
		r.ViewerBPS = 0
		if r != want[i] {
			t.Errorf("row %d: %+v, want %+v", i, r, want[i])
		}
	}
	for name, want := range map[string]string{"table.md": "| sidecar | fairgrid | avatars, 1 neighbours | vtcp | cubic | 1 |", "figure.html": "sidecar"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %q (%v)", name, want, err)
		}
	}
}

// TestLabRender: lab render wants one saved result, and says why a file
// cannot be rendered: not JSON, or saved before results carried their
// options.
func TestLabRender(t *testing.T) {
	dir := t.TempDir()
	notJSON := filepath.Join(dir, "notes.json")
	old := filepath.Join(t.TempDir(), "all.json")
	if err := os.WriteFile(notJSON, []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(old, []byte(`{"scenario": "all", "wall_seconds": 3, "runs": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"nothing to render", []string{"lab", "render"}, exitUsage, "want one directory or file"},
		{"bad format", []string{"lab", "render", dir, "--format", "xml"}, exitUsage, "want text, json or markdown"},
		{"no such directory", []string{"lab", "render", filepath.Join(dir, "nosuch")}, exitFail, "nosuch"},
		{"not JSON", []string{"lab", "render", notJSON}, exitFail, "notes.json"},
		{"no options", []string{"lab", "render", filepath.Dir(old), "--format", "markdown"}, exitFail, "no options"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCmd(t, "", tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errOut, tc.code, tc.want)
			}
		})
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/capture/capturetest"
	"github.com/fairgrid/fairgrid/internal/audit"
	"github.com/fairgrid/fairgrid/internal/lab/viewer"
	"github.com/fairgrid/fairgrid/opensim/region"
)

func auditRealCapture(t *testing.T) string {
	t.Helper()
	p, _ := filepath.Abs("../../../shared/testdata/real/opensim-0922-captures/testclient-2x-10min.pcap")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("real capture not found at %s (it lives in ../shared beside the repository): %v", p, err)
	}
	return p
}

// TestAuditRealCapture: the table puts the verdict first and states the
// unbounded fair rate; JSON says it with nulls, never a number; the CSV
// tables have their headers and empty cells for unknowns.
func TestAuditRealCapture(t *testing.T) {
	path := auditRealCapture(t)
	code, out, errOut := runCmd(t, "", "audit", path)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "verdict") || strings.Count(out, "no loss: fair rate unbounded") != 2 || strings.Count(out, audit.VerdictUp) != 2 {
		t.Errorf("table:\n%s", out)
	}

	dir := t.TempDir()
	code, out, errOut = runCmd(t, "", "audit", "--format", "json", "--seconds", "--segment", "nominal", "--csv", dir, path)
	if code != exitOK {
		t.Fatalf("json: exit %d: %s", code, errOut)
	}
	var r audit.Report
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatal(err)
	}
	if len(r.Circuits) != 4 || len(r.Seconds) < 2000 || r.Segment != "nominal" {
		t.Fatalf("%d circuits, %d seconds, segment %q", len(r.Circuits), len(r.Seconds), r.Segment)
	}
	if !strings.Contains(out, `"fair_nominal_s_bit_per_s":null`) || !strings.Contains(out, `"fair_state":"unbounded: no loss"`) {
		t.Errorf("JSON does not state the unbounded rate as null and words")
	}
	for name, want := range map[string]int{audit.CircuitsCSV: 4, audit.SecondsCSV: len(r.Seconds), audit.RequestsCSV: len(r.Requests)} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(recs) != want+1 {
			t.Errorf("%s: %d records, want a header and %d", name, len(recs), want)
		}
		if name == audit.CircuitsCSV {
			col := map[string]int{}
			for i, h := range recs[0] {
				col[h] = i
			}
			if got := recs[1][col["fair_mean_s_bit_per_s"]]; got != "" {
				t.Errorf("unknown fair rate written as %q, want an empty cell", got)
			}
			if _, ok := col["category_texture_bit_per_s"]; !ok {
				t.Errorf("no per-category column: %q", recs[0])
			}
		}
	}
}

func TestAuditExitCodes(t *testing.T) {
	dir := t.TempDir()
	notCapture := filepath.Join(dir, "notes.txt")
	os.WriteFile(notCapture, []byte("hello\n"), 0o644)
	empty := filepath.Join(dir, "empty.pcap")
	f, _ := os.Create(empty)
	capturetest.Write(f, capturetest.Pcap, nil)
	f.Close()
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		says     string
		noReport bool // nothing could be read: no table either
	}{
		{"no input", []string{"audit"}, exitUsage, "no captures named", false},
		{"bad segment", []string{"audit", "--segment", "mss", "x.pcap"}, exitUsage, "--segment", false},
		{"seconds without json", []string{"audit", "--seconds", "x.pcap"}, exitUsage, "--seconds needs --format json", false},
		{"live without duration", []string{"audit", "--live", "lo"}, exitUsage, "--live needs --duration", false},
		{"missing file", []string{"audit", filepath.Join(dir, "nosuch.pcap")}, exitFail, "no such file", true},
		{"a directory", []string{"audit", dir}, exitFail, "is a directory", true},
		{"not a capture", []string{"audit", notCapture}, exitFail, "not a capture", true},
		{"no datagrams", []string{"audit", empty}, exitFail, "no LLUDP circuits", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCmd(t, "", tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.says) {
				t.Errorf("exit %d, stderr %q; want %d saying %q", code, errOut, tc.code, tc.says)
			}
			if tc.noReport && out != "" {
				t.Errorf("nothing was read, yet stdout has %q", out)
			}
		})
	}
}

// TestAuditStdin: "-" reads the capture from standard input.
func TestAuditStdin(t *testing.T) {
	raw, err := os.ReadFile(auditRealCapture(t))
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, string(raw), "audit", "-")
	if code != exitOK || !strings.Contains(out, "stdin: 3301947 bytes") {
		t.Errorf("exit %d: %s\n%s", code, errOut, out)
	}
}

// TestAuditDamaged: a capture cut short is audited up to the damage with
// exit 0 and a warning saying where; one cut in its first record read
// nothing, exit 1.
func TestAuditDamaged(t *testing.T) {
	raw, err := os.ReadFile(auditRealCapture(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	half := filepath.Join(dir, "half.pcap")
	os.WriteFile(half, raw[:len(raw)/2], 0o644)
	code, out, errOut := runCmd(t, "", "audit", half)
	if code != exitOK || !strings.Contains(errOut, "half.pcap: stopped at byte ") || !strings.Contains(out, "stopped at byte") {
		t.Errorf("half: exit %d\n%s\n%s", code, errOut, out)
	}
	first := filepath.Join(dir, "first.pcap")
	os.WriteFile(first, raw[:30], 0o644)
	code, _, errOut = runCmd(t, "", "audit", first, half)
	if code != exitFail || !strings.Contains(errOut, "first.pcap: nothing could be read") {
		t.Errorf("first record cut: exit %d: %s", code, errOut)
	}
}

// TestAuditProgress: the bar is drawn on a terminal (a fake one here,
// with a clock that moves 2 s per reading: the audit looks slow) and never
// elsewhere.
func TestAuditProgress(t *testing.T) {
	path := auditRealCapture(t)
	defer func(f func(io.Writer) bool, c func() time.Time) { stderrIsTerminal, progressClock = f, c }(stderrIsTerminal, progressClock)
	for _, terminal := range []bool{true, false} {
		t.Run(fmt.Sprintf("terminal=%v", terminal), func(t *testing.T) {
			stderrIsTerminal = func(io.Writer) bool { return terminal }
			clock := time.Unix(1e9, 0)
			progressClock = func() time.Time { clock = clock.Add(2 * time.Second); return clock }
			code, _, errOut := runCmd(t, "", "audit", "--format", "json", path)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			drawn := strings.Contains(errOut, " MiB of ") && strings.Contains(errOut, "M datagrams/s")
			if drawn != terminal || !terminal && errOut != "" {
				t.Errorf("stderr %q", errOut)
			}
		})
	}
}

// TestAuditParquetEach: --parquet runs render.EachFile into its
// directory (which tests the row groups).
func TestAuditParquetEach(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tables")
	code, out, errOut := runCmd(t, "", "audit", "--parquet", dir, auditRealCapture(t))
	if _, err := os.Stat(filepath.Join(dir, "circuits.parquet")); code != exitOK || err != nil || !strings.HasPrefix(out, "# ") {
		t.Errorf("exit %d, %v: %s\n%s", code, err, errOut, out)
	}
}

// TestAuditHTML: --html writes one page with inline SVG figures.
func TestAuditHTML(t *testing.T) {
	path := auditRealCapture(t)
	page := filepath.Join(t.TempDir(), "audit.html")
	code, _, errOut := runCmd(t, "", "audit", "--html", page, path)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "<svg") || !strings.Contains(string(b), "127.0.0.1:55436") {
		t.Errorf("page without figures or circuits (%d bytes)", len(b))
	}
	if code, _, errOut := runCmd(t, "", "audit", "--html", page, "--parquet", t.TempDir(), path); code != exitUsage {
		t.Errorf("--html with --parquet: exit %d: %s", code, errOut)
	}
}

// TestAuditLive: --live captures on loopback for --duration while a
// viewer talks to a region there, and audits what it saw.
func TestAuditLive(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: a long end-to-end run in real time")
	}
	if runtime.GOOS != "linux" {
		t.Skip("live capture is Linux only (AF_PACKET)")
	}
	if os.Geteuid() != 0 {
		t.Skip("live capture needs root (CAP_NET_RAW)")
	}
	sim, err := region.New(region.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Activity: region.Walking}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	simDone := make(chan struct{})
	go func() { sim.Run(ctx); close(simDone) }()
	defer func() { cancel(); <-simDone }()
	port := fmt.Sprint(sim.Addr().Port())
	type result struct {
		code        int
		out, errOut string
	}
	res := make(chan result, 1)
	go func() {
		var out, errOut bytes.Buffer
		code := run([]string{"audit", "--live", "lo", "--duration", "3s", "--ports", port, "--sim", sim.Addr().String(), "--format", "json"},
			stdio{strings.NewReader(""), &out, &errOut})
		res <- result{code, out.String(), errOut.String()}
	}()
	v, err := viewer.New(viewer.Config{Sim: sim.Addr(), CircuitCode: 77, PingInterval: 200 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	vctx, vcancel := context.WithTimeout(ctx, 2500*time.Millisecond)
	defer vcancel()
	v.Run(vctx)
	got := <-res
	if got.code != exitOK {
		t.Fatalf("exit %d: %s", got.code, got.errOut)
	}
	var r audit.Report
	if err := json.Unmarshal([]byte(got.out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Circuits) != 2 || r.Circuits[0].Packets == 0 || r.Circuits[0].RTTMs == nil || r.Files[0].StoppedAt != nil {
		t.Errorf("circuits %+v, files %+v", r.Circuits, r.Files)
	}
}

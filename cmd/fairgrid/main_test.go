package main

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// runCmd runs the binary's entry point in-process.
func runCmd(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, stdio{strings.NewReader(stdin), &out, &errOut})
	return code, out.String(), errOut.String()
}

func TestUsage(t *testing.T) {
	code, out, _ := runCmd(t, "", "--help")
	if code != exitOK || !strings.Contains(out, "decode") {
		t.Errorf("--help: %d %q", code, out)
	}
	if code, _, errOut := runCmd(t, "", "nosuch"); code != exitUsage || !strings.Contains(errOut, `unknown command "nosuch"`) {
		t.Errorf("unknown command: %d %q", code, errOut)
	}
	for _, c := range commands() {
		code, out, _ := runCmd(t, "", c.name, "--help")
		if code != exitOK || !strings.Contains(out, "Usage: fairgrid "+c.name) {
			t.Errorf("%s --help: %d %q", c.name, code, out)
		}
	}
}

// TestFormatRefused: every subcommand with --format refuses anything but
// text and json before doing anything (viewer --stress once skipped the
// check).
func TestFormatRefused(t *testing.T) {
	for _, args := range [][]string{
		{"decode"}, {"rate", "--loss", "3%", "--rtt", "100ms"}, {"link"},
		{"run", "--demo"}, {"viewer"}, {"viewer", "--stress"},
	} {
		code, _, errOut := runCmd(t, "", append(args, "--format", "xml")...)
		if code != exitUsage || !strings.Contains(errOut, "want text or json") {
			t.Errorf("%v --format xml: exit %d, stderr %q", args, code, errOut)
		}
	}
}

func TestRate(t *testing.T) {
	code, out, errOut := runCmd(t, "", "rate", "--loss", "3%", "--rtt", "100ms", "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct{ TFRC, Padhye, Mathis float64 }
	var raw map[string]float64
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	got.TFRC, got.Padhye, got.Mathis = raw["tfrc_bps"], raw["padhye_bps"], raw["mathis_bps"]
	// congestion.md §5.1/§5.2 at s = 1460 B, R = 100 ms, p = 3 %; there
	// Reno's window is the larger, so a TCP flow's share is the equation.
	if round(got.TFRC/1000) != 646.4 || round(got.Padhye/1000) != 646.4 || round(got.Mathis/1000) != 825.9 || raw["tcp_share_bps"] != raw["tfrc_bps"] || len(raw) != 4 {
		t.Errorf("got %s", out)
	}
	// At 0.02 % and 200 ms CUBIC's average window, RFC 8312 Eq. 5
	// (C = 0.4, β = 0.7), is the larger: 1.054·(R/p)^¾ = 187 segments
	// against Reno's 87, with the equation's timeout term.
	long := map[string]float64{}
	code, longOut, errOut := runCmd(t, "", "rate", "--loss", "0.02%", "--rtt", "200ms", "--format", "json")
	if err := json.Unmarshal([]byte(longOut), &long); code != exitOK || err != nil {
		t.Fatalf("exit %d, %v: %s %s", code, err, longOut, errOut)
	}
	const p, r = 0.0002, 0.2
	w := math.Pow(0.4*3.7/(4*0.3), 0.25) * math.Pow(r/p, 0.75)
	want := 8 * 1460 / (r * (1/w + 12*math.Sqrt(3*p/8)*p*(1+32*p*p)))
	if share := long["tcp_share_bps"]; math.Abs(share-want) > 1 || share < 2*long["tfrc_bps"] {
		t.Errorf("tcp_share_bps %v, want %.1f (CUBIC's window), above twice the equation's %v", share, want, long["tfrc_bps"])
	}
	if _, out2, _ := runCmd(t, "", "rate", "--loss", "0.03", "--rtt", "100ms", "--format", "json"); out2 != out {
		t.Errorf("0.03 and 3%% differ: %s vs %s", out2, out)
	}
	code, out, _ = runCmd(t, "", "rate", "--loss", "0.1", "--rtt", "100ms")
	// TFRC, Padhye and a TCP flow's share agree at 10 %: Reno's window is
	// the larger there.
	if code != exitOK || strings.Count(out, "206.7 kbit/s") != 3 || !strings.Contains(out, "one share (TCP flow)") {
		t.Errorf("text: %d %s", code, out)
	}
	for _, bad := range [][]string{
		{"--rtt", "100ms"}, {"--loss", "3%"}, {"--loss", "0", "--rtt", "1s"}, {"--loss", "150%", "--rtt", "1s"},
		{"--loss", "x", "--rtt", "1s"}, {"--loss", "0.1", "--rtt", "-1s"}, {"--loss", "0.1", "--rtt", "1s", "--size", "0"},
	} {
		if code, _, errOut := runCmd(t, "", append([]string{"rate"}, bad...)...); code != exitUsage || errOut == "" {
			t.Errorf("rate %v: exit %d, stderr %q", bad, code, errOut)
		}
	}
}

func round(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }

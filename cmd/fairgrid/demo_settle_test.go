package main

import (
	"strings"
	"testing"
)

// TestDemoTooShortSaysSo: a demo stopped before the controller had the
// intervals its verdict needs (here four of 100 ms, on a link lossy enough
// that a TCP-fair rate is measured at once) says in words that the
// controller had too little time, and prints no ratio to the fair rate as
// if it had settled, neither the viewer's received rate's nor the stock
// viewer's request's (issue #23: a 10 s demo reported "2.31× the fair
// rate"). The demo is too short for the download beside it, so no ratio
// of any kind stands.
func TestDemoTooShortSaysSo(t *testing.T) {
	code, out, errOut := runCmd(t, "", "run", "--demo", "--interval", "100ms", "--duration", "400ms", "--link", "10M,10ms,10%,100")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "the controller had too little time to judge: 4 intervals of 100ms") {
		t.Errorf("no word that the controller had too little time:\n%s", out)
	}
	// Too short for the download beside it too: no ratio of any kind.
	if strings.Contains(out, "×") {
		t.Errorf("a ratio, as if settled:\n%s", out)
	}
}

// TestDemoLosslessComparison: on a link that loses nothing (a buffer too
// deep to overflow in the run) there is no TCP-fair rate, but the rigs
// still ran side by side, and the download's throughput and the viewer's
// queueing delay beside it are still the demo's ending. The shortest run
// that has them (demo.MinCompareDuration) at 2 Mbit/s, with the gateway's
// row and, with --gateway=false, without it (its rig not run: its words
// gone from the introduction too).
func TestDemoLosslessComparison(t *testing.T) {
	if testing.Short() {
		t.Skip("10 s of real time: skipped with -short")
	}
	t.Parallel()
	for _, tc := range []struct {
		name    string
		flags   []string
		gateway bool
	}{
		{"with the gateway", nil, true},
		{"--gateway=false", []string{"--gateway=false"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runCmd(t, "", append([]string{"run", "--demo", "--interval", "1s", "--duration", "10s", "--link", "2M,20ms,0,100000"}, tc.flags...)...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, want := range []string{"no loss was measured", "stock viewer ", "with fairgrid ", "viewer queueing delay"} {
				if !strings.Contains(out, want) {
					t.Errorf("stdout lacks %q:\n%s", want, out)
				}
			}
			for _, gw := range []string{"through the gateway ", "through fairgrid's gateway"} {
				if strings.Contains(out, gw) != tc.gateway {
					t.Errorf("%q in stdout is %v, want %v:\n%s", gw, !tc.gateway, tc.gateway, out)
				}
			}
		})
	}
}

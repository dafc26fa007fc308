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
// rate").
func TestDemoTooShortSaysSo(t *testing.T) {
	code, out, errOut := runCmd(t, "", "run", "--demo", "--interval", "100ms", "--duration", "400ms", "--link", "10M,10ms,10%,100")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "the controller had too little time to judge: 4 intervals of 100ms") {
		t.Errorf("no word that the controller had too little time:\n%s", out)
	}
	for _, ratio := range []string{"× the TCP-fair", "× the fair rate"} {
		if strings.Contains(out, ratio) {
			t.Errorf("a ratio to the fair rate (%q), as if settled:\n%s", ratio, out)
		}
	}
}

//go:build linux

package main

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestSweepInterrupted: Ctrl-C during a stress sweep's step prints what it
// measured so far marked as interrupted (or that it had measured nothing),
// never counts it in the answer, and exits 0; each step is announced on
// stderr as it starts.
func TestSweepInterrupted(t *testing.T) {
	sim := startSim(t, "--stress")
	v := startBinary(t, time.Minute, "viewer", "--stress", "--sim", sim.addr.String(), "--sweep", "20,40", "--duration", "6s")
	if v.waitLine(regexp.MustCompile(`^fairgrid viewer: (20) viewers, step 1 of 2 \(6s\)$`)) == "" {
		_, _, errOut := v.interrupt(t)
		t.Fatalf("no step line on stderr:\n%s", errOut)
	}
	code, stdout, stderr := v.interrupt(t)
	marked := regexp.MustCompile(`(?m)^\s+20 .*\(interrupted: not judged\)$`).MatchString(stdout) ||
		strings.Contains(stdout, "interrupted before the 20-viewer step measured anything\n")
	if code != exitOK || !marked || !strings.Contains(stdout, "largest number of viewers with a mean delay under 100 ms: 0\n") ||
		strings.Contains(stdout, "\n     40 ") {
		t.Errorf("exit %d; stdout:\n%s\nstderr:\n%s\nwant exit 0, the 20-viewer step marked as interrupted, not counted, no 40-viewer step", code, stdout, stderr)
	}
}

package main

import (
	"strings"
	"testing"

	"github.com/fairgrid/fairgrid/opensim/region"
)

// TestSimRegionFlagErrors: the region's flags are sim's, so that a bad
// value is refused naming the flag, exit 2 (opensim/region tests each).
func TestSimRegionFlagErrors(t *testing.T) {
	for _, args := range [][]string{{"--buckets", "lending"}, {"--listen", "127.0.0.1:65534", "--child-regions", "2"}} {
		code, _, errOut := runCmd(t, "", append([]string{"sim", "--duration", "1ms"}, args...)...)
		if code != exitUsage || !strings.Contains(errOut, "fairgrid sim: "+args[len(args)-2]) {
			t.Errorf("%v: exit %d, stderr %q; want %d naming %s", args, code, errOut, exitUsage, args[len(args)-2])
		}
	}
}

// TestSimHelpStatesDemand: --help states every activity's demand, as
// region.Demand reckons it.
func TestSimHelpStatesDemand(t *testing.T) {
	_, help, _ := runCmd(t, "", "sim", "--help")
	for _, line := range strings.Split(region.ActivityHelp(), "\n") {
		if !strings.Contains(help, line) {
			t.Errorf("--help lacks %q", line)
		}
	}
}

// TestSimChildRegionsRun: --child-regions 2 opens the neighbours beside
// the region and exits cleanly.
func TestSimChildRegionsRun(t *testing.T) {
	code, out, errOut := runCmd(t, "", "sim", "--listen", "127.0.0.1:0", "--child-regions", "2", "--buckets", "opensim", "--activity", "terrain", "--duration", "50ms")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "child_regions=2") {
		t.Errorf("the log does not say two child regions opened: %s\n%s", errOut, out)
	}
	if n := strings.Count(out, "child region 127.0.0.1:"); n != 2 {
		t.Errorf("%d child regions summed up, want 2:\n%s", n, out)
	}
}

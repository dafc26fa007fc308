package main

import (
	"strings"
	"testing"
)

// TestLabGatewayCommandLine: lab gateway refuses a bad command line with
// exit 2 and one line naming the flag, before running anything, and lab
// --help lists it. (internal/lab/gatewaylab's TestFlagsConfig checks each
// flag's values, and TestRun the rig.)
func TestLabGatewayCommandLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown controller", []string{"lab", "gateway", "--controller", "cubic"}, `"cubic"`},
		{"bad loss", []string{"lab", "gateway", "--loss", "1.5"}, "fairgrid lab gateway: --loss \"1.5\": 1.5 is outside 0 to 1 (0% to 100%); for 1.5 %, write 1.5%\n"},
		{"bad format", []string{"lab", "gateway", "--format", "xml"}, "want text or json"},
		{"positional", []string{"lab", "gateway", "extra"}, "unexpected argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCmd(t, "", tc.args...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errOut, exitUsage, tc.want)
			}
		})
	}
	code, out, _ := runCmd(t, "", "lab", "gateway", "--help")
	if code != exitOK || !strings.Contains(out, "--controller") || !strings.Contains(out, "gateway") {
		t.Errorf("lab gateway --help: exit %d, %q", code, out)
	}
	if code, out, _ := runCmd(t, "", "lab", "--help"); code != exitOK || !strings.Contains(out, "gateway") {
		t.Errorf("lab --help does not list gateway: exit %d, %q", code, out)
	}
}

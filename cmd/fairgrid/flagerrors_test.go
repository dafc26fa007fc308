package main

import (
	"strings"
	"testing"
)

// TestFlagErrorsOneLine: a mistake on the command line gets one line on
// stderr that says what is wrong and what was probably meant, exit 2, and
// not the whole option list.
func TestFlagErrorsOneLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"viewer", "--clinets", "3"}, "fairgrid viewer: unknown flag --clinets (did you mean --clients?); see fairgrid viewer --help"},
		{[]string{"run", "--controler", "tfrc"}, "unknown flag --controler (did you mean --controller?)"},
		{[]string{"lab", "--zzzz"}, "fairgrid lab: unknown flag --zzzz; see fairgrid lab --help"},
		{[]string{"rate", "--rtt", "100", "--loss", "1%"}, "--rtt 100: a duration needs a unit, such as 100ms or 100s"},
		{[]string{"rate", "--rtt", "soon", "--loss", "1%"}, `--rtt "soon": want a duration such as 100ms, 5s or 1m`},
		{[]string{"sim", "--listen"}, "fairgrid sim: --listen needs a value"},
		{[]string{"rate", "--size", "1460B", "--loss", "1%", "--rtt", "100ms"}, `--size "1460B": want a number, such as 1460`},
		{[]string{"run", "--demo", "--gateway=maybe"}, `fairgrid run: --gateway="maybe": want true or false (--gateway alone is true)`},
		{[]string{"lab", "gateway", "--loss", "3"}, `fairgrid lab gateway: --loss "3": 3 is outside 0 to 1 (0% to 100%); for 3 %, write 3%`},
		{[]string{"proxy", "--max-connects", "1e3"}, `--max-connects "1e3" (proxy.max_connects): want a whole number, such as 128`},
		{[]string{"demo"}, `fairgrid: unknown command "demo" (did you mean fairgrid run --demo?); see fairgrid --help`},
		{[]string{"dcode", "x.pcap"}, `unknown command "dcode" (did you mean fairgrid decode?)`},
		{[]string{"help", "raet"}, `fairgrid help: unknown command "raet" (did you mean fairgrid rate?)`},
		{[]string{"frobnicate"}, `fairgrid: unknown command "frobnicate"; see fairgrid --help`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := runCmd(t, "", tc.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			if !strings.Contains(errOut, tc.want) {
				t.Errorf("stderr %q, want it to contain %q", errOut, tc.want)
			}
			if lines := strings.Count(strings.TrimRight(errOut, "\n"), "\n") + 1; lines != 1 {
				t.Errorf("stderr has %d lines, want one:\n%s", lines, errOut)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
		})
	}
}

package main

import (
	"strings"
	"testing"
)

// TestHelpCommand: `fairgrid help COMMAND` is COMMAND's help for every
// command; an unknown one is an error.
func TestHelpCommand(t *testing.T) {
	for _, c := range commands() {
		code, out, errOut := runCmd(t, "", "help", c.name)
		_, want, _ := runCmd(t, "", c.name, "--help")
		if code != exitOK || !strings.HasPrefix(out, "Usage: fairgrid "+c.name+" ") || out != want || errOut != "" {
			t.Errorf("help %s: exit %d\nstdout %q\nstderr %q", c.name, code, out, errOut)
		}
	}
	for _, tc := range []struct {
		args []string
		code int
		out  string
		err  string
	}{
		{[]string{"help"}, exitOK, "Commands:", ""},
		{[]string{"help", "nosuch"}, exitUsage, "", `unknown command "nosuch"`},
		{[]string{"help", "decode", "extra"}, exitUsage, "", `unexpected argument "extra"`},
		{nil, exitUsage, "", "Commands:"},
	} {
		code, out, errOut := runCmd(t, "", tc.args...)
		if code != tc.code || !strings.Contains(out, tc.out) || tc.out == "" && out != "" || !strings.Contains(errOut, tc.err) {
			t.Errorf("%v: exit %d\nstdout %q\nstderr %q", tc.args, code, out, errOut)
		}
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPositionalArguments: a command that takes options only names an
// unexpected argument and exits 2; flags after positional arguments are
// flags; `run --check-config FILE` checks FILE.
func TestPositionalArguments(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.toml")
	if err := os.WriteFile(bad, []byte("[control]\ncontroller = \"nosuch\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join("..", "..", "configs", "fairgrid.toml")
	tests := []struct {
		name      string
		args      []string
		code      int
		stdout    string
		stderr    string
		notStderr string
	}{
		{"sim extra", []string{"sim", "foo"}, exitUsage, "", `unexpected argument "foo"`, ""},
		{"viewer extra", []string{"viewer", "--clients", "1", "bar"}, exitUsage, "", `unexpected argument "bar"`, ""},
		{"link extra", []string{"link", "x"}, exitUsage, "", `unexpected argument "x"`, ""},
		{"rate extra", []string{"rate", "--loss", "1%", "--rtt", "100ms", "extra"}, exitUsage, "", `unexpected argument "extra"`, ""},
		{"rate flags after", []string{"rate", "--loss", "1%", "--rtt", "100ms"}, exitOK, "kbit/s", "", ""},
		{"check-config missing file", []string{"run", "--check-config", "/no/such/fairgrid.toml"}, exitUsage, "", "no such file", ""},
		{"check-config bad file", []string{"run", "--check-config", bad}, exitUsage, "", "nosuch", ""},
		{"check-config file first", []string{"run", bad, "--check-config"}, exitUsage, "", "nosuch", ""},
		{"check-config good file", []string{"run", "--check-config", good}, exitOK, "configuration ok", "", ""},
		{"check-config two files", []string{"run", "--check-config", good, good}, exitUsage, "", "unexpected argument", ""},
		{"run positional without check", []string{"run", good}, exitUsage, "", "unexpected argument", ""},
		{"decode flag after hex", []string{"decode", "000000000100010304000000", "--format", "json"}, exitOK, `"message":"StartPingCheck"`, "", "not a hex"},
		{"decode after --", []string{"decode", "--", "--summary"}, exitFail, "neither a file nor a hex datagram", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCmd(t, "", tt.args...)
			if code != tt.code || !strings.Contains(out, tt.stdout) || !strings.Contains(errOut, tt.stderr) ||
				tt.notStderr != "" && strings.Contains(out+errOut, tt.notStderr) {
				t.Errorf("%v: exit %d, want %d\nstdout: %s\nstderr: %s", tt.args, code, tt.code, out, errOut)
			}
		})
	}
}

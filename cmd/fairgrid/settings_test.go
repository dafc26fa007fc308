//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func init() {
	behaviourCases["log.format"] = behaviourCase{"", func(t *testing.T, _, _ scenario) { logFormatKey(t) }}
}

// jsonLines reports whether every line of log is one JSON object with a
// message, and how many lines there are.
func jsonLines(log string) (bool, int) {
	lines := strings.Split(strings.TrimSpace(log), "\n")
	for _, line := range lines {
		var rec struct{ Msg string }
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Msg == "" {
			return false, len(lines)
		}
	}
	return true, len(lines)
}

// logFormatKey: log.format = "json" makes a front-end log one JSON object
// a line; the default, text, key=value lines. Shown on the gateway, which
// stops by itself; every front-end makes its log with cli.NewLogger
// (TestLogFormatFlag).
func logFormatKey(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		path := filepath.Join(t.TempDir(), "fairgrid.toml")
		toml := "[metrics]\ngateway_address = \"\"\n[gateway]\nroutes = [\"127.0.0.1:0=127.0.0.1:9\"]\n"
		if format == "json" {
			toml += "[log]\nformat = \"json\"\n"
		}
		if err := os.WriteFile(path, []byte(toml), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := runCmd(t, "", "gateway", "--config", path, "--duration", "50ms")
		isJSON, n := jsonLines(errOut)
		if code != exitOK || n < 2 || isJSON != (format == "json") || format == "text" && !strings.HasPrefix(errOut, "time=") {
			t.Errorf("log.format %s: exit %d, %d lines, JSON %v:\n%s", format, code, n, isJSON, errOut)
		}
	}
}

// TestLogFormatFlag: --log-format json on each long-running front-end
// (run, proxy, gateway, sim) makes its log JSON lines.
func TestLogFormatFlag(t *testing.T) {
	t.Run("sim", func(t *testing.T) {
		code, _, errOut := runCmd(t, "", "sim", "--listen", "127.0.0.1:0", "--duration", "50ms", "--log-format", "json")
		if ok, n := jsonLines(errOut); code != exitOK || !ok || n < 1 {
			t.Errorf("exit %d, %d lines, JSON %v:\n%s", code, n, ok, errOut)
		}
	})
	t.Run("gateway", func(t *testing.T) {
		code, _, errOut := runCmd(t, "", "gateway", "--listen", "127.0.0.1:0", "--region", "127.0.0.1:9", "--metrics", "", "--duration", "50ms", "--log-format", "json")
		if ok, n := jsonLines(errOut); code != exitOK || !ok || n < 2 {
			t.Errorf("exit %d, %d lines, JSON %v:\n%s", code, n, ok, errOut)
		}
	})
	t.Run("proxy", func(t *testing.T) {
		log := honestCommand(t, "proxy", "fairgrid proxy listening", "--listen", "127.0.0.1:0", "--metrics", "", "--log-format", "json")
		if ok, n := jsonLines(log.String()); !ok {
			t.Errorf("%d lines, not JSON:\n%s", n, log.String())
		}
	})
	t.Run("run", func(t *testing.T) {
		log := honestDaemon(t, "--interface", "lo", "--dry-run", "--metrics", "", "--log-format", "json")
		if ok, n := jsonLines(log.String()); !ok {
			t.Errorf("%d lines, not JSON:\n%s", n, log.String())
		}
	})
}

// TestSettingErrors: a bad value of a setting's flag is refused as the
// command line is parsed, naming the flag and the key, with the reason
// the configuration file's decoder gives for the same value.
func TestSettingErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--controller", "cubic"}, `fairgrid run: --controller (control.controller): "cubic": want vtcp, window, tfrc or viewer; see fairgrid run --help`},
		{[]string{"run", "--log-format", "logfmt"}, `--log-format (log.format): "logfmt": want text or json`},
		{[]string{"run", "--interval", "5"}, `--interval 5 (control.interval): a duration needs a unit, such as 5ms or 5s`},
		{[]string{"gateway", "--interval", "soon"}, `--interval "soon" (control.interval): want a duration such as 100ms, 5s or 1m`},
		{[]string{"proxy", "--allow-ports", "80,http"}, `--allow-ports "80,http" (proxy.allow_ports): "http": want a port or a range such as 9000-13100`},
		{[]string{"proxy", "--metrics", "everywhere"}, `--metrics (metrics.proxy_address): "everywhere": want ip:port, or empty`},
		{[]string{"gateway", "--scene-max", "0"}, `--scene-max "0" (gateway.scene_bps): want a positive rate such as 50M`},
		{[]string{"gateway", "--bind", "here"}, `--bind (gateway.bind): "here": want an IP address, or empty`},
		{[]string{"audit", "--segment", "mss", "x.pcap"}, `--segment: "mss": want mean or nominal`},
	} {
		code, out, errOut := runCmd(t, "", tc.args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, %q %q; want exit 2 and one line with %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

// TestSettingDefaults: each setting flag's default, shown by --help, is
// the key's in the shipped configuration (one place for defaults).
func TestSettingDefaults(t *testing.T) {
	for _, command := range []string{"run", "proxy", "gateway"} {
		_, help, _ := runCmd(t, "", command, "--help")
		for _, want := range []string{"(default vtcp)", "(default mean)", "(default 5s)", "(default info)", "(default text)"} {
			if !strings.Contains(help, want) {
				t.Errorf("%s --help lacks %s", command, want)
			}
		}
	}
	_, help, _ := runCmd(t, "", "gateway", "--help")
	if !strings.Contains(help, "(default 50M)") || !strings.Contains(help, "(default 127.0.0.1:9103)") {
		t.Errorf("gateway --help lacks the scene rate's or the metrics' default:\n%s", help)
	}
	_, help, _ = runCmd(t, "", "proxy", "--help")
	if !strings.Contains(help, "(default 80,443,8002,9000-13100,12043,12046)") || !strings.Contains(help, "(default 127.0.0.1:1080)") {
		t.Errorf("proxy --help lacks allow_ports' or listen's default:\n%s", help)
	}
}

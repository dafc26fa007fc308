package main

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairgrid/fairgrid/internal/cli"
	"github.com/fairgrid/fairgrid/lludp"
)

// TestProxyFlagsRefused: every bad command line of proxy and viewer
// --socks5 is refused before anything listens, with exit 2 and a message
// naming the flag.
func TestProxyFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	pass := filepath.Join(dir, "pass")
	if err := os.WriteFile(pass, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badConfig := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(badConfig, []byte("[control]\ninterval = \"1ms\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	quiet := []string{"--metrics", ""}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"listen without port", []string{"proxy", "--listen", "127.0.0.1"}, "--listen"},
		{"non-loopback without auth", []string{"proxy", "--listen", "0.0.0.0:0"}, "a username and password are required"},
		{"IPv6 any without auth", []string{"proxy", "--listen", "[::]:1080"}, "a username and password are required"},
		{"host name without auth", []string{"proxy", "--listen", "example.org:1080"}, "a username and password are required"},
		{"user without password", []string{"proxy", "--user", "viewer"}, "needs a password"},
		{"password file without user", []string{"proxy", "--password-file", pass}, "proxy.password_file (--password-file) needs proxy.username (--user)"},
		{"missing password file", []string{"proxy", "--user", "viewer", "--password-file", filepath.Join(dir, "none")}, "--password-file"},
		{"long user", []string{"proxy", "--user", strings.Repeat("u", 256), "--password-file", pass}, "at most 255 bytes"},
		{"port not a number", []string{"proxy", "--allow-ports", "80,http"}, `"http"`},
		{"port zero", []string{"proxy", "--allow-ports", "0"}, "--allow-ports"},
		{"empty range", []string{"proxy", "--allow-ports", "443-80"}, `"443-80"`},
		{"no associations", []string{"proxy", "--max-associations", "0"}, "want at least 1"},
		{"negative connects", []string{"proxy", "--max-connects", "-1"}, "want at least 1"},
		{"controller", []string{"proxy", "--controller", "bbr"}, "control.controller"},
		{"config out of range", []string{"proxy", "--config", badConfig}, "control.interval"},
		{"argument", []string{"proxy", "extra"}, `unexpected argument "extra"`},
		{"viewer user without proxy", []string{"viewer", "--socks5-user", "u", "--socks5-pass", "p"}, "need --socks5"},
		{"viewer user without password", []string{"viewer", "--socks5", "127.0.0.1:1080", "--socks5-user", "u"}, "go together"},
		{"viewer stress through proxy", []string{"viewer", "--stress", "--socks5", "127.0.0.1:1080"}, "does not apply to --stress"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if args[0] == "proxy" {
				args = append(args, quiet...)
			}
			code, out, errOut := runCmd(t, "", args...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) || out != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and %q", code, out, errOut, tc.want)
			}
		})
	}
}

// TestProxyFails: a listen address in use, or an unreachable proxy for the
// viewer, is a failure (exit 1) that says what failed.
func TestProxyFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if code, _, errOut := runCmd(t, "", "proxy", "--listen", ln.Addr().String(), "--metrics", ""); code != exitFail || !strings.Contains(errOut, "(proxy.listen): the address is in use, perhaps by another proxy; choose another with --listen ADDR") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("listen address in use: exit %d, stderr %q", code, errOut)
	}
	// A port nobody listens on: the one just closed.
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := closed.Addr().String()
	closed.Close()
	if code, _, errOut := runCmd(t, "", "viewer", "--socks5", addr, "--duration", "1ms"); code != exitFail || !strings.Contains(errOut, "dialing proxy") {
		t.Errorf("viewer through a closed proxy: exit %d, stderr %q", code, errOut)
	}
}

// TestProxyHelp: the help names the viewer's setting and the security
// defaults.
func TestProxyHelp(t *testing.T) {
	code, out, _ := runCmd(t, "", "help", "proxy")
	for _, want := range []string{"Usage: fairgrid proxy", "Use SOCKS 5 proxy for UDP traffic", "127.0.0.1:1080", cli.ProxyPasswordEnv, "--allow-ports"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("exit %d, help lacks %q:\n%s", code, want, out)
		}
	}
	if code, out, _ := runCmd(t, "", "--help"); code != exitOK || !strings.Contains(out, "proxy ") {
		t.Errorf("fairgrid --help does not list proxy: %q", out)
	}
}

// TestParsePortRanges reads what --allow-ports takes, as the proxy does:
// split at its commas into proxy.allow_ports' type, and refused when it
// parses to nothing.
func TestParsePortRanges(t *testing.T) {
	parsePortRanges := func(list string) (lludp.Ports, error) {
		fs, set, _, _ := proxyFlags(stdio{strings.NewReader(""), io.Discard, io.Discard})
		fs.SetOutput(io.Discard)
		if err := fs.Parse([]string{"--allow-ports", list}); err != nil {
			return nil, err
		}
		f, err := set.Load("")
		if err != nil {
			return nil, err
		}
		return f.Proxy.AllowPorts.Ports(), nil
	}
	got, err := parsePortRanges("80, 443,9000-13100")
	want := lludp.Ports{{Lo: 80, Hi: 80}, {Lo: 443, Hi: 443}, {Lo: 9000, Hi: 13100}}
	if err != nil || len(got) != len(want) {
		t.Fatalf("got %v, %v", got, err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("range %d: got %v, want %v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"", ",", "65536", "1-", "-5", "80;443"} {
		if _, err := parsePortRanges(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

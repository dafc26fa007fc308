package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/configs"
	"github.com/fairgrid/fairgrid/internal/cli"
	"github.com/fairgrid/fairgrid/internal/fakenet"
	"github.com/fairgrid/fairgrid/throttle/proxy/socks5"
	"github.com/fairgrid/fairgrid/throttle/sidecar"
)

// proxyFromFile runs the proxy a configuration file with toml describes,
// built as the command builds it (settings.load, proxyConfig,
// newDaemon, newProxy, one group), with envPass standing for
// $FAIRGRID_PROXY_PASSWORD. It returns the address the proxy listens on.
func proxyFromFile(t *testing.T, toml, envPass string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fairgrid.toml")
	if err := os.WriteFile(path, []byte("[metrics]\naddress = \"\"\n"+toml), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := proxySettings(t).Load(path)
	if err != nil {
		t.Fatal(err)
	}
	pc, listen, err := cli.ProxyConfig(f, envPass)
	if err != nil {
		t.Fatal(err)
	}
	d, err := newDaemon(f, nil, slog.New(slog.DiscardHandler), new(slog.LevelVar))
	if err != nil {
		t.Fatal(err)
	}
	_, _, addr := runTestProxyOn(t, listen, d, pc, sidecar.Config{})
	return addr
}

// onLoopback is the [proxy] table of a proxy on a free loopback port.
const onLoopback = "[proxy]\nlisten = \"127.0.0.1:0\"\n"

func associate(addr string, auth *socks5.Auth) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := socks5.DialUDP(ctx, addr, auth)
	if err == nil {
		c.Close()
	}
	return err
}

// webServer is a local HTTP server a CONNECT can reach, and its port.
func webServer(t *testing.T) (string, uint16) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "grid info") }))
	t.Cleanup(srv.Close)
	ap := netip.MustParseAddrPort(srv.Listener.Addr().String())
	for _, r := range socks5.DefaultAllowedPorts {
		if ap.Port() >= r.Lo && ap.Port() <= r.Hi {
			t.Skipf("the test server's port %d is one CONNECT allows by default, so the defaults would not refuse it", ap.Port())
		}
	}
	return ap.String(), ap.Port()
}

func connect(addr, target string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d := &socks5.Dialer{ProxyAddr: addr}
	return d.DialContext(ctx, "tcp", target)
}

// proxyKeyListen: the proxy listens where proxy.listen says.
func proxyKeyListen(t *testing.T) {
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	want := free.Addr().String()
	free.Close()
	if want == string(configs.Default().Proxy.Listen) {
		t.Fatalf("the free port is the default's, %s: the case shows nothing", want)
	}
	got := proxyFromFile(t, fmt.Sprintf("[proxy]\nlisten = %q\n", want), "")
	if got != want {
		t.Errorf("listening on %s; want %s", got, want)
	}
	if err := associate(want, nil); err != nil {
		t.Errorf("no SOCKS5 at %s: %v", want, err)
	}
}

// proxyKeyAllowPorts: CONNECT reaches a port proxy.allow_ports lists, and
// not one only the defaults would have refused.
func proxyKeyAllowPorts(t *testing.T) {
	target, port := webServer(t)
	if _, err := connect(proxyFromFile(t, onLoopback, ""), target); !errors.Is(err, socks5.ErrRefused) {
		t.Errorf("CONNECT to port %d with the default ports: %v; want refused", port, err)
	}
	c, err := connect(proxyFromFile(t, onLoopback+fmt.Sprintf("allow_ports = [\"%d\"]\n", port), ""), target)
	if err != nil {
		t.Fatalf("CONNECT to port %d when allowed: %v", port, err)
	}
	c.Close()
}

// proxyKeyMaxAssociations: a second association from the same address is
// refused with max_associations = 1, and made with the default.
func proxyKeyMaxAssociations(t *testing.T) {
	for _, tc := range []struct {
		toml    string
		refused bool
	}{{onLoopback, false}, {onLoopback + "max_associations = 1\n", true}} {
		addr := proxyFromFile(t, tc.toml, "")
		first, err := socks5.DialUDP(context.Background(), addr, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = associate(addr, nil)
		first.Close()
		if refused := errors.Is(err, socks5.ErrRefused); refused != tc.refused {
			t.Errorf("%q: second association %v; want refused %v", tc.toml, err, tc.refused)
		}
	}
}

// proxyKeyMaxConnects: a second CONNECT while one is open is refused with
// max_connects = 1, and made with the default.
func proxyKeyMaxConnects(t *testing.T) {
	target, port := webServer(t)
	allow := fmt.Sprintf("allow_ports = [\"%d\"]\n", port)
	for _, tc := range []struct {
		toml    string
		refused bool
	}{{onLoopback + allow, false}, {onLoopback + allow + "max_connects = 1\n", true}} {
		addr := proxyFromFile(t, tc.toml, "")
		first, err := connect(addr, target)
		if err != nil {
			t.Fatal(err)
		}
		second, err := connect(addr, target)
		first.Close()
		if err == nil {
			second.Close()
		}
		if refused := errors.Is(err, socks5.ErrRefused); refused != tc.refused {
			t.Errorf("%q: second CONNECT %v; want refused %v", tc.toml, err, tc.refused)
		}
	}
}

// proxyKeyMaxSessions: with max_sessions = 1 a second session (here an
// association beside a CONNECT, from any address) is refused while the
// first is in use; with the default it is made.
func proxyKeyMaxSessions(t *testing.T) {
	target, port := webServer(t)
	allow := fmt.Sprintf("allow_ports = [\"%d\"]\n", port)
	for _, tc := range []struct {
		toml    string
		refused bool
	}{{onLoopback + allow, false}, {onLoopback + allow + "max_sessions = 1\n", true}} {
		addr := proxyFromFile(t, tc.toml, "")
		first, err := connect(addr, target)
		if err != nil {
			t.Fatal(err)
		}
		err = associate(addr, nil)
		first.Close()
		if refused := errors.Is(err, socks5.ErrRefused); refused != tc.refused {
			t.Errorf("%q: an association beside a CONNECT: %v; want refused %v", tc.toml, err, tc.refused)
		}
	}
}

// stillOpen reports whether the proxy has not closed c: a read that
// would block (its deadline passed at once), not an end.
func stillOpen(c net.Conn) bool {
	c.SetReadDeadline(time.Now())
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// awaitClosed waits until the proxy closes c (at most 5 s).
func awaitClosed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.Copy(io.Discard, c); err != nil {
		t.Fatalf("%s: %v, want the proxy to close it", what, err)
	}
}

// proxyKeyIdleTimeout: a CONNECT that relays nothing is ended after
// idle_timeout; one through a proxy with the default (5 minutes) is still
// open then.
func proxyKeyIdleTimeout(t *testing.T) {
	target, port := webServer(t)
	allow := fmt.Sprintf("allow_ports = [\"%d\"]\n", port)
	deflt, err := connect(proxyFromFile(t, onLoopback+allow, ""), target)
	if err != nil {
		t.Fatal(err)
	}
	defer deflt.Close()
	short, err := connect(proxyFromFile(t, onLoopback+allow+"idle_timeout = \"200ms\"\n", ""), target)
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	awaitClosed(t, short, "idle_timeout = 200ms, an idle CONNECT")
	if !stillOpen(deflt) {
		t.Error("with the default idle timeout the idle CONNECT was closed too")
	}
}

// proxyKeyHalfCloseTimeout: once the client has finished sending, a
// silent remote keeps the CONNECT for half_close_timeout; with the
// default (30 s) it is still open then.
func proxyKeyHalfCloseTimeout(t *testing.T) {
	target := fakenet.SilentRemote(t).String()
	allow := fmt.Sprintf("allow_ports = [\"%d\"]\n", netip.MustParseAddrPort(target).Port())
	open := func(toml string) net.Conn {
		c, err := connect(proxyFromFile(t, onLoopback+allow+toml, ""), target)
		if err != nil {
			t.Fatal(err)
		}
		c.(interface{ CloseWrite() error }).CloseWrite()
		return c
	}
	deflt := open("")
	defer deflt.Close()
	short := open("half_close_timeout = \"200ms\"\n")
	defer short.Close()
	awaitClosed(t, short, "half_close_timeout = 200ms, a half-closed CONNECT to a silent remote")
	if !stillOpen(deflt) {
		t.Error("with the default half-close timeout the CONNECT was closed too")
	}
}

// proxyKeyUsername: with proxy.username (the password from the
// environment) a client without it is refused and one with it served;
// without the key anyone is served.
func proxyKeyUsername(t *testing.T) {
	if err := associate(proxyFromFile(t, onLoopback, "secret"), nil); err != nil {
		t.Errorf("the default, no username: %v", err)
	}
	addr := proxyFromFile(t, onLoopback+"username = \"viewer\"\n", "secret")
	if err := associate(addr, nil); !errors.Is(err, socks5.ErrRefused) {
		t.Errorf("with a username configured, a client without: %v; want refused", err)
	}
	if err := associate(addr, &socks5.Auth{Username: "viewer", Password: "secret"}); err != nil {
		t.Errorf("with the username and password: %v", err)
	}
}

// proxyKeyPasswordFile: the password is the file's first line, not the
// environment's.
func proxyKeyPasswordFile(t *testing.T) {
	pass := filepath.Join(t.TempDir(), "pass")
	if err := os.WriteFile(pass, []byte("fromfile\nignored\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := proxyFromFile(t, onLoopback+fmt.Sprintf("username = \"viewer\"\npassword_file = %q\n", pass), "fromenv")
	if err := associate(addr, &socks5.Auth{Username: "viewer", Password: "fromenv"}); !errors.Is(err, socks5.ErrRefused) {
		t.Errorf("the environment's password: %v; want refused", err)
	}
	if err := associate(addr, &socks5.Auth{Username: "viewer", Password: "fromfile"}); err != nil {
		t.Errorf("the file's password: %v", err)
	}
}

// TestEveryProxyFlagReachesItsKey: each flag of fairgrid proxy sets its
// key — a bad value is refused naming the key — so that
// TestEveryKeyChangesBehaviour covers the flag too. The flags come from
// the synopsis of `fairgrid proxy --help`.
func TestEveryProxyFlagReachesItsKey(t *testing.T) {
	_, help, _ := runCmd(t, "", "proxy", "--help")
	synopsis, _, _ := strings.Cut(help, "\n\n")
	flags := regexp.MustCompile(`\[--([a-z-]+)`).FindAllStringSubmatch(synopsis, -1)
	missing := filepath.Join(t.TempDir(), "missing.toml")
	cases := map[string]struct {
		args []string
		code int
		want string
	}{
		"listen":           {[]string{"--listen", "127.0.0.1", "--check-config"}, exitUsage, "proxy.listen"},
		"config":           {[]string{"--config", missing, "--check-config"}, exitUsage, "missing.toml"},
		"check-config":     {[]string{"--check-config"}, exitOK, "configuration ok"},
		"controller":       {[]string{"--controller", "reno", "--check-config"}, exitUsage, "control.controller"},
		"segment":          {[]string{"--segment", "1460", "--check-config"}, exitUsage, "control.segment"},
		"interval":         {[]string{"--interval", "10ms", "--check-config"}, exitUsage, "control.interval"},
		"metrics":          {[]string{"--metrics", "everywhere", "--check-config"}, exitUsage, "metrics.proxy_address"},
		"log-level":        {[]string{"--log-level", "chatty", "--check-config"}, exitUsage, "log.level"},
		"log-format":       {[]string{"--log-format", "logfmt", "--check-config"}, exitUsage, "log.format"},
		"user":             {[]string{"--user", strings.Repeat("u", 256), "--check-config"}, exitUsage, "proxy.username"},
		"password-file":    {[]string{"--user", "viewer", "--password-file", missing, "--check-config"}, exitUsage, "proxy.password_file"},
		"allow-ports":      {[]string{"--allow-ports", "80,http", "--check-config"}, exitUsage, "proxy.allow_ports"},
		"sim-ports":        {[]string{"--sim-ports", "13100-9000", "--check-config"}, exitUsage, "capture.ports"},
		"max-associations": {[]string{"--max-associations", "0", "--check-config"}, exitUsage, "proxy.max_associations"},
		"max-connects":     {[]string{"--max-connects", "0", "--check-config"}, exitUsage, "proxy.max_connects"},
		// A boolean has no bad value: its key is read below.
		"dry-run": {},
	}
	if len(flags) < 13 {
		t.Fatalf("found %d flags in the synopsis %q", len(flags), synopsis)
	}
	for _, m := range flags {
		name := m[1]
		t.Run(name, func(t *testing.T) {
			tc, ok := cases[name]
			if !ok {
				t.Fatalf("no case for --%s: add one", name)
			}
			if tc.args == nil {
				f, err := proxySettings(t, "--dry-run").Load("")
				if err != nil || !f.Send.DryRun {
					t.Errorf("--dry-run: send.dry_run %v, %v", f != nil && f.Send.DryRun, err)
				}
				return
			}
			code, out, errOut := runCmd(t, "", append([]string{"proxy"}, tc.args...)...)
			if code != tc.code || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("%v: exit %d, %q %q; want exit %d with %q", tc.args, code, out, errOut, tc.code, tc.want)
			}
		})
	}
}

// proxySettings are the proxy's settings (proxyFlags) with args parsed.
func proxySettings(t *testing.T, args ...string) *cli.Settings {
	t.Helper()
	fs, set, _, _ := proxyFlags(stdio{strings.NewReader(""), io.Discard, io.Discard})
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return set
}

// TestProxyFlagsOverrideFile: each proxy flag overrides its key from the
// file; without the flag the file's value holds.
func TestProxyFlagsOverrideFile(t *testing.T) {
	pass := filepath.Join(t.TempDir(), "pass")
	file := filepath.Join(t.TempDir(), "fairgrid.toml")
	toml := "[proxy]\nlisten = \"127.0.0.1:1090\"\nallow_ports = [\"443\"]\nmax_associations = 3\nmax_connects = 4\nusername = \"fromfile\"\npassword_file = \"/nonexistent\"\n"
	if err := os.WriteFile(file, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flag, value string
		got         func(f *configs.File) any
		want        any
	}{
		{"listen", "127.0.0.1:1091", func(f *configs.File) any { return f.Proxy.Listen }, "127.0.0.1:1091"},
		{"allow-ports", "80,9000-9010", func(f *configs.File) any { return f.Proxy.AllowPorts }, "80,9000-9010"},
		{"max-associations", "5", func(f *configs.File) any { return f.Proxy.MaxAssociations }, 5},
		{"max-connects", "6", func(f *configs.File) any { return f.Proxy.MaxConnects }, 6},
		{"user", "fromflag", func(f *configs.File) any { return f.Proxy.Username }, "fromflag"},
		{"password-file", pass, func(f *configs.File) any { return f.Proxy.PasswordFile }, pass},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			fromFile, err := proxySettings(t).Load(file)
			if err != nil {
				t.Fatal(err)
			}
			f, err := proxySettings(t, "--"+tc.flag, tc.value).Load(file)
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.got(f); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("--%s %s over the file: %v", tc.flag, tc.value, got)
			}
			if fmt.Sprint(tc.got(fromFile)) == fmt.Sprint(tc.want) {
				t.Errorf("the file alone gives %v too: the case shows nothing", tc.want)
			}
			// Only the flag's key differs from the file's.
			if changed := configs.Changed(fromFile, f); len(changed) != 1 || !strings.HasPrefix(changed[0], "proxy.") {
				t.Errorf("--%s changed %v", tc.flag, changed)
			}
		})
	}
}

// TestProxyCheckConfig: `fairgrid proxy --check-config FILE` accepts the
// shipped configuration and refuses a listen address beyond loopback
// without credentials, as the proxy would at start.
func TestProxyCheckConfig(t *testing.T) {
	open := filepath.Join(t.TempDir(), "open.toml")
	if err := os.WriteFile(open, []byte("[proxy]\nlisten = \"0.0.0.0:1080\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"proxy", "--check-config", "../../configs/fairgrid.toml"}, exitOK, "configuration ok"},
		{[]string{"proxy", "--check-config", open}, exitUsage, "a username and password are required"},
		{[]string{"proxy", "--config", open, "--check-config"}, exitUsage, "proxy.listen"},
		{[]string{"proxy", "--check-config", open, "extra"}, exitUsage, "unexpected argument"},
	} {
		code, out, errOut := runCmd(t, "", tc.args...)
		if code != tc.code || !strings.Contains(out+errOut, tc.want) {
			t.Errorf("%v: exit %d, %q %q; want exit %d with %q", tc.args, code, out, errOut, tc.code, tc.want)
		}
	}
}

// TestProxySimPorts: --sim-ports (capture.ports) sets the ports the UDP
// relay sends to, which a refused datagram's log line names (issue 37).
func TestProxySimPorts(t *testing.T) {
	f, err := proxySettings(t, "--sim-ports", "9000-9001,12035").Load("")
	if err != nil {
		t.Fatal(err)
	}
	pc, _, err := cli.ProxyConfig(f, "")
	if err != nil {
		t.Fatal(err)
	}
	for port, want := range map[uint16]bool{9000: true, 9001: true, 12035: true, 9002: false, 13000: false} {
		if got := pc.UDPPorts.Contains(port); got != want {
			t.Errorf("--sim-ports 9000-9001,12035: port %d relayed %v, want %v", port, got, want)
		}
	}
	if !strings.Contains(socks5.UDPPortsHint, "--sim-ports") || !strings.Contains(socks5.UDPPortsHint, "capture.ports") {
		t.Errorf("the relay's refusal names %q, not this flag and key", socks5.UDPPortsHint)
	}
}

package configs

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/proxy"
)

// TestExampleLoads: the shipped configuration loads and holds the defaults.
func TestExampleLoads(t *testing.T) {
	f, err := Load("fairgrid.toml")
	if err != nil {
		t.Fatal(err)
	}
	if f.Control.Controller != throttle.DefaultController || f.Control.Interval.Seconds() != 5 || f.Capture.Interface != "auto" || f.Metrics.Address.String() != "127.0.0.1:9101" {
		t.Errorf("%+v", f)
	}
	if tc := f.Throttle(); tc.Controller != throttle.DefaultController || tc.Segment != f.Control.Segment || tc.Min.BitsPerSecond() != 64000 {
		t.Errorf("throttle config %+v", tc)
	}
}

// TestInvalid: a table of bad files and their exact messages.
func TestInvalid(t *testing.T) {
	for _, tc := range []struct{ name, toml, want string }{
		{"unknown key", "[control]\nspeed = 3\n", "unknown key control.speed"},
		{"unknown table", "[nonsense]\na = 1\n", "unknown key nonsense, nonsense.a"},
		{"syntax", "[control\n", "line 2: expected '.' or ']' to end table name, but got '\\n' instead"},
		{"controller", "[control]\ncontroller = \"cubic\"\n", `control.controller: "cubic": want vtcp, window, tfrc or viewer`},
		{"segment", "[control]\nsegment = \"1460\"\n", `control.segment: "1460": want mean or nominal`},
		{"segment empty", "[control]\nsegment = \"\"\n", `control.segment: "": want mean or nominal`},
		{"integer duration", "[control]\ninterval = 5\n", `line 2: control.interval: "5" is not a duration such as "5s"`},
		{"short interval", "[control]\ninterval = \"10ms\"\n", "control.interval: 10ms outside [100ms, 1h]"},
		{"max below min", "[control]\nmin_bps = 100000\nmax_bps = 50000\n", "control.max_bps: 50000: must lie between min_bps and 1e9"},
		{"ports", "[capture]\nports = [\"13100-9000\"]\n", `capture.ports: "13100-9000": want a port or a range such as 9000-13100`},
		{"sims", "[capture]\nsims = [\"sim.example\"]\n", `capture.sims: "sim.example": want ip:port`},
		{"weights", "[control]\nsplit = \"weights\"\nsplit_weights = [1, 2]\n", "control.split_weights: want 7 weights, none negative, not all zero"},
		{"metrics", "[metrics]\naddress = \"everywhere\"\n", `metrics.address: "everywhere": want ip:port, or empty`},
		{"log level", "[log]\nlevel = \"chatty\"\n", `log.level: "chatty": want debug, info, warn or error`},
		{"regions", "[send]\nregions = \"some\"\n", `send.regions: "some": want all or root`},
		{"split", "[control]\nsplit = \"even\"\n", `line 2: control.split: "even": want demand, viewer or weights`},
		{"log format", "[log]\nformat = \"logfmt\"\n", `line 2: log.format: "logfmt": want text or json`},
		{"sims empty", "[capture]\nsims = [\"\"]\n", `capture.sims: "": want ip:port`},
		{"ports not strings", "[capture]\nports = [9000]\n", `capture.ports: 9000: want a port or a range as a string`},
		{"ports not an array", "[capture]\nports = \"9000\"\n", `capture.ports: 9000: want an array of ports`},
		{"proxy metrics", "[metrics]\nproxy_address = \":http\"\n", `metrics.proxy_address: ":http": want ip:port, or empty`},
		{"two problems", "[control]\nresend_every = 0\nmin_change = 2\n", "control.min_change: 2 outside [0, 1)\ncontrol.resend_every: 0 outside [1, 100]"},
		{"proxy listen", "[proxy]\nlisten = \"127.0.0.1\"\n", `proxy.listen: "127.0.0.1": want host:port, such as 127.0.0.1:1080`},
		{"proxy listen port", "[proxy]\nlisten = \"127.0.0.1:socks\"\n", `proxy.listen: "127.0.0.1:socks": want host:port`},
		{"proxy ports", "[proxy]\nallow_ports = [\"443-80\"]\n", `proxy.allow_ports: "443-80": want a port or a range such as 9000-13100`},
		{"proxy no ports", "[proxy]\nallow_ports = []\n", "proxy.allow_ports: empty: CONNECT would reach nothing"},
		{"proxy associations", "[proxy]\nmax_associations = 0\n", "proxy.max_associations: 0: want at least 1 and at most 100000"},
		{"proxy connects", "[proxy]\nmax_connects = 100001\n", "proxy.max_connects: 100001: want at least 1 and at most 100000"},
		{"proxy username", "[proxy]\nusername = \"" + strings.Repeat("u", 256) + "\"\n", "proxy.username (--user): 256 bytes: at most 255 bytes (RFC 1929)"},
		{"proxy password file alone", "[proxy]\npassword_file = \"/etc/fairgrid/pass\"\n", "proxy.password_file (--password-file) needs proxy.username (--user)"},
		{"proxy password in the file", "[proxy]\npassword = \"secret\"\n", "unknown key proxy.password"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.toml")
			os.WriteFile(path, []byte(tc.toml), 0o644)
			_, err := Load(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestProxyDefaults: the shipped [proxy] table is the SOCKS5 server's own
// defaults, so that the proxy without a file and with the shipped one
// behave alike.
func TestProxyDefaults(t *testing.T) {
	f := Default()
	c := f.ProxyConfig()
	if !slices.Equal(c.AllowPorts, proxy.DefaultAllowPorts) {
		t.Errorf("allow_ports %v, the server's default %v", c.AllowPorts, proxy.DefaultAllowPorts)
	}
	if c.MaxAssociations != proxy.DefaultMaxAssociations || c.MaxConnects != proxy.DefaultMaxConnects {
		t.Errorf("limits %d and %d, the server's defaults %d and %d", c.MaxAssociations, c.MaxConnects,
			proxy.DefaultMaxAssociations, proxy.DefaultMaxConnects)
	}
	if _, err := c.CheckListen(string(f.Proxy.Listen)); err != nil || f.Proxy.Username != "" || f.Proxy.PasswordFile != "" {
		t.Errorf("listen %q without credentials: %v", f.Proxy.Listen, err)
	}
}

// TestSegment: control.segment reaches the loop's configuration, and
// the loop takes it.
func TestSegment(t *testing.T) {
	for _, want := range []throttle.Segment{throttle.SegmentMean, throttle.SegmentNominal} {
		f, err := Parse([]byte("[control]\nsegment = \"" + string(want) + "\"\n"))
		if err != nil {
			t.Fatal(err)
		}
		l, err := throttle.New(f.Throttle(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := l.Config().Segment; got != want {
			t.Errorf("segment = %q: the loop runs with %q", want, got)
		}
	}
}

// TestMinChangeZeroKept: min_change = 0 reaches the loop and the gateway
// as 0 (every change sent), not as the 0.05 an unset value gets.
func TestMinChangeZeroKept(t *testing.T) {
	for _, tc := range []struct {
		toml string
		want float64
	}{{"", 0.05}, {"[control]\nmin_change = 0\n", 0}, {"[control]\nmin_change = 0.2\n", 0.2}} {
		f, err := Parse([]byte(tc.toml + "[gateway]\nroutes = [\"127.0.0.1:9000=127.0.0.1:9001\"]\n"))
		if err != nil {
			t.Fatal(err)
		}
		l, err := throttle.New(f.Throttle(), nil)
		if err != nil {
			t.Fatal(err)
		}
		gw, err := f.GatewayConfig().WithDefaults()
		if err != nil {
			t.Fatal(err)
		}
		if got, gwGot := *l.Config().MinChange, *gw.Control.MinChange; got != tc.want || gwGot != tc.want {
			t.Errorf("%q: the loop's min change %v, the gateway's %v; want %v", tc.toml, got, gwGot, tc.want)
		}
	}
}

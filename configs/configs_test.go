package configs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExampleLoads: the shipped configuration loads and holds the defaults.
func TestExampleLoads(t *testing.T) {
	f, err := Load("fairgrid.toml")
	if err != nil {
		t.Fatal(err)
	}
	if f.Control.Controller != "window" || f.Control.Interval.Seconds() != 5 || f.Capture.Interface != "lo" || f.Metrics.Address != "127.0.0.1:9101" {
		t.Errorf("%+v", f)
	}
	if tc := f.Throttle(); tc.Controller != "window" || tc.Min.BitsPerSecond() != 64000 {
		t.Errorf("throttle config %+v", tc)
	}
}

// TestInvalid: a table of bad files and their exact messages.
func TestInvalid(t *testing.T) {
	for _, tc := range []struct{ name, toml, want string }{
		{"unknown key", "[control]\nspeed = 3\n", "unknown key control.speed"},
		{"unknown table", "[nonsense]\na = 1\n", "unknown key nonsense, nonsense.a"},
		{"syntax", "[control\n", "line 2: expected '.' or ']' to end table name, but got '\\n' instead"},
		{"controller", "[control]\ncontroller = \"cubic\"\n", `control.controller: "cubic": want window, tfrc or viewer`},
		{"integer duration", "[control]\ninterval = 5\n", `line 2: control.interval: "5" is not a duration such as "5s"`},
		{"short interval", "[control]\ninterval = \"10ms\"\n", "control.interval: 10ms outside [100ms, 1h]"},
		{"max below min", "[control]\nmin_bps = 100000\nmax_bps = 50000\n", "control.max_bps: 50000: must lie between min_bps and 1e9"},
		{"ports", "[capture]\nports = [\"13100-9000\"]\n", `capture.ports: "13100-9000": want a port or a range such as 9000-13100`},
		{"sims", "[capture]\nsims = [\"sim.example\"]\n", `capture.sims: "sim.example": want ip:port`},
		{"weights", "[control]\nsplit = \"weights\"\nsplit_weights = [1, 2]\n", "control.split_weights: want 7 weights, none negative, not all zero"},
		{"metrics", "[metrics]\naddress = \"everywhere\"\n", `metrics.address: "everywhere": want ip:port, or empty`},
		{"log level", "[log]\nlevel = \"chatty\"\n", `log.level: "chatty": want debug, info, warn or error`},
		{"regions", "[send]\nregions = \"some\"\n", `send.regions: "some": want all or root`},
		{"two problems", "[control]\nresend_every = 0\nmin_change = 2\n", "control.min_change: 2 outside [0, 1)\ncontrol.resend_every: 0 outside [1, 100]"},
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

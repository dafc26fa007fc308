package gatewaylab

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// TestFlagsConfig: lab gateway's flags refuse what the rig would, naming
// the flag or the setting, before anything runs; the defaults are the
// rig's.
func TestFlagsConfig(t *testing.T) {
	parse := func(args ...string) (Config, error) {
		fs := flag.NewFlagSet("lab gateway", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f := BindFlags(fs)
		if err := fs.Parse(args); err != nil {
			return Config{}, err
		}
		return f.Config()
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown controller", []string{"--controller", "cubic"}, `"cubic"`},
		{"short duration", []string{"--duration", "10ms"}, "duration"},
		{"negative warm-up", []string{"--warmup", "-1s"}, "warm-up"},
		{"bad interval", []string{"--interval", "1ms"}, "interval"},
		{"bad loss", []string{"--loss", "1.5"}, `--loss "1.5": 1.5 is outside 0 to 1`},
		{"unknown arm", []string{"--arms", "gateway,proxy"}, `arm "proxy"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := parse(tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v: %v; want an error with %q", tc.args, err, tc.want)
			}
		})
	}
	cfg, err := parse("--loss", "3%", "--arms", "stock, gateway+sidecar", "--seed", "7")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Link.Loss != 0.03 || cfg.Link.Rate != DefaultLink.Rate || len(cfg.Arms) != 2 || cfg.Arms[1] != Sidecar || cfg.Seed != 7 || cfg.Warmup != DefaultWarmup {
		t.Errorf("config %+v", cfg)
	}
}

package main

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim/region"
)

// TestSimRegionFlags: --buckets, --avatars, --child-regions and
// --position each change the region's configuration, and the defaults
// leave it as it was (lending buckets, the centre of the region).
func TestSimRegionFlags(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		check func(region.Config) bool
	}{
		{nil, func(c region.Config) bool {
			return !c.Scheduler.ChannelBuckets && c.Avatars == region.DefaultAvatars && c.Position == lludp.Vector3{128, 128, 25}
		}},
		{[]string{"--buckets", "opensim"}, func(c region.Config) bool { return c.Scheduler.ChannelBuckets }},
		{[]string{"--buckets", "fair"}, func(c region.Config) bool { return !c.Scheduler.ChannelBuckets }},
		{[]string{"--activity", "avatars", "--avatars", "40"}, func(c region.Config) bool { return c.Avatars == 40 }},
		{[]string{"--child-regions", "2", "--position", "250, 128"}, func(c region.Config) bool { return c.Position == lludp.Vector3{250, 128, 25} }},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cfg, err := parseSimRegionFlags(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(cfg) {
				t.Errorf("config %+v", cfg)
			}
		})
	}
}

// parseSimRegionFlags runs sim's region flags as runSim does.
func parseSimRegionFlags(args []string) (region.Config, error) {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	activity := fs.String("activity", "walking", "")
	avatars := fs.Int("avatars", region.DefaultAvatars, "")
	buckets := fs.String("buckets", "fair", "")
	children := fs.Int("child-regions", 0, "")
	position := fs.String("position", "128,128", "")
	if err := fs.Parse(args); err != nil {
		return region.Config{}, err
	}
	cfg, err := simConfig("127.0.0.1:0", *activity, "", "5.12M", "50M", false)
	if err != nil {
		return cfg, err
	}
	return cfg, simRegionFlags(fs, &cfg, *buckets, *avatars, *children, *position)
}

// TestSimRegionFlagErrors: bad values, and flags that would be ignored,
// are refused with a message naming the flag, exit 2, no panic.
func TestSimRegionFlagErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--buckets", "lending"}, `--buckets "lending": want opensim or fair`},
		{[]string{"--activity", "avatars", "--avatars", "0"}, "--avatars 0: want 1 to 10000"},
		{[]string{"--activity", "avatars", "--avatars", "10001"}, "--avatars 10001: want 1 to 10000"},
		{[]string{"--avatars", "5"}, "--avatars applies only with --activity avatars"},
		{[]string{"--child-regions", "9"}, "--child-regions 9: want 0 to 8"},
		{[]string{"--child-regions", "-1"}, "--child-regions -1: want 0 to 8"},
		{[]string{"--position", "10,10"}, "--position applies only with --child-regions"},
		{[]string{"--child-regions", "1", "--position", "10"}, `--position "10": want X,Y`},
		{[]string{"--child-regions", "1", "--position", "NaN,1"}, `--position "NaN,1": want X,Y`},
		{[]string{"--child-regions", "1", "--position", "300,1"}, `--position "300,1": want X,Y`},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, errOut := runCmd(t, "", append([]string{"sim", "--listen", "127.0.0.1:0", "--duration", "1ms"}, tt.args...)...)
			if code != exitUsage || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut, exitUsage, tt.want)
			}
		})
	}
	code, _, errOut := runCmd(t, "", "sim", "--listen", "127.0.0.1:65534", "--child-regions", "2", "--duration", "1ms")
	if code != exitUsage || !strings.Contains(errOut, "run past 65535") {
		t.Errorf("child regions past the last port: exit %d, stderr %q", code, errOut)
	}
}

// TestSimHelpStatesDemand: --help states every activity's demand, as
// region.Demand reckons it.
func TestSimHelpStatesDemand(t *testing.T) {
	_, help, _ := runCmd(t, "", "sim", "--help")
	for _, line := range strings.Split(region.ActivityHelp(), "\n") {
		if !strings.Contains(help, line) {
			t.Errorf("--help lacks %q", line)
		}
	}
}

// TestSimChildRegionsRun: --child-regions 2 opens the neighbours beside
// the region and exits cleanly.
func TestSimChildRegionsRun(t *testing.T) {
	code, out, errOut := runCmd(t, "", "sim", "--listen", "127.0.0.1:0", "--child-regions", "2", "--buckets", "opensim", "--activity", "terrain", "--duration", "50ms")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "child_regions=2") {
		t.Errorf("the log does not say two child regions opened: %s\n%s", errOut, out)
	}
	if n := strings.Count(out, "child region 127.0.0.1:"); n != 2 {
		t.Errorf("%d child regions summed up, want 2:\n%s", n, out)
	}
}

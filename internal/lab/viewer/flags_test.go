package viewer

import (
	"bytes"
	"context"
	"flag"
	"io"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/ratecalc"
)

// parseFlags binds a viewer's flags and parses args.
func parseFlags(t *testing.T, args ...string) *Flags {
	t.Helper()
	fs := flag.NewFlagSet("viewer", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestConfigs: the flags of a plain run set each viewer's configuration,
// circuit codes counting up.
func TestConfigs(t *testing.T) {
	cfgs, err := parseFlags(t, "--sim", "127.0.0.1:9000", "--clients", "3", "--circuit-code", "10", "--throttle", "2M", "--viewer-rule",
		"--ack-delay", "50ms", "--child-regions", "2", "--socks5", "127.0.0.1:1080", "--socks5-user", "u", "--socks5-pass", "p").Configs()
	if err != nil {
		t.Fatal(err)
	}
	children := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:9001"), netip.MustParseAddrPort("127.0.0.1:9002")}
	for i, c := range cfgs {
		if c.CircuitCode != uint32(10+i) || c.Throttle != ratecalc.RateFromBits(2e6) || !c.FollowViewerRule || c.AckDelay != 50*time.Millisecond ||
			!slices.Equal(c.Children, children) || c.SOCKS5 != "127.0.0.1:1080" || c.SOCKS5Auth == nil || c.SOCKS5Auth.Username != "u" {
			t.Errorf("viewer %d: %+v", i, c)
		}
	}
	if len(cfgs) != 3 {
		t.Errorf("%d viewers, want 3", len(cfgs))
	}
	if cfgs, err := parseFlags(t).Configs(); err != nil || len(cfgs) != 1 || cfgs[0].Children != nil || cfgs[0].SOCKS5Auth != nil {
		t.Errorf("defaults: %+v, %v", cfgs, err)
	}
}

// TestStressPlan: a sweep is a step per count, each its own circuit
// codes, in a world sized for the neighbours asked.
func TestStressPlan(t *testing.T) {
	p, err := parseFlags(t, "--stress", "--sweep", "10, 40", "--neighbours", "8", "--circuit-code", "5", "--duration", "0", "--fleet", "per-viewer").StressPlan()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Steps) != 2 {
		t.Fatalf("%d steps, want 2", len(p.Steps))
	}
	for i, n := range []int{10, 40} {
		s := p.Steps[i]
		world, _ := WorldForNeighbours(n, 8, 32)
		if s.Viewers != n || s.World != world || s.Duration != 10*time.Second || s.Fleet != FleetPerViewer || s.FirstCode != uint32(5+10*i) {
			t.Errorf("step %d: %+v", i, s)
		}
	}
	if p, err := parseFlags(t, "--stress", "--clients", "7").StressPlan(); err != nil || len(p.Steps) != 1 || p.Steps[0].World != DefaultStressWorld || p.Steps[0].Viewers != 7 {
		t.Errorf("one step: %+v, %v", p, err)
	}
}

// TestFlagsRefuse: what a run cannot measure, or would ignore, is refused
// with a message naming the flag.
func TestFlagsRefuse(t *testing.T) {
	for _, tt := range []struct {
		want string
		args []string
	}{
		{"want ip:port", []string{"--stress", "--sim", "nowhere"}},
		{"--sweep", []string{"--stress", "--sweep", "10,x"}},
		{"--neighbours", []string{"--stress", "--neighbours", "-1"}},
		{"--view-distance", []string{"--stress", "--neighbours", "8", "--view-distance", "0"}},
		{"at least 2 viewers", []string{"--stress", "--neighbours", "8", "--clients", "1"}},
		{"larger than", []string{"--stress", "--neighbours", "8", "--clients", "100000", "--view-distance", "1000"}},
		{"--fleet", []string{"--stress", "--fleet", "both"}},
		{"--child-regions does not apply to --stress", []string{"--stress", "--child-regions", "2"}},
		{"--socks5 does not apply to --stress", []string{"--stress", "--socks5", "127.0.0.1:1080"}},
		// Stress flags without --stress are refused, not ignored.
		{"--fleet applies only with --stress", []string{"--fleet", "shared"}},
		{"--sweep applies only with --stress", []string{"--sweep", "10,20"}},
		{"--neighbours applies only with --stress", []string{"--neighbours", "8"}},
		{"--view-distance applies only with --stress", []string{"--view-distance", "16"}},
		{"--sim-metrics applies only with --stress", []string{"--sim-metrics", "http://127.0.0.1:1/metrics"}},
		{`--sim "x": want ip:port`, []string{"--sim", "x"}},
		{"--clients 0: want 1 to 100000", []string{"--clients", "0"}},
		{"--throttle 0: want a positive rate", []string{"--throttle", "0"}},
		{"--child-regions 9: want 0 to 8", []string{"--child-regions", "9"}},
		{"--child-regions -2: want 0 to 8", []string{"--child-regions", "-2"}},
		{"run past 65535", []string{"--sim", "127.0.0.1:65535", "--child-regions", "1"}},
		{"need --socks5", []string{"--socks5-user", "u", "--socks5-pass", "p"}},
		{"go together", []string{"--socks5", "127.0.0.1:1080", "--socks5-user", "u"}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			f := parseFlags(t, tt.args...)
			var err error
			if f.Stress() {
				_, err = f.StressPlan()
			} else {
				_, err = f.Configs()
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v; want %q", err, tt.want)
			}
		})
	}
}

// TestWriteReports: a viewer's lines end with its verdict; its child
// circuits and their total come before it.
func TestWriteReports(t *testing.T) {
	r := Report{Viewer: "v1", LoggedIn: true, RateBPS: 8000, Children: []CircuitReport{{Sim: "127.0.0.1:9001", Complete: true, RateBPS: 800}}, TotalRateBPS: 8800}
	var b bytes.Buffer
	if err := WriteReports(&b, []Report{r}, false, func(r Report) string { return "judged " + r.Viewer }); err != nil {
		t.Fatal(err)
	}
	want := "v1: received 8.0 kbit/s (asked 0.0 kbit/s), 0 lost in 0 loss events, RTT unknown (no ping answered), 0 reliable (0 duplicates)\n" +
		"v1: child circuit to 127.0.0.1:9001 (complete): received 0.8 kbit/s, 0 lost\nv1: all 2 circuits: received 8.8 kbit/s\n" +
		"v1: verdict: judged v1\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	WriteReports(&b, []Report{r, r}, true, nil)
	if n := strings.Count(b.String(), `"viewer":"v1"`); n != 2 {
		t.Errorf("json: %d objects, want 2:\n%s", n, b.String())
	}
}

// TestStressPlanRunInterrupted: a step that an ended context cut short is
// shown, marked and never judged, and the sweep stops there.
func TestStressPlanRunInterrupted(t *testing.T) {
	p, err := parseFlags(t, "--stress", "--sim", "127.0.0.1:9", "--sweep", "2,4").StressPlan()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var b bytes.Buffer
	best, err := p.Run(ctx, &b, false, nil)
	out := b.String()
	if err != nil || best != 0 || strings.Count(out, "(interrupted: not judged)") != 1 || strings.Contains(out, "\n      4 ") ||
		!strings.Contains(out, "largest number of viewers with a mean delay under 100 ms: 0") {
		t.Errorf("best %d, %v:\n%s", best, err, out)
	}
}

package region

import (
	"flag"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/fairgrid/fairgrid/lludp"
)

// parseFlags binds a region's flags, parses args and reads the config.
func parseFlags(args ...string) (Config, int, error) {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return Config{}, 0, err
	}
	return f.Config()
}

// TestFlags: each flag changes the region's configuration, and the
// defaults leave it as it was (lending buckets, the centre of the
// region, the admission defaults).
func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		check func(Config, int) bool
	}{
		{nil, func(c Config, n int) bool {
			return !c.Scheduler.ChannelBuckets && c.Avatars == DefaultAvatars && c.Position == lludp.Vector3{128, 128, 25} && n == 0 &&
				c.Activity == Walking && c.Scheduler.ClientMax == 640_000 && c.Scheduler.SceneMax == 6_250_000 && c.Allowed == nil &&
				c.Admission == AdmissionConfig{MaxPending: DefaultMaxPending, PendingTimeout: DefaultPendingTimeout, CircuitRate: DefaultCircuitRate, CircuitBurst: DefaultCircuitBurst} &&
				!c.Stress.Enabled && c.Stress.ViewDistance == 32
		}},
		{[]string{"--buckets", "opensim"}, func(c Config, _ int) bool { return c.Scheduler.ChannelBuckets }},
		{[]string{"--buckets", "fair"}, func(c Config, _ int) bool { return !c.Scheduler.ChannelBuckets }},
		{[]string{"--activity", "avatars", "--avatars", "40"}, func(c Config, _ int) bool { return c.Avatars == 40 && c.Activity == Avatars }},
		{[]string{"--child-regions", "2", "--position", "250, 128"}, func(c Config, n int) bool { return c.Position == lludp.Vector3{250, 128, 25} && n == 2 }},
		{[]string{"--listen", "127.0.0.1:0", "--activity", "flying", "--allow", "7:11111111-2222-3333-4444-555555555555:66666666-7777-8888-9999-aaaaaaaaaaaa",
			"--client-max", "2M", "--scene-max", "10M", "--avatar-priority"}, func(c Config, _ int) bool {
			return len(c.Allowed) == 1 && c.Allowed[0].Code == 7 && c.Scheduler.ClientMax == 250_000 && c.Scheduler.SceneMax == 1_250_000 &&
				c.Scheduler.AvatarPriority && c.Activity == Flying && c.Listen.Port() == 0
		}},
		{[]string{"--stress", "--view-distance", "64"}, func(c Config, _ int) bool { return c.Stress.Enabled && c.Stress.ViewDistance == 64 }},
		{[]string{"--max-pending", "5", "--pending-timeout", "100ms", "--circuit-rate", "0.5", "--circuit-burst", "3"}, func(c Config, _ int) bool {
			a := c.Admission
			return a.MaxPending == 5 && a.PendingTimeout.Milliseconds() == 100 && a.CircuitRate == 0.5 && a.CircuitBurst == 3
		}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cfg, n, err := parseFlags(tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(cfg, n) {
				t.Errorf("config %+v, %d children", cfg, n)
			}
		})
	}
}

// TestFlagErrors: bad values, values the region would take for its
// default, and flags that would be ignored are refused with a message
// naming the flag.
func TestFlagErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "x"}, `--listen "x": want ip:port`},
		{[]string{"--activity", "running"}, `--activity: unknown activity "running"`},
		{[]string{"--allow", "7:nope:nope"}, `--allow "7:nope:nope"`},
		{[]string{"--allow", "1:2"}, `--allow "1:2": want CODE:AGENT:SESSION`},
		{[]string{"--client-max", "0"}, "--client-max 0: want a positive rate"},
		{[]string{"--client-max", "NaN"}, `--client-max: "NaN" is not a rate`},
		{[]string{"--client-max", "1000"}, "--client-max 1000: 1000 bit/s is below a channel's floor of 4 kbit/s (500 B/s); rates are bits/s: did you mean 1000k?"},
		{[]string{"--scene-max", "-50M"}, "--scene-max: -50M bit/s is negative"},
		{[]string{"--scene-max", "0"}, "--scene-max 0: want a positive rate"},
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
		{[]string{"--listen", "127.0.0.1:65534", "--child-regions", "2"}, "run past 65535"},
		{[]string{"--max-pending", "0"}, "--max-pending 0: want at least 1"},
		{[]string{"--pending-timeout", "0s"}, "--pending-timeout 0s: want more than 0"},
		{[]string{"--circuit-rate", "NaN"}, "--circuit-rate NaN"},
		{[]string{"--circuit-rate", "+Inf"}, "--circuit-rate +Inf"},
		{[]string{"--circuit-rate", "-1"}, "--circuit-rate -1"},
		{[]string{"--circuit-burst", "0"}, "--circuit-burst 0: want at least 1"},
		// 0 was silently the default 32 m; a negative one a grid of
		// negative cells.
		{[]string{"--stress", "--view-distance", "0"}, "--view-distance 0: want a finite view above 0 metres"},
		{[]string{"--stress", "--view-distance", "-5"}, "--view-distance -5: want a finite view above 0 metres"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			if _, _, err := parseFlags(tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v; want %q", err, tt.want)
			}
		})
	}
}

// openFlagged opens the region args describe and its neighbours, closed
// when the test ends.
func openFlagged(t *testing.T, args ...string) (Config, *Server, []*Server) {
	t.Helper()
	cfg, n, err := parseFlags(args...)
	if err != nil {
		t.Fatal(err)
	}
	root, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	children, err := OpenNeighbours(root, cfg, n, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range children {
		t.Cleanup(func() { c.Close() })
	}
	return cfg, root, children
}

// TestOpenNeighbours: the neighbours open on the ports after the root's,
// as children of it, and an error closes those already opened.
func TestOpenNeighbours(t *testing.T) {
	cfg, root, children := openFlagged(t, "--listen", "127.0.0.1:0", "--child-regions", "3")
	if len(children) != 3 {
		t.Fatalf("%d neighbours, want 3", len(children))
	}
	for i, c := range children {
		if c.cfg.Child == nil || c.cfg.Child.OffsetX != NeighbourOffsets[i][0] || c.cfg.Child.OffsetY != NeighbourOffsets[i][1] {
			t.Errorf("neighbour %d: child config %+v, want offset %v", i, c.cfg.Child, NeighbourOffsets[i])
		}
	}
	// A port in use: the neighbour cannot open it, and says which it is.
	busy, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	fixed := cfg
	fixed.Listen = netip.AddrPortFrom(fixed.Listen.Addr(), busy.LocalAddr().(*net.UDPAddr).AddrPort().Port()-1)
	if _, err := OpenNeighbours(root, fixed, 1, nil); err == nil || !strings.Contains(err.Error(), "child region 1") {
		t.Errorf("a neighbour on a port in use: %v; want an error naming child region 1", err)
	}
}

// TestCountersString: the counters in words name only what happened.
func TestCountersString(t *testing.T) {
	for _, tc := range []struct {
		k    Counters
		want string
	}{
		{Counters{}, "nothing refused or dropped; circuits ended: 0 logged out, 0 timed out"},
		{Counters{Malformed: 3, RateLimited: 2, LoggedOut: 1}, "refused or dropped: 3 not LLUDP, 2 logins refused (source over its rate); circuits ended: 1 logged out, 0 timed out"},
	} {
		if got := tc.k.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.k, got, tc.want)
		}
	}
}

// TestWriteSummary: the root's counters, then each neighbour's named by
// its address; no clients, no client lines.
func TestWriteSummary(t *testing.T) {
	_, root, children := openFlagged(t, "--listen", "127.0.0.1:0", "--child-regions", "1")
	var b strings.Builder
	if err := WriteSummary(&b, root, children...); err != nil {
		t.Fatal(err)
	}
	none := "nothing refused or dropped; circuits ended: 0 logged out, 0 timed out"
	if want := none + "\nchild region " + children[0].Addr().String() + ": " + none + "\n"; b.String() != want {
		t.Errorf("%q, want %q", b.String(), want)
	}
}

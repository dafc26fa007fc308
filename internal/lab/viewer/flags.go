package viewer

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle/proxy/socks5"
)

// Flags are fairgrid viewer's flags, bound to a flag set by BindFlags:
// Configs reads those of a plain run, StressPlan those of a stress run
// (Stress says which). Every value is checked there, and its error names
// its flag.
type Flags struct {
	fs                                                      *flag.FlagSet
	sim, throttle, sweep, metrics, fleet, proxy, user, pass *string
	clients, children                                       *int
	code                                                    *uint
	rule, stress                                            *bool
	ackDelay                                                *time.Duration
	// Duration is --duration: how long a plain run lasts, and each
	// stress step.
	Duration         *time.Duration
	neighbours, view *float64
}

// BindFlags declares a viewer's flags on fs.
func BindFlags(fs *flag.FlagSet) *Flags {
	return &Flags{
		fs:         fs,
		sim:        fs.String("sim", "127.0.0.1:9000", "the simulator's address"),
		clients:    fs.Int("clients", 1, "number of viewers"),
		Duration:   fs.Duration("duration", 30*time.Second, "how long to run (0: until interrupted)"),
		throttle:   fs.String("throttle", "1536k", "requested total, bits/s (the classic 1,500 kbps is 1536k)"),
		rule:       fs.Bool("viewer-rule", false, "follow the stock viewer's ±10 % rule every 5 s"),
		ackDelay:   fs.Duration("ack-delay", 100*time.Millisecond, "how long acks wait to be batched"),
		children:   fs.Int("child-regions", 0, "also open child circuits to this many neighbour regions (0 to 8), at --sim's port + 1 ... + K"),
		code:       fs.Uint("circuit-code", 1, "circuit code of the first viewer; the others count up"),
		stress:     fs.Bool("stress", false, "stress mode: move once a second and time the region's echoes (run fairgrid sim --stress)"),
		sweep:      fs.String("sweep", "", "with --stress: viewer counts to try in turn, comma-separated (for example 250,500,1000)"),
		neighbours: fs.Float64("neighbours", 0, "with --stress: size the world for this many neighbours per move on average (0: one 256 m region)"),
		view:       fs.Float64("view-distance", 32, "with --neighbours: the sim's view distance in metres"),
		metrics:    fs.String("sim-metrics", "", "with --stress: URL of the sim's metrics, for its datagram rates and CPU per step"),
		fleet:      fs.String("fleet", string(FleetAuto), "with --stress: `auto`, shared (one socket per event loop, a 127.x.y.z address per viewer) or per-viewer (a socket each)"),
		proxy:      fs.String("socks5", "", "send and receive through this SOCKS 5 proxy (host:port)"),
		user:       fs.String("socks5-user", "", "the proxy's username (RFC 1929), with --socks5-pass"),
		pass:       fs.String("socks5-pass", "", "the proxy's password"),
	}
}

// stressOnly are the flags a run without --stress refuses: it would
// ignore them, and a user who forgot --stress would get a plain run and
// think it measured.
var stressOnly = map[string]bool{"sweep": true, "neighbours": true, "view-distance": true, "sim-metrics": true, "fleet": true}

// Stress says whether the flags ask for a stress run.
func (f *Flags) Stress() bool { return *f.stress }

// Configs are the viewers of a plain run, one per --clients.
func (f *Flags) Configs() ([]Config, error) {
	var err error
	f.fs.Visit(func(fl *flag.Flag) {
		if err == nil && stressOnly[fl.Name] {
			err = fmt.Errorf("--%s applies only with --stress", fl.Name)
		}
	})
	if err != nil {
		return nil, err
	}
	auth, err := socksAuth(*f.proxy, *f.user, *f.pass)
	if err != nil {
		return nil, err
	}
	sim, err := netip.ParseAddrPort(*f.sim)
	if err != nil {
		return nil, fmt.Errorf("--sim %q: want ip:port", *f.sim)
	}
	asked, err := ratecalc.ParseBitRate(*f.throttle)
	if err != nil {
		return nil, fmt.Errorf("--throttle: %w", err)
	}
	if asked == 0 {
		return nil, fmt.Errorf("--throttle %s: want a positive rate such as 1536k", *f.throttle)
	}
	if *f.clients < 1 || *f.clients > 100_000 {
		return nil, fmt.Errorf("--clients %d: want 1 to 100000", *f.clients)
	}
	children, err := ChildRegionAddrs(sim, *f.children)
	if err != nil {
		return nil, err
	}
	cfgs := make([]Config, *f.clients)
	for i := range cfgs {
		cfgs[i] = Config{Sim: sim, CircuitCode: uint32(*f.code) + uint32(i), Throttle: asked,
			FollowViewerRule: *f.rule, AckDelay: *f.ackDelay, SOCKS5: *f.proxy, SOCKS5Auth: auth, Children: children}
	}
	return cfgs, nil
}

// ChildRegionAddrs are the k neighbour regions of sim: the ports after
// its own, as fairgrid sim --child-regions opens them.
func ChildRegionAddrs(sim netip.AddrPort, k int) ([]netip.AddrPort, error) {
	if k < 0 || k > 8 {
		return nil, fmt.Errorf("--child-regions %d: want 0 to 8 (the neighbours of a region)", k)
	}
	if int(sim.Port())+k > 65535 {
		return nil, fmt.Errorf("--child-regions %d: ports after %d run past 65535", k, sim.Port())
	}
	var out []netip.AddrPort
	for i := range k {
		out = append(out, netip.AddrPortFrom(sim.Addr(), sim.Port()+uint16(i+1)))
	}
	return out, nil
}

// socksAuth checks the proxy flags: a username and a password go
// together, and both need a proxy.
func socksAuth(proxy, user, pass string) (*socks5.Auth, error) {
	switch {
	case user == "" && pass == "":
		return nil, nil
	case proxy == "":
		return nil, errors.New("--socks5-user and --socks5-pass need --socks5")
	case user == "" || pass == "":
		return nil, errors.New("--socks5-user and --socks5-pass go together")
	}
	return &socks5.Auth{Username: user, Password: pass}, nil
}

// StressPlan is a stress run: a step for each viewer count, one after
// the other.
type StressPlan struct {
	Steps []StressOptions
}

// StressPlan reads the flags of a stress run.
func (f *Flags) StressPlan() (StressPlan, error) {
	var p StressPlan
	if _, err := socksAuth(*f.proxy, *f.user, *f.pass); err != nil {
		return p, err
	}
	if *f.proxy != "" {
		return p, errors.New("--socks5 does not apply to --stress")
	}
	if *f.children != 0 {
		return p, errors.New("--child-regions does not apply to --stress")
	}
	sim, err := netip.ParseAddrPort(*f.sim)
	if err != nil {
		return p, fmt.Errorf("--sim %q: want ip:port", *f.sim)
	}
	counts := []int{*f.clients}
	if *f.sweep != "" {
		counts = nil
		for _, part := range strings.Split(*f.sweep, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(part))
			if err != nil || n < 1 {
				return p, fmt.Errorf("--sweep %q: want counts such as 250,500,1000", *f.sweep)
			}
			counts = append(counts, n)
		}
	}
	k, view := *f.neighbours, *f.view
	if k < 0 || math.IsNaN(k) || math.IsInf(k, 0) || !(view > 0) || math.IsInf(view, 0) {
		return p, fmt.Errorf("--neighbours %v, --view-distance %v: want a finite neighbours of 0 or more and a view above 0", k, view)
	}
	fleet, err := ParseFleet(*f.fleet)
	if err != nil {
		return p, fmt.Errorf("--fleet: %w", err)
	}
	d := *f.Duration
	if d <= 0 {
		d = 10 * time.Second
	}
	code := uint32(*f.code)
	for _, n := range counts {
		world := float64(DefaultStressWorld)
		if k > 0 {
			if n < 2 {
				return p, fmt.Errorf("--neighbours needs at least 2 viewers a step, not %d", n)
			}
			if world, err = WorldForNeighbours(n, k, view); err != nil {
				return p, err
			}
		}
		p.Steps = append(p.Steps, StressOptions{Sim: sim, Viewers: n, Duration: d, FirstCode: code,
			World: world, RegionMetrics: *f.metrics, Fleet: fleet})
		code += uint32(n)
	}
	return p, nil
}

// Run runs the steps in turn and writes a row for each (a table, or with
// asJSON an object a line), then the largest number of viewers whose
// mean echo delay stayed under 100 ms, which it returns. note, if not
// nil, hears what a person watching wants to know (the step begun, a
// fleet that fell back). A step that ctx cut short is shown, marked,
// and never the answer; a step that measured nothing is an error.
func (p StressPlan) Run(ctx context.Context, w io.Writer, asJSON bool, note func(string)) (best int, err error) {
	if note == nil {
		note = func(string) {}
	}
	ew := &errWriter{w: w}
	enc := json.NewEncoder(ew)
	if !asJSON {
		fmt.Fprintf(ew, "%7s %6s %7s %6s %9s %9s %8s %8s %8s %8s %8s %s\n", "viewers", "logged", "world m", "neigh", "in/s", "out/s",
			"mean ms", "p99 ms", "sim cpu", "view cpu", "window", "fleet")
	}
	fellBack := false
	for i, o := range p.Steps {
		n := o.Viewers
		if len(p.Steps) > 1 {
			note(fmt.Sprintf("%d viewers, step %d of %d (%v)", n, i+1, len(p.Steps), o.Duration))
		}
		res, err := RunStress(ctx, o)
		interrupted := ctx.Err() != nil
		if interrupted && res.Viewers == 0 {
			if !asJSON {
				fmt.Fprintf(ew, "interrupted before the %d-viewer step measured anything\n", n)
			}
			break
		}
		if err != nil && res.Viewers == 0 {
			return best, fmt.Errorf("%d viewers: %w", n, err)
		}
		if err != nil {
			note(fmt.Sprintf("%d viewers: %v", n, err))
		}
		if res.FleetFallback != "" && !fellBack {
			note("a socket per viewer: " + res.FleetFallback)
			fellBack = true
		}
		switch {
		case asJSON && interrupted:
			enc.Encode(struct {
				StressResult
				Interrupted bool `json:"interrupted"`
			}{res, true})
		case asJSON:
			enc.Encode(res)
		default:
			writeStressRow(ew, res, interrupted)
		}
		if !interrupted && res.LoggedIn == n && res.Echoes > 0 && res.MeanMs < 100 {
			best = max(best, n)
		}
		if interrupted || ew.err != nil {
			break
		}
	}
	if asJSON {
		enc.Encode(map[string]int{"largest_n_under_100ms": best})
	} else {
		at := "region"
		if len(p.Steps) > 0 && p.Steps[0].RegionMetrics == "" {
			at = "viewers, so losses are missed; --sim-metrics counts them at the region"
		}
		fmt.Fprintf(ew, "largest number of viewers with a mean delay under 100 ms: %d\n", best)
		fmt.Fprintf(ew, "neigh: other avatars each movement went to (counted at the %s); in/s, out/s: datagrams at the region; cpu: seconds (user+system) over the window, sim and viewers each their own process; fleet: shared sockets or one per viewer\n", at)
	}
	return best, ew.err
}

// writeStressRow is a step's row of the table.
func writeStressRow(w io.Writer, res StressResult, interrupted bool) {
	in, out, simCPU := "-", "-", "-"
	if res.Region != nil {
		in, out = fmt.Sprintf("%.0f", res.Region.InPerSecond), fmt.Sprintf("%.0f", res.Region.OutPerSecond)
		simCPU = fmt.Sprintf("%.2f s", res.Region.CPUSeconds)
	}
	viewCPU := "-"
	if res.ViewerCPUSeconds >= 0 {
		viewCPU = fmt.Sprintf("%.2f s", res.ViewerCPUSeconds)
	}
	fleet := string(res.Fleet)
	if interrupted {
		fleet += " (interrupted: not judged)"
	}
	fmt.Fprintf(w, "%7d %6d %7.0f %6.1f %9s %9s %8.2f %8.2f %8s %8s %6.1f s %s\n", res.Viewers, res.LoggedIn, res.World,
		res.Neighbours, in, out, res.MeanMs, res.P99Ms, simCPU, viewCPU, res.WindowSeconds, fleet)
}

// errWriter keeps the first write error and writes nothing after it, so
// that a run stops once its output is gone.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (n int, err error) {
	if e.err == nil {
		n, e.err = e.w.Write(p)
	}
	return n, e.err
}

// WriteReports writes what each viewer measured: with asJSON one object
// a line, else a few lines each ending with its verdict, which verdict
// gives (the audit's judgement, which this package cannot import).
func WriteReports(w io.Writer, rs []Report, asJSON bool, verdict func(Report) string) error {
	ew := &errWriter{w: w}
	enc := json.NewEncoder(ew)
	for _, r := range rs {
		if asJSON {
			enc.Encode(r)
			continue
		}
		rtt := "unknown (no ping answered)"
		if r.RTTms != nil {
			rtt = fmt.Sprintf("%.2f ms", *r.RTTms)
		}
		fmt.Fprintf(ew, "%s: received %s (asked %s), %d lost in %d loss events, RTT %s, %d reliable (%d duplicates)\n",
			r.Viewer, ratecalc.Rate(r.RateBPS/8), ratecalc.Rate(r.ThrottleBPS/8), r.Lost, r.LossEvents, rtt, r.ReliableReceived, r.ReliableDuplicates)
		for _, c := range r.Children {
			state := "complete"
			if !c.Complete {
				state = "not complete"
			}
			fmt.Fprintf(ew, "%s: child circuit to %s (%s): received %s, %d lost\n", r.Viewer, c.Sim, state, ratecalc.Rate(c.RateBPS/8), c.Lost)
		}
		if len(r.Children) > 0 {
			fmt.Fprintf(ew, "%s: all %d circuits: received %s\n", r.Viewer, len(r.Children)+1, ratecalc.Rate(r.TotalRateBPS/8))
		}
		fmt.Fprintf(ew, "%s: verdict: %s\n", r.Viewer, verdict(r))
	}
	return ew.err
}

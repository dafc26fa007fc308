package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/fairgrid/fairgrid/configs"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim"
	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/fairgrid/fairgrid/throttle/group"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const simSynopsis = `[--listen ADDR] [--activity A [--avatars N]] [--buckets opensim|fair] [--child-regions K [--position X,Y]] [--allow CODE:AGENT:SESSION,...] [--client-max BPS] [--scene-max BPS] [--avatar-priority] [--stress] [--metrics ADDR] [--log-format F] [--duration D] [--max-pending N] [--pending-timeout D] [--circuit-rate R] [--circuit-burst N] [--cpuprofile F] [--blockprofile F] [--mutexprofile F] [--trace F]

A test region simulator speaking LLUDP: viewers log in with UseCircuitCode
(any circuit code unless --allow restricts them), and it sends them the
traffic of an activity (standing, walking, flying, login, idle, terrain, objects, avatars, textures), scheduled
by package opensim at each client's AgentThrottle. It runs until
interrupted or for --duration, then prints its clients.

The first five activities fill a client's queues up to their load
whenever they run short, so the throttle sets the pace; terrain,
objects, avatars and textures are application-limited: each offers a
fixed mean, below, whatever the throttle (docs/opensim.md gives their
sources in OpenSim 0.9.2.2). Demand per client, bytes/s on the wire:

%s

--buckets opensim gives each client OpenSim's per-category token
buckets, which do not lend an idle category's rate to the busy ones, as
OpenSim 0.9.2.2 does; the default, fair, lets the busy categories share
it (package opensim's own scheduler). The default stays fair so that
existing set-ups keep their rates; runs that stand in for OpenSim should
say --buckets opensim.

--child-regions K (1 to 8) also opens K neighbour regions on the next K
ports (--listen's port + 1 ... + K: east, north, west, south, then the
corners), as fairgrid viewer --child-regions K expects. A viewer's
circuit to a neighbour is a child agent: it completes with
RegionHandshakeReply, and the neighbour applies the root's AgentThrottle
times OpenSim's factor max(0.2, 1 - 0.3 d^2/256^2) for the agent at
--position (default 128,128: 0.85 in every neighbour).

Against floods of UseCircuitCode from spoofed addresses, circuits that have
not completed the handshake are capped (--max-pending, --pending-timeout)
and each source /24 or /64 may open --circuit-burst circuits at once and
--circuit-rate a second; connected viewers are never refused.

With --stress each movement a viewer sends (fairgrid viewer --stress) is
echoed to the avatars within --view-distance; the world is not bounded to
one region, so the viewers' density sweep can spread them wider. Its
--metrics include the process's CPU time and the datagrams in and out,
which fairgrid viewer --sim-metrics reads for each sweep step.`

func runSim(args []string, s stdio) int {
	synopsis := fmt.Sprintf(simSynopsis, region.ActivityHelp())
	fs := newFlagSet("sim", synopsis, s)
	listen := fs.String("listen", "127.0.0.1:9000", "UDP address of the region")
	activity := fs.String("activity", "walking", "what the avatar is doing: "+region.ActivityNames())
	avatars := fs.Int("avatars", region.DefaultAvatars, "with --activity avatars: how many avatars move (1 to 10000)")
	buckets := fs.String("buckets", "fair", "token buckets per client: `opensim` (one per category, no lending, as OpenSim 0.9.2.2) or fair (idle categories lend)")
	childRegions := fs.Int("child-regions", 0, "also open this many neighbour regions (0 to 8) on the ports after --listen's")
	position := fs.String("position", "128,128", "with --child-regions: where the agent stands in the region, X,Y in metres")
	allow := fs.String("allow", "", "accept only these circuits: CODE:AGENT-UUID:SESSION-UUID, comma-separated")
	clientMax := fs.String("client-max", "5.12M", "largest total per client, bits/s")
	sceneMax := fs.String("scene-max", "50M", "cap over all clients, bits/s")
	priority := fs.Bool("avatar-priority", false, "give avatar updates strict priority up to their rate")
	metrics := fs.String("metrics", "", "serve Prometheus metrics on this address (for example 127.0.0.1:9104; run, proxy and gateway take 9101-9103)")
	duration := fs.Duration("duration", 0, "stop after this long (0: until interrupted)")
	stress := fs.Bool("stress", false, "stress mode: echo each movement to the avatars within view distance")
	view := fs.Float64("view-distance", 32, "with --stress: view distance in metres")
	maxPending := fs.Int("max-pending", region.DefaultMaxPending, "most circuits that have not completed the handshake; beyond it new ones are refused")
	pendingTimeout := fs.Duration("pending-timeout", region.DefaultPendingTimeout, "close a circuit that has not completed the handshake in this long")
	circuitRate := fs.Float64("circuit-rate", region.DefaultCircuitRate, "new circuits a second per source /24 (IPv4) or /64 (IPv6)")
	circuitBurst := fs.Int("circuit-burst", region.DefaultCircuitBurst, "new circuits at once per source /24 or /64")
	logFormat := configs.Default().Log.Format
	fs.TextVar(&logFormat, "log-format", logFormat, logFormatUsage)
	profiles := addProfileFlags(fs)
	if code, ok := parseFlags(fs, synopsis, args, s); !ok {
		return code
	}
	cfg, err := simConfig(*listen, *activity, *allow, *clientMax, *sceneMax, *priority)
	if err == nil {
		err = simRegionFlags(fs, &cfg, *buckets, *avatars, *childRegions, *position)
	}
	cfg.Stress = region.StressConfig{Enabled: *stress, ViewDistance: float32(*view)}
	if err == nil && (!(*view > 0) || math.IsInf(*view, 0)) {
		// The region takes 0 for its default: refused here, not swapped.
		err = fmt.Errorf("--view-distance %v: want a finite view above 0 metres", *view)
	}
	if err == nil {
		cfg.Admission, err = admissionConfig(*maxPending, *pendingTimeout, *circuitRate, *circuitBurst)
	}
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid sim: %v\n", err)
		return exitUsage
	}
	log := newLogger(s.err, logFormat, nil)
	srv, err := region.New(cfg, log)
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid sim: %v\n", err)
		return exitFail
	}
	children, err := openChildRegions(srv, cfg, *childRegions, log)
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid sim: %v\n", err)
		return exitFail
	}
	ctx, stop := runContext(*duration, logNotice(log))
	defer stop()
	var metricsLn net.Listener
	if *metrics != "" {
		if metricsLn, err = metricsListener(*metrics, "sim --metrics"); err != nil {
			fmt.Fprintf(s.err, "fairgrid sim: %v\n", err)
			return exitFail
		}
	}
	g := simGroup(srv, metricsLn)
	for _, c := range children {
		g.Add(c.Run, nil)
	}
	stopProfiles, err := profiles.start()
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid sim: %v\n", err)
		return exitFail
	}
	log.Info("region listening", "addr", srv.Addr(), "activity", cfg.Activity.String(), "buckets", *buckets, "child_regions", len(children))
	runErr := g.Run(ctx)
	if err := stopProfiles(); err != nil {
		fmt.Fprintf(s.err, "fairgrid sim: %v\n", err)
	}
	if runErr != nil {
		fmt.Fprintf(s.err, "fairgrid sim: %v\n", runErr)
		return exitFail
	}
	for i, r := range append([]*region.Server{srv}, children...) {
		where := ""
		if i > 0 {
			where = fmt.Sprintf("child region %v: ", r.Addr())
		}
		for _, c := range r.Clients() {
			var sent uint64
			for _, b := range c.SentBytes {
				sent += b
			}
			fmt.Fprintf(s.out, "%s%v agent %v: throttle %.0f kbit/s, sent %d bytes, %d resends\n", where, c.Addr, c.AgentID, float64(c.Total)*8/1000, sent, c.Resends)
		}
	}
	fmt.Fprintln(s.out, describeRefusals(srv.Counters()))
	for _, c := range children {
		fmt.Fprintf(s.out, "child region %v: %s\n", c.Addr(), describeRefusals(c.Counters()))
	}
	return exitOK
}

// simGroup is sim's group: the region, and its metrics' server on
// metrics unless that is nil.
func simGroup(srv *region.Server, metrics net.Listener) *group.Group {
	var g group.Group
	g.Add(srv.Run, nil)
	if metrics != nil {
		reg := prometheus.NewRegistry()
		reg.MustRegister(region.NewCollector(srv), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		g.AddHTTP("metrics", metrics, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	}
	return &g
}

func simConfig(listen, activity, allow, clientMax, sceneMax string, priority bool) (region.Config, error) {
	var cfg region.Config
	var err error
	if cfg.Listen, err = netip.ParseAddrPort(listen); err != nil {
		return cfg, fmt.Errorf("--listen %q: want ip:port", listen)
	}
	if cfg.Activity, err = region.ParseActivity(activity); err != nil {
		return cfg, fmt.Errorf("--activity: %v", err)
	}
	for _, part := range strings.Split(allow, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		f := strings.Split(strings.TrimSpace(part), ":")
		if len(f) != 3 {
			return cfg, fmt.Errorf("--allow %q: want CODE:AGENT:SESSION", part)
		}
		code, err1 := strconv.ParseUint(f[0], 10, 32)
		agent, err2 := lludp.ParseUUID(f[1])
		session, err3 := lludp.ParseUUID(f[2])
		if err := errors.Join(err1, err2, err3); err != nil {
			return cfg, fmt.Errorf("--allow %q: %v", part, err)
		}
		cfg.Allowed = append(cfg.Allowed, region.Login{Code: uint32(code), AgentID: agent, SessionID: session})
	}
	cm, err := parsePositiveRate("--client-max", clientMax)
	if err != nil {
		return cfg, err
	}
	// Each of the scheduler's five channels has a floor of 500 B/s
	// (opensim.Config.ChannelMin), which a client's total must reach.
	if bps := cm.BitsPerSecond(); bps < 4000 {
		return cfg, fmt.Errorf("--client-max %s: %w", clientMax, tooSlow(clientMax, bps, "a channel's floor of 4 kbit/s (500 B/s)"))
	}
	sm, err := parsePositiveRate("--scene-max", sceneMax)
	if err != nil {
		return cfg, err
	}
	cfg.Scheduler = opensim.Config{ClientMax: int64(cm), SceneMax: int64(sm), AvatarPriority: priority}
	return cfg, nil
}

// simRegionFlags applies --buckets, --avatars, --child-regions and
// --position to cfg, refusing what would be ignored or out of range.
func simRegionFlags(fs *flag.FlagSet, cfg *region.Config, buckets string, avatars, childRegions int, position string) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch buckets {
	case "opensim":
		cfg.Scheduler.ChannelBuckets = true
	case "fair":
	default:
		return fmt.Errorf("--buckets %q: want opensim or fair", buckets)
	}
	if set["avatars"] && cfg.Activity != region.Avatars {
		return errors.New("--avatars applies only with --activity avatars")
	}
	if avatars < 1 || avatars > 10_000 {
		return fmt.Errorf("--avatars %d: want 1 to 10000", avatars)
	}
	cfg.Avatars = avatars
	if childRegions < 0 || childRegions > len(region.NeighbourOffsets) {
		return fmt.Errorf("--child-regions %d: want 0 to %d (the neighbours of a region)", childRegions, len(region.NeighbourOffsets))
	}
	if set["position"] && childRegions == 0 {
		return errors.New("--position applies only with --child-regions")
	}
	xs, ys, ok := strings.Cut(position, ",")
	x, err1 := strconv.ParseFloat(strings.TrimSpace(xs), 32)
	y, err2 := strconv.ParseFloat(strings.TrimSpace(ys), 32)
	if !ok || err1 != nil || err2 != nil || !(x >= 0 && x <= 256) || !(y >= 0 && y <= 256) {
		return fmt.Errorf("--position %q: want X,Y in metres, each from 0 to 256", position)
	}
	cfg.Position = lludp.Vector3{float32(x), float32(y), 25}
	if childRegions > 0 && cfg.Listen.Port() != 0 && int(cfg.Listen.Port())+childRegions > 65535 {
		return fmt.Errorf("--child-regions %d: ports after %d run past 65535", childRegions, cfg.Listen.Port())
	}
	return nil
}

// openChildRegions opens n neighbour regions of root on the ports after
// its own (any free port if root's was 0), each a child of root.
func openChildRegions(root *region.Server, cfg region.Config, n int, log *slog.Logger) ([]*region.Server, error) {
	var children []*region.Server
	for i := range n {
		c := cfg
		off := region.NeighbourOffsets[i]
		c.Child = &region.ChildConfig{OffsetX: off[0], OffsetY: off[1]}
		if cfg.Listen.Port() != 0 {
			c.Listen = netip.AddrPortFrom(cfg.Listen.Addr(), cfg.Listen.Port()+uint16(i+1))
		}
		child, err := region.New(c, log.With("region", fmt.Sprintf("child %d", i+1)))
		if err == nil {
			err = root.AddChild(child)
		}
		if err != nil {
			for _, o := range children {
				o.Close()
			}
			return nil, fmt.Errorf("child region %d: %w", i+1, err)
		}
		children = append(children, child)
	}
	return children, nil
}

// admissionConfig checks the admission flags: each must be positive, as a
// zero would silently mean the default.
func admissionConfig(maxPending int, pendingTimeout time.Duration, circuitRate float64, circuitBurst int) (region.AdmissionConfig, error) {
	var errs []error
	if maxPending < 1 {
		errs = append(errs, fmt.Errorf("--max-pending %d: want at least 1", maxPending))
	}
	if pendingTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--pending-timeout %v: want more than 0", pendingTimeout))
	}
	if !(circuitRate > 0) || math.IsInf(circuitRate, 0) {
		errs = append(errs, fmt.Errorf("--circuit-rate %v: want a finite number of circuits a second above 0", circuitRate))
	}
	if circuitBurst < 1 {
		errs = append(errs, fmt.Errorf("--circuit-burst %d: want at least 1", circuitBurst))
	}
	return region.AdmissionConfig{MaxPending: maxPending, PendingTimeout: pendingTimeout,
		CircuitRate: circuitRate, CircuitBurst: circuitBurst}, errors.Join(errs...)
}

// refusals names, in words, each counter of what the region refused or
// dropped; the field name is for tests that read the words back.
var refusals = []struct {
	field, what string
	count       func(region.Counters) uint64
}{
	{"Malformed", "not LLUDP", func(k region.Counters) uint64 { return k.Malformed }},
	{"Orphans", "from endpoints with no circuit", func(k region.Counters) uint64 { return k.Orphans }},
	{"BadCircuitCodes", "logins with a circuit code not accepted", func(k region.Counters) uint64 { return k.BadCircuitCodes }},
	{"BadIDs", "with the wrong AgentID or SessionID", func(k region.Counters) uint64 { return k.BadIDs }},
	{"Duplicates", "reliable duplicates", func(k region.Counters) uint64 { return k.Duplicates }},
	{"PendingFull", "logins refused (too many pending)", func(k region.Counters) uint64 { return k.PendingFull }},
	{"RateLimited", "logins refused (source over its rate)", func(k region.Counters) uint64 { return k.RateLimited }},
	{"HandshakeTimeouts", "handshakes timed out", func(k region.Counters) uint64 { return k.HandshakeTimeouts }},
	{"LimiterEvictions", "source prefixes evicted from the rate limiter", func(k region.Counters) uint64 { return k.LimiterEvictions }},
	{"Overflow", "dropped on arrival (inbound queue full)", func(k region.Counters) uint64 { return k.Overflow }},
}

// describeRefusals says in words what the region refused or dropped,
// naming only what happened, and how its circuits ended.
func describeRefusals(k region.Counters) string {
	var parts []string
	for _, r := range refusals {
		if n := r.count(k); n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, r.what))
		}
	}
	refused := "nothing refused or dropped"
	if len(parts) > 0 {
		refused = "refused or dropped: " + strings.Join(parts, ", ")
	}
	return fmt.Sprintf("%s; circuits ended: %d logged out, %d timed out", refused, k.LoggedOut, k.TimedOut)
}

package main

import (
	"errors"
	"fmt"
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
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const simSynopsis = `[--listen ADDR] [--activity A] [--allow CODE:AGENT:SESSION,...] [--client-max BPS] [--scene-max BPS] [--avatar-priority] [--stress] [--metrics ADDR] [--log-format F] [--duration D] [--max-pending N] [--pending-timeout D] [--circuit-rate R] [--circuit-burst N] [--cpuprofile F] [--blockprofile F] [--mutexprofile F] [--trace F]

A test region simulator speaking LLUDP: viewers log in with UseCircuitCode
(any circuit code unless --allow restricts them), and it sends them the
traffic of an activity (standing, walking, flying, login, idle), scheduled
by package opensim at each client's AgentThrottle. It runs until
interrupted or for --duration, then prints its clients.

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
	fs := newFlagSet("sim", simSynopsis, s)
	listen := fs.String("listen", "127.0.0.1:9000", "UDP address of the region")
	activity := fs.String("activity", "walking", "what the avatar is doing: "+region.ActivityNames())
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
	if code, ok := parseFlags(fs, simSynopsis, args, s); !ok {
		return code
	}
	cfg, err := simConfig(*listen, *activity, *allow, *clientMax, *sceneMax, *priority)
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
	stopProfiles, err := profiles.start()
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid sim: %v\n", err)
		return exitFail
	}
	log.Info("region listening", "addr", srv.Addr(), "activity", cfg.Activity.String())
	runErr := g.Run(ctx)
	if err := stopProfiles(); err != nil {
		fmt.Fprintf(s.err, "fairgrid sim: %v\n", err)
	}
	if runErr != nil {
		fmt.Fprintf(s.err, "fairgrid sim: %v\n", runErr)
		return exitFail
	}
	for _, c := range srv.Clients() {
		var sent uint64
		for _, b := range c.SentBytes {
			sent += b
		}
		fmt.Fprintf(s.out, "%v agent %v: throttle %.0f kbit/s, sent %d bytes, %d resends\n", c.Addr, c.AgentID, float64(c.Total)*8/1000, sent, c.Resends)
	}
	fmt.Fprintln(s.out, describeRefusals(srv.Counters()))
	return exitOK
}

// simGroup is sim's group: the region, and its metrics' server on
// metrics unless that is nil.
func simGroup(srv *region.Server, metrics net.Listener) *throttle.Group {
	var g throttle.Group
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

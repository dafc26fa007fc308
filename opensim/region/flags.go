package region

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim"
	"github.com/fairgrid/fairgrid/ratecalc"
)

// Flags are the command-line flags of a region (fairgrid sim's), bound
// to a flag set by BindFlags; Config reads them once the set is parsed.
// Every value is checked there, and its error names its flag.
type Flags struct {
	fs                                                    *flag.FlagSet
	listen, activity, allow, clientMax, sceneMax, buckets *string
	position                                              *string
	avatars, children, maxPending, circuitBurst           *int
	priority, stress                                      *bool
	view, circuitRate                                     *float64
	pendingTimeout                                        *time.Duration
}

// BindFlags declares a region's flags on fs.
func BindFlags(fs *flag.FlagSet) *Flags {
	return &Flags{
		fs:             fs,
		listen:         fs.String("listen", "127.0.0.1:9000", "UDP address of the region"),
		activity:       fs.String("activity", "walking", "what the avatar is doing: "+ActivityNames()),
		avatars:        fs.Int("avatars", DefaultAvatars, "with --activity avatars: how many avatars move (1 to 10000)"),
		buckets:        fs.String("buckets", "fair", "token buckets per client: `opensim` (one per category, no lending, as OpenSim 0.9.2.2) or fair (idle categories lend)"),
		children:       fs.Int("child-regions", 0, "also open this many neighbour regions (0 to 8) on the ports after --listen's"),
		position:       fs.String("position", "128,128", "with --child-regions: where the agent stands in the region, X,Y in metres"),
		allow:          fs.String("allow", "", "accept only these circuits: CODE:AGENT-UUID:SESSION-UUID, comma-separated"),
		clientMax:      fs.String("client-max", "5.12M", "largest total per client, bits/s"),
		sceneMax:       fs.String("scene-max", "50M", "cap over all clients, bits/s"),
		priority:       fs.Bool("avatar-priority", false, "give avatar updates strict priority up to their rate"),
		stress:         fs.Bool("stress", false, "stress mode: echo each movement to the avatars within view distance"),
		view:           fs.Float64("view-distance", 32, "with --stress: view distance in metres"),
		maxPending:     fs.Int("max-pending", DefaultMaxPending, "most circuits that have not completed the handshake; beyond it new ones are refused"),
		pendingTimeout: fs.Duration("pending-timeout", DefaultPendingTimeout, "close a circuit that has not completed the handshake in this long"),
		circuitRate:    fs.Float64("circuit-rate", DefaultCircuitRate, "new circuits a second per source /24 (IPv4) or /64 (IPv6)"),
		circuitBurst:   fs.Int("circuit-burst", DefaultCircuitBurst, "new circuits at once per source /24 or /64"),
	}
}

// Config is the region the parsed flags describe, and the number of
// neighbour regions (--child-regions) to open beside it with
// OpenNeighbours. It refuses what would be ignored or out of range: a
// value the region would take for its default (a zero) among them.
func (f *Flags) Config() (cfg Config, children int, err error) {
	set := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if cfg.Listen, err = netip.ParseAddrPort(*f.listen); err != nil {
		return cfg, 0, fmt.Errorf("--listen %q: want ip:port", *f.listen)
	}
	if cfg.Activity, err = ParseActivity(*f.activity); err != nil {
		return cfg, 0, fmt.Errorf("--activity: %v", err)
	}
	if cfg.Allowed, err = ParseLogins(*f.allow); err != nil {
		return cfg, 0, fmt.Errorf("--allow %w", err)
	}
	if cfg.Scheduler, err = schedulerConfig(*f.clientMax, *f.sceneMax); err != nil {
		return cfg, 0, err
	}
	cfg.Scheduler.AvatarPriority = *f.priority
	switch *f.buckets {
	case "opensim":
		cfg.Scheduler.ChannelBuckets = true
	case "fair":
	default:
		return cfg, 0, fmt.Errorf("--buckets %q: want opensim or fair", *f.buckets)
	}
	if set["avatars"] && cfg.Activity != Avatars {
		return cfg, 0, errors.New("--avatars applies only with --activity avatars")
	}
	if cfg.Avatars = *f.avatars; cfg.Avatars < 1 || cfg.Avatars > 10_000 {
		return cfg, 0, fmt.Errorf("--avatars %d: want 1 to 10000", cfg.Avatars)
	}
	children = *f.children
	if children < 0 || children > len(NeighbourOffsets) {
		return cfg, 0, fmt.Errorf("--child-regions %d: want 0 to %d (the neighbours of a region)", children, len(NeighbourOffsets))
	}
	if set["position"] && children == 0 {
		return cfg, 0, errors.New("--position applies only with --child-regions")
	}
	xs, ys, ok := strings.Cut(*f.position, ",")
	x, err1 := strconv.ParseFloat(strings.TrimSpace(xs), 32)
	y, err2 := strconv.ParseFloat(strings.TrimSpace(ys), 32)
	if !ok || err1 != nil || err2 != nil || !(x >= 0 && x <= 256) || !(y >= 0 && y <= 256) {
		return cfg, 0, fmt.Errorf("--position %q: want X,Y in metres, each from 0 to 256", *f.position)
	}
	cfg.Position = lludp.Vector3{float32(x), float32(y), 25}
	if children > 0 && cfg.Listen.Port() != 0 && int(cfg.Listen.Port())+children > 65535 {
		return cfg, 0, fmt.Errorf("--child-regions %d: ports after %d run past 65535", children, cfg.Listen.Port())
	}
	cfg.Stress = StressConfig{Enabled: *f.stress, ViewDistance: float32(*f.view)}
	if !(*f.view > 0) || math.IsInf(*f.view, 0) {
		// The region takes 0 for its default: refused here, not swapped.
		return cfg, 0, fmt.Errorf("--view-distance %v: want a finite view above 0 metres", *f.view)
	}
	cfg.Admission, err = f.admission()
	return cfg, children, err
}

// schedulerConfig reads --client-max and --scene-max.
func schedulerConfig(clientMax, sceneMax string) (opensim.Config, error) {
	cm, err := ratecalc.ParseBitRate(clientMax)
	if err != nil {
		return opensim.Config{}, fmt.Errorf("--client-max: %w", err)
	}
	// Each of the scheduler's five channels has a floor of 500 B/s
	// (opensim.Config.ChannelMin), which a client's total must reach.
	if cm == 0 {
		return opensim.Config{}, fmt.Errorf("--client-max %s: want a positive rate such as 1536k", clientMax)
	}
	if bps := cm.BitsPerSecond(); bps < 4000 {
		return opensim.Config{}, fmt.Errorf("--client-max %s: %w", clientMax, ratecalc.BelowFloor(clientMax, bps, "a channel's floor of 4 kbit/s (500 B/s)"))
	}
	sm, err := ratecalc.ParseBitRate(sceneMax)
	if err != nil {
		return opensim.Config{}, fmt.Errorf("--scene-max: %w", err)
	}
	if sm == 0 {
		return opensim.Config{}, fmt.Errorf("--scene-max %s: want a positive rate such as 1536k", sceneMax)
	}
	return opensim.Config{ClientMax: int64(cm), SceneMax: int64(sm)}, nil
}

// admission checks the admission flags: each must be positive, as a zero
// would silently mean the default.
func (f *Flags) admission() (AdmissionConfig, error) {
	a := AdmissionConfig{MaxPending: *f.maxPending, PendingTimeout: *f.pendingTimeout, CircuitRate: *f.circuitRate, CircuitBurst: *f.circuitBurst}
	return a, errors.Join(a.check([4]string{"--max-pending", "--pending-timeout", "--circuit-rate", "--circuit-burst"})...)
}

// ParseLogins reads circuits a region accepts: CODE:AGENT:SESSION,
// comma-separated, the UUIDs in their usual form. Its errors quote the
// part that is wrong.
func ParseLogins(s string) ([]Login, error) {
	var logins []Login
	for _, part := range strings.Split(s, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		f := strings.Split(strings.TrimSpace(part), ":")
		if len(f) != 3 {
			return nil, fmt.Errorf("%q: want CODE:AGENT:SESSION", part)
		}
		code, err1 := strconv.ParseUint(f[0], 10, 32)
		agent, err2 := lludp.ParseUUID(f[1])
		session, err3 := lludp.ParseUUID(f[2])
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("%q: %v", part, err)
		}
		logins = append(logins, Login{Code: uint32(code), AgentID: agent, SessionID: session})
	}
	return logins, nil
}

// OpenNeighbours opens n neighbour regions of root, configured as cfg
// (root's), on the ports after its own (any free port if root's was 0),
// in the order of NeighbourOffsets, each a child of root. On an error
// those opened are closed.
func OpenNeighbours(root *Server, cfg Config, n int, log *slog.Logger) ([]*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var children []*Server
	for i := range n {
		c := cfg
		off := NeighbourOffsets[i]
		c.Child = &ChildConfig{OffsetX: off[0], OffsetY: off[1]}
		if cfg.Listen.Port() != 0 {
			c.Listen = netip.AddrPortFrom(cfg.Listen.Addr(), cfg.Listen.Port()+uint16(i+1))
		}
		child, err := New(c, log.With("region", fmt.Sprintf("child %d", i+1)))
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

// refusals names, in words, each counter of what a region refused or
// dropped.
var refusals = []struct {
	what  string
	count func(Counters) uint64
}{
	{"not LLUDP", func(k Counters) uint64 { return k.Malformed }},
	{"from endpoints with no circuit", func(k Counters) uint64 { return k.Orphans }},
	{"logins with a circuit code not accepted", func(k Counters) uint64 { return k.BadCircuitCodes }},
	{"with the wrong AgentID or SessionID", func(k Counters) uint64 { return k.BadIDs }},
	{"reliable duplicates", func(k Counters) uint64 { return k.Duplicates }},
	{"logins refused (too many pending)", func(k Counters) uint64 { return k.PendingFull }},
	{"logins refused (source over its rate)", func(k Counters) uint64 { return k.RateLimited }},
	{"handshakes timed out", func(k Counters) uint64 { return k.HandshakeTimeouts }},
	{"source prefixes evicted from the rate limiter", func(k Counters) uint64 { return k.LimiterEvictions }},
	{"dropped on arrival (inbound queue full)", func(k Counters) uint64 { return k.Overflow }},
}

// String says in words what the region refused or dropped, naming only
// what happened, and how its circuits ended.
func (k Counters) String() string {
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

// WriteSummary writes what root and its neighbours did: a line per client
// (its throttle, the bytes sent and resent), then what each refused or
// dropped (Counters.String), the neighbours' lines named by their
// address.
func WriteSummary(w io.Writer, root *Server, neighbours ...*Server) error {
	var b strings.Builder
	for i, r := range append([]*Server{root}, neighbours...) {
		where := ""
		if i > 0 {
			where = fmt.Sprintf("child region %v: ", r.Addr())
		}
		for _, c := range r.Clients() {
			var sent uint64
			for _, b := range c.SentBytes {
				sent += b
			}
			fmt.Fprintf(&b, "%s%v agent %v: throttle %.0f kbit/s, sent %d bytes, %d resends\n", where, c.Addr, c.AgentID, float64(c.Total)*8/1000, sent, c.Resends)
		}
	}
	fmt.Fprintln(&b, root.Counters())
	for _, n := range neighbours {
		fmt.Fprintf(&b, "child region %v: %v\n", n.Addr(), n.Counters())
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Package configs owns fairgrid's TOML configuration: its schema, its
// defaults, strict decoding (an unknown key is an error naming its path)
// into typed values that check themselves as they decode (values.go; the
// command line's flags bind to the same types), validation across keys
// that names the key at fault, and the conversion to the plain Config of
// each package. fairgrid.toml beside this file documents every key with
// its default.
package configs

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/fairgrid/fairgrid/opensim"
	"github.com/fairgrid/fairgrid/opensim/gateway"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/proxy"
)

// Example is the shipped, documented configuration: every key at its default.
//
//go:embed fairgrid.toml
var Example []byte

// File is the configuration file's schema.
type File struct {
	Capture struct {
		Interface   string     `toml:"interface"`
		Ports       PortList   `toml:"ports"`
		Sims        []AddrPort `toml:"sims"`
		IdleTimeout Duration   `toml:"idle_timeout"`
		MaxCircuits int        `toml:"max_circuits"`
	} `toml:"capture"`
	Control struct {
		Controller   throttle.ControllerName `toml:"controller"`
		Segment      throttle.Segment        `toml:"segment"`
		Interval     Duration                `toml:"interval"`
		MinBPS       float64                 `toml:"min_bps"`
		MaxBPS       float64                 `toml:"max_bps"`
		FloorBPS     float64                 `toml:"floor_bps"`
		MinChange    float64                 `toml:"min_change"`
		ResendEvery  int                     `toml:"resend_every"`
		ViewerLimit  bool                    `toml:"viewer_limit"`
		Split        Split                   `toml:"split"`
		SplitWeights []float64               `toml:"split_weights"`
	} `toml:"control"`
	Send struct {
		DryRun  bool    `toml:"dry_run"`
		Regions Regions `toml:"regions"`
	} `toml:"send"`
	// Metrics: each front-end serves on its own address by default, so
	// that run, proxy and gateway side by side do not collide.
	Metrics struct {
		Address        Address `toml:"address"`
		ProxyAddress   Address `toml:"proxy_address"`
		GatewayAddress Address `toml:"gateway_address"`
		MaxCircuits    int     `toml:"max_circuits"`
	} `toml:"metrics"`
	Log struct {
		Level  LogLevel  `toml:"level"`
		Format LogFormat `toml:"format"`
	} `toml:"log"`
	// Proxy is fairgrid proxy's own: read once at its start (a reload
	// names each that changed as needing a restart), unused by run.
	Proxy struct {
		Listen          HostPort `toml:"listen"`
		AllowPorts      PortList `toml:"allow_ports"`
		MaxAssociations int      `toml:"max_associations"`
		MaxConnects     int      `toml:"max_connects"`
		MaxSessions     int      `toml:"max_sessions"`
		IdleTimeout     Duration `toml:"idle_timeout"`
		HalfClose       Duration `toml:"half_close_timeout"`
		Username        string   `toml:"username"`
		PasswordFile    string   `toml:"password_file"`
	} `toml:"proxy"`
	// Gateway is fairgrid gateway's own (GatewayRoutes, Gateway); its
	// fair rate takes [control]'s controller, segment and clamps.
	Gateway struct {
		Routes         []Route  `toml:"routes"`
		Bind           IP       `toml:"bind"`
		SceneBPS       float64  `toml:"scene_bps"`
		ClientMaxBPS   float64  `toml:"client_max_bps"`
		QueueBytes     int      `toml:"queue_bytes"`
		QueuePackets   int      `toml:"queue_packets"`
		AvatarPriority bool     `toml:"avatar_priority"`
		MaxViewers     int      `toml:"max_viewers"`
		MaxPending     int      `toml:"max_pending"`
		MaxPerPrefix   int      `toml:"max_per_prefix"`
		PendingTimeout Duration `toml:"pending_timeout"`
		IdleTimeout    Duration `toml:"idle_timeout"`
		Linger         Duration `toml:"linger"`
		UpBPS          float64  `toml:"up_bps"`
		// MetricsIdentifyViewers puts viewers' endpoints and AgentIDs in
		// the gateway's metrics and log; MetricsPublic lets
		// metrics.gateway_address be off loopback (fairgrid gateway
		// refuses it otherwise).
		MetricsIdentifyViewers bool `toml:"metrics_identify_viewers"`
		MetricsPublic          bool `toml:"metrics_public"`
	} `toml:"gateway"`
}

// Default returns the configuration with every default.
func Default() *File {
	f, err := Parse(Example)
	if err != nil {
		panic("configs BUG: the shipped example does not load: " + err.Error())
	}
	return f
}

// Load reads and validates a configuration file.
func Load(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Parse decodes TOML over the defaults, strictly, and validates the result.
func Parse(b []byte) (*File, error) {
	f := &File{}
	if !bytes.Equal(b, Example) {
		f = Default()
	}
	md, err := toml.NewDecoder(bytes.NewReader(b)).Decode(f)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			if pe.LastKey != "" {
				return nil, fmt.Errorf("line %d: %s: %s", pe.Position.Line, pe.LastKey, pe.Message)
			}
			return nil, fmt.Errorf("line %d: %s", pe.Position.Line, pe.Message)
		}
		return nil, err
	}
	if und := md.Undecoded(); len(und) > 0 {
		var keys []string
		for _, k := range und {
			keys = append(keys, k.String())
		}
		return nil, fmt.Errorf("unknown key %s", strings.Join(keys, ", "))
	}
	return f, f.Validate()
}

// Validate checks each value's range and the relations between keys,
// naming the key of each problem (each value's form was checked as it
// decoded).
func (f *File) Validate() error {
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{key}, a...)...))
	}
	if f.Capture.Interface == "" {
		bad("capture.interface", "must name an interface")
	}
	if d := f.Capture.IdleTimeout.Duration; d < time.Second || d > 24*time.Hour {
		bad("capture.idle_timeout", "%v outside [1s, 24h]", d)
	}
	if n := f.Capture.MaxCircuits; n < 1 || n > maxCircuits {
		bad("capture.max_circuits", "%d outside [1, %d]", n, maxCircuits)
	}
	c := f.Control
	if err := throttle.CheckInterval(c.Interval.Duration); err != nil {
		bad("control.interval", "%v", err)
	}
	rate := func(key string, bps float64) bool {
		if err := ratecalc.CheckBits(bps); err != nil {
			bad(key, "%v", err)
			return false
		}
		return true
	}
	if rate("control.min_bps", c.MinBPS) && c.MinBPS < 8_000 {
		bad("control.min_bps", "%v: must be at least 8000", c.MinBPS)
	}
	if rate("control.max_bps", c.MaxBPS) && !(c.MaxBPS >= c.MinBPS && c.MaxBPS <= 1e9) {
		bad("control.max_bps", "%v: must lie between min_bps and 1e9", c.MaxBPS)
	}
	if rate("control.floor_bps", c.FloorBPS) && c.FloorBPS > c.MaxBPS {
		bad("control.floor_bps", "%v: must lie between 0 and max_bps", c.FloorBPS)
	}
	if !(c.MinChange >= 0 && c.MinChange < 1) {
		bad("control.min_change", "%v outside [0, 1)", c.MinChange)
	}
	if c.ResendEvery < 1 || c.ResendEvery > 100 {
		bad("control.resend_every", "%d outside [1, 100]", c.ResendEvery)
	}
	if c.Split == SplitWeights {
		if err := throttle.CheckWeights(c.SplitWeights); err != nil {
			bad("control.split_weights", "%v", err)
		}
	}
	if f.Metrics.MaxCircuits < 1 || f.Metrics.MaxCircuits > 100_000 {
		bad("metrics.max_circuits", "%d outside [1, 100000]", f.Metrics.MaxCircuits)
	}
	px := f.Proxy
	if len(px.AllowPorts) == 0 {
		bad("proxy.allow_ports", "empty: CONNECT would reach nothing (want ports such as 80, 443, 9000-13100)")
	}
	if err := checkSessionLimit(px.MaxAssociations); err != nil {
		bad("proxy.max_associations", "%v", err)
	}
	if err := checkSessionLimit(px.MaxConnects); err != nil {
		bad("proxy.max_connects", "%v", err)
	}
	if err := checkSessionLimit(px.MaxSessions); err != nil {
		bad("proxy.max_sessions", "%v", err)
	}
	if d := px.IdleTimeout.Duration; d < 100*time.Millisecond || d > 24*time.Hour {
		bad("proxy.idle_timeout", "%v outside [100ms, 24h]", d)
	}
	if d := px.HalfClose.Duration; d < 100*time.Millisecond || d > time.Hour {
		bad("proxy.half_close_timeout", "%v outside [100ms, 1h]", d)
	}
	if err := proxy.CheckUsername(px.Username, px.PasswordFile); err != nil {
		errs = append(errs, err)
	}
	f.validateGateway(bad)
	return errors.Join(errs...)
}

// validateGateway checks the [gateway] table.
func (f *File) validateGateway(bad func(key, format string, a ...any)) {
	gw := f.Gateway
	if err := checkRoutes(gw.Routes); err != nil {
		bad("gateway.routes", "%v", err)
	}
	if err := ratecalc.CheckBits(gw.SceneBPS); err != nil {
		bad("gateway.scene_bps", "%v", err)
	} else if gw.SceneBPS < 8 {
		bad("gateway.scene_bps", "%v: want at least 8 bit/s", gw.SceneBPS)
	}
	if err := ratecalc.CheckBits(gw.ClientMaxBPS); err != nil {
		bad("gateway.client_max_bps", "%v", err)
	} else if gw.ClientMaxBPS < 8 {
		bad("gateway.client_max_bps", "%v: want at least 8 bit/s", gw.ClientMaxBPS)
	}
	if gw.QueueBytes < 8192 || gw.QueueBytes > 1<<30 {
		bad("gateway.queue_bytes", "%d outside [8192, 1073741824]: a queue holds at least one largest datagram", gw.QueueBytes)
	}
	if gw.QueuePackets < 1 || gw.QueuePackets > 1<<20 {
		bad("gateway.queue_packets", "%d outside [1, 1048576]", gw.QueuePackets)
	}
	if err := ratecalc.CheckBits(gw.UpBPS); err != nil {
		bad("gateway.up_bps", "%v", err)
	} else if gw.UpBPS < 800 {
		bad("gateway.up_bps", "%v: want at least 800 bit/s (a viewer's datagram costs at least 100 bytes of it)", gw.UpBPS)
	}
	for _, k := range []struct {
		key string
		n   int
	}{{"gateway.max_viewers", gw.MaxViewers}, {"gateway.max_pending", gw.MaxPending}, {"gateway.max_per_prefix", gw.MaxPerPrefix}} {
		if k.n < 1 || k.n > 1_000_000 {
			bad(k.key, "%d outside [1, 1000000]", k.n)
		}
	}
	for _, k := range []struct {
		key string
		d   time.Duration
	}{{"gateway.pending_timeout", gw.PendingTimeout.Duration}, {"gateway.idle_timeout", gw.IdleTimeout.Duration}, {"gateway.linger", gw.Linger.Duration}} {
		if k.d < 100*time.Millisecond || k.d > 24*time.Hour {
			bad(k.key, "%v outside [100ms, 24h]", k.d)
		}
	}
}

// maxSessions bounds proxy.max_associations and proxy.max_connects: each
// session holds sockets and a goroutine or two, and a viewer needs tens.
const maxSessions = 100_000

// checkSessionLimit checks a session limit.
func checkSessionLimit(n int) error {
	if n < 1 || n > maxSessions {
		return fmt.Errorf("%d: want at least 1 and at most %d", n, maxSessions)
	}
	return nil
}

// ProxyConfig returns the proxy's configuration but its password, which
// proxy.Credentials reads (proxy.password_file, or the environment). Its
// UDP goes to capture.ports, the simulator ports. f must be valid.
func (f *File) ProxyConfig() proxy.Config {
	c := proxy.Config{Username: f.Proxy.Username, AllowPorts: f.Proxy.AllowPorts.Ports(), UDPPorts: f.Capture.Ports.Ports(), MaxAssociations: f.Proxy.MaxAssociations,
		MaxConnects: f.Proxy.MaxConnects, MaxSessions: f.Proxy.MaxSessions, IdleTimeout: f.Proxy.IdleTimeout.Duration,
		HalfCloseTimeout: f.Proxy.HalfClose.Duration, DryRun: f.Send.DryRun}
	// No metrics of fairgrid's on this host are reachable through CONNECT.
	for _, a := range []Address{f.Metrics.Address, f.Metrics.ProxyAddress, f.Metrics.GatewayAddress} {
		if ap, ok := a.AddrPort(); ok {
			c.OwnAddrs = append(c.OwnAddrs, ap)
		}
	}
	return c
}

// restartKeys are the keys a running daemon cannot change: they decide
// what it captures (interface, ports, sims), what state it keeps per
// circuit (max_circuits, controller), its clock (interval), its sockets
// (dry_run opens or closes the raw ones) and its listener; and every
// [proxy] key, which the proxy reads once, at start. A reload names each
// that differs; every other key is applied at once.
var restartKeys = []string{
	"capture.interface", "capture.ports", "capture.sims", "capture.max_circuits",
	"control.controller", "control.interval", "send.dry_run", "metrics.address",
	"metrics.proxy_address", "metrics.gateway_address", "log.format",
}

// NeedsRestart reports whether a running daemon or proxy keeps key's value
// until it restarts. The [gateway] keys are fairgrid gateway's, which
// reloads them itself (gateway.Reconfigure): to run and proxy they are
// like [proxy]'s to run, kept as they were and named.
func NeedsRestart(key string) bool {
	return slices.Contains(restartKeys, key) || strings.HasPrefix(key, "proxy.") || strings.HasPrefix(key, "gateway.")
}

// Merge returns f, the configuration in force, with what of next a reload
// can change live (sidecar.Settings): the keys that differ are applied,
// or named as needing a restart and kept. next must be valid; the error
// is sidecar.Settings', and always nil: a File holds only values that
// decoded.
func (f *File) Merge(next *File) (merged *File, applied, needRestart []string, err error) {
	m := *f
	for _, key := range Changed(f, next) {
		if NeedsRestart(key) {
			needRestart = append(needRestart, key)
			continue
		}
		m.Field(key).Set(next.Field(key))
		applied = append(applied, key)
	}
	return &m, applied, needRestart, nil
}

// Keys lists every key of the schema as "table.key", in its order. They
// come from File's own fields, so a new key is listed without anyone
// remembering to.
func Keys() []string {
	var keys []string
	eachKey(reflect.ValueOf(&File{}).Elem(), func(key string, _ reflect.Value) { keys = append(keys, key) })
	return keys
}

// Changed lists the keys whose values differ between a and b.
func Changed(a, b *File) []string {
	values := map[string]reflect.Value{}
	eachKey(reflect.ValueOf(a).Elem(), func(key string, v reflect.Value) { values[key] = v })
	var changed []string
	eachKey(reflect.ValueOf(b).Elem(), func(key string, v reflect.Value) {
		if !reflect.DeepEqual(values[key].Interface(), v.Interface()) {
			changed = append(changed, key)
		}
	})
	return changed
}

// Field returns the value of a key (see Keys) for setting or reading, or
// an invalid Value if there is no such key.
func (f *File) Field(key string) reflect.Value {
	var out reflect.Value
	eachKey(reflect.ValueOf(f).Elem(), func(k string, v reflect.Value) {
		if k == key {
			out = v
		}
	})
	return out
}

// eachKey calls fn with every key of a File value and its field.
func eachKey(file reflect.Value, fn func(key string, v reflect.Value)) {
	for i := range file.NumField() {
		table, tt := file.Field(i), file.Type().Field(i)
		for j := range table.NumField() {
			fn(tt.Tag.Get("toml")+"."+table.Type().Field(j).Tag.Get("toml"), table.Field(j))
		}
	}
}

// maxCircuits bounds capture.max_circuits: each circuit's state is a few
// kilobytes, so a million is gigabytes — a typo, not a setting.
const maxCircuits = 1_000_000

// Throttle returns the control loop's configuration.
func (f *File) Throttle() throttle.Config {
	c := f.Control
	var weights []float64
	if c.Split == SplitWeights {
		weights = slices.Clone(c.SplitWeights)
	}
	return throttle.Config{Controller: c.Controller, Segment: c.Segment, Interval: c.Interval.Duration,
		Min: ratecalc.RateFromBits(c.MinBPS), Max: ratecalc.RateFromBits(c.MaxBPS), Floor: ratecalc.RateFromBits(c.FloorBPS),
		MinChange: new(c.MinChange), ResendEvery: c.ResendEvery, Weights: weights,
		FixedSplit: c.Split != SplitDemand, AboveViewer: !c.ViewerLimit, Sims: addrPorts(f.Capture.Sims), SimPorts: f.Capture.Ports.Ports(), RootOnly: f.Send.Regions == RegionsRoot,
		MaxCircuits: f.Capture.MaxCircuits, IdleTimeout: f.Capture.IdleTimeout.Duration}
}

// LogLevel is log.level, the least level logged (sidecar.DaemonSettings).
func (f *File) LogLevel() slog.Level { return f.Log.Level.Level() }

// MetricsMaxCircuits is metrics.max_circuits, the circuits a collector
// exports one by one (sidecar.DaemonSettings).
func (f *File) MetricsMaxCircuits() int { return f.Metrics.MaxCircuits }

// GatewayConfig returns fairgrid gateway's configuration: the [gateway]
// table, with [control]'s controller, segment, interval, clamps and
// hysteresis for the fair rate.
func (f *File) GatewayConfig() gateway.Config {
	gw := f.Gateway
	cfg := gateway.Config{Bind: gw.Bind.Addr,
		Scheduler: opensim.Config{SceneMax: int64(gw.SceneBPS / 8), ClientMax: int64(gw.ClientMaxBPS / 8),
			QueueBytes: int64(gw.QueueBytes), QueuePackets: gw.QueuePackets, AvatarPriority: gw.AvatarPriority},
		Control:    f.Throttle(),
		MaxViewers: gw.MaxViewers, MaxPending: gw.MaxPending, MaxPerPrefix: gw.MaxPerPrefix,
		PendingTimeout: gw.PendingTimeout.Duration, IdleTimeout: gw.IdleTimeout.Duration, Linger: gw.Linger.Duration,
		UpMax: ratecalc.RateFromBits(gw.UpBPS), IdentifyViewers: gw.MetricsIdentifyViewers}
	for _, r := range gw.Routes {
		cfg.Routes = append(cfg.Routes, gateway.Route{Listen: r.Listen, Region: r.Region})
	}
	return cfg
}

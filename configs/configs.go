// Package configs owns fairgrid's TOML configuration: its schema, its
// defaults, strict decoding (an unknown key is an error naming its path),
// validation that names the key at fault, and the conversion to the plain
// Config of each package. fairgrid.toml beside this file documents every
// key with its default.
package configs

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
)

// Example is the shipped, documented configuration: every key at its default.
//
//go:embed fairgrid.toml
var Example []byte

// File is the configuration file's schema.
type File struct {
	Capture struct {
		Interface   string   `toml:"interface"`
		Ports       []string `toml:"ports"`
		Sims        []string `toml:"sims"`
		IdleTimeout Duration `toml:"idle_timeout"`
	} `toml:"capture"`
	Control struct {
		Controller   string    `toml:"controller"`
		Interval     Duration  `toml:"interval"`
		MinBPS       float64   `toml:"min_bps"`
		MaxBPS       float64   `toml:"max_bps"`
		FloorBPS     float64   `toml:"floor_bps"`
		MinChange    float64   `toml:"min_change"`
		ResendEvery  int       `toml:"resend_every"`
		Split        string    `toml:"split"`
		SplitWeights []float64 `toml:"split_weights"`
	} `toml:"control"`
	Send struct {
		DryRun  bool   `toml:"dry_run"`
		Regions string `toml:"regions"`
	} `toml:"send"`
	Metrics struct {
		Address     string `toml:"address"`
		MaxCircuits int    `toml:"max_circuits"`
	} `toml:"metrics"`
	Log struct {
		Level string `toml:"level"`
	} `toml:"log"`
}

// Duration is a TOML string such as "5s". An integer would mean
// nanoseconds in the TOML library, which nobody means: it is refused.
type Duration struct{ time.Duration }

func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration such as \"5s\"", b)
	}
	d.Duration = v
	return nil
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

// Validate checks every value and names the key of each problem.
func (f *File) Validate() error {
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{key}, a...)...))
	}
	if f.Capture.Interface == "" {
		bad("capture.interface", "must name an interface")
	}
	if _, err := f.Ports(); err != nil {
		bad("capture.ports", "%v", err)
	}
	if _, err := f.Sims(); err != nil {
		bad("capture.sims", "%v", err)
	}
	if d := f.Capture.IdleTimeout.Duration; d < time.Second || d > 24*time.Hour {
		bad("capture.idle_timeout", "%v outside [1s, 24h]", d)
	}
	c := f.Control
	switch c.Controller {
	case "window", "tfrc", "viewer":
	default:
		bad("control.controller", "%q: want window, tfrc or viewer", c.Controller)
	}
	if c.Interval.Duration < 100*time.Millisecond || c.Interval.Duration > time.Hour {
		bad("control.interval", "%v outside [100ms, 1h]", c.Interval.Duration)
	}
	if !(c.MinBPS >= 8_000) {
		bad("control.min_bps", "%v: must be at least 8000", c.MinBPS)
	}
	if !(c.MaxBPS >= c.MinBPS && c.MaxBPS <= 1e9) {
		bad("control.max_bps", "%v: must lie between min_bps and 1e9", c.MaxBPS)
	}
	if !(c.FloorBPS >= 0 && c.FloorBPS <= c.MaxBPS) {
		bad("control.floor_bps", "%v: must lie between 0 and max_bps", c.FloorBPS)
	}
	if !(c.MinChange >= 0 && c.MinChange < 1) {
		bad("control.min_change", "%v outside [0, 1)", c.MinChange)
	}
	if c.ResendEvery < 1 || c.ResendEvery > 100 {
		bad("control.resend_every", "%d outside [1, 100]", c.ResendEvery)
	}
	switch c.Split {
	case "viewer":
	case "weights":
		var sum float64
		for _, w := range c.SplitWeights {
			if !(w >= 0) {
				sum = -1
				break
			}
			sum += w
		}
		if len(c.SplitWeights) != 7 || !(sum > 0) {
			bad("control.split_weights", "want 7 weights, none negative, not all zero")
		}
	default:
		bad("control.split", "%q: want viewer or weights", c.Split)
	}
	if f.Send.Regions != "all" && f.Send.Regions != "root" {
		bad("send.regions", "%q: want all or root", f.Send.Regions)
	}
	if f.Metrics.Address != "" {
		if _, err := netip.ParseAddrPort(f.Metrics.Address); err != nil {
			bad("metrics.address", "%q: want ip:port, or empty", f.Metrics.Address)
		}
	}
	if f.Metrics.MaxCircuits < 1 || f.Metrics.MaxCircuits > 100_000 {
		bad("metrics.max_circuits", "%d outside [1, 100000]", f.Metrics.MaxCircuits)
	}
	if _, err := f.LogLevel(); err != nil {
		bad("log.level", "%v", err)
	}
	return errors.Join(errs...)
}

// Ports returns capture.ports.
func (f *File) Ports() (capture.Ports, error) {
	var out capture.Ports
	for _, p := range f.Capture.Ports {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(p), "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.ParseUint(lo, 10, 16)
		b, err2 := strconv.ParseUint(hi, 10, 16)
		if err1 != nil || err2 != nil || a == 0 || a > b {
			return nil, fmt.Errorf("%q: want a port or a range such as \"9000-13100\"", p)
		}
		out = append(out, capture.PortRange{Lo: uint16(a), Hi: uint16(b)})
	}
	return out, nil
}

// Sims returns capture.sims.
func (f *File) Sims() ([]netip.AddrPort, error) {
	var out []netip.AddrPort
	for _, s := range f.Capture.Sims {
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			return nil, fmt.Errorf("%q: want ip:port", s)
		}
		out = append(out, ap)
	}
	return out, nil
}

// LogLevel returns log.level.
func (f *File) LogLevel() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(f.Log.Level)); err != nil {
		return l, fmt.Errorf("%q: want debug, info, warn or error", f.Log.Level)
	}
	return l, nil
}

// Throttle returns the control loop's configuration.
func (f *File) Throttle() throttle.Config {
	sims, _ := f.Sims()
	c := f.Control
	return throttle.Config{Controller: c.Controller, Interval: c.Interval.Duration,
		Min: ratecalc.RateFromBits(c.MinBPS), Max: ratecalc.RateFromBits(c.MaxBPS), Floor: ratecalc.RateFromBits(c.FloorBPS),
		MinChange: c.MinChange, ResendEvery: c.ResendEvery, Sims: sims, RootOnly: f.Send.Regions == "root"}
}

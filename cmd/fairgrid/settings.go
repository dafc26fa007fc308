package main

import (
	"encoding"
	"errors"
	"flag"
	"io"
	"log/slog"
	"strconv"

	"github.com/fairgrid/fairgrid/configs"
	"github.com/fairgrid/fairgrid/ratecalc"
)

// setting is a flag that sets a configuration key.
type setting struct{ flag, key, usage string }

// frontEndSettings are the flags of the front-ends that read the
// configuration file (run, proxy, gateway): the control loop's, the
// metrics address (each front-end its own key, so that they run side by
// side) and the log's.
func frontEndSettings(metricsKey string) []setting {
	return []setting{
		{"controller", "control.controller", "the fair rate's `controller`: vtcp (virtual TCP, calibrated against real TCP), window (window tracking), tfrc, or viewer (the stock rule)"},
		{"segment", "control.segment", segmentUsage},
		{"interval", "control.interval", "how often each circuit's request is decided, a `duration` such as 5s"},
		{"metrics", metricsKey, "Prometheus metrics `address` (empty: none)"},
		{"log-level", "log.level", "the least `level` logged: debug, info, warn or error"},
		{"log-format", "log.format", logFormatUsage},
	}
}

// logFormatUsage is --log-format's, here and in sim.
const logFormatUsage = "log format: `text` (key=value lines) or json (one object a line)"

// dryRunSetting is run's and proxy's --dry-run.
var dryRunSetting = setting{"dry-run", "send.dry_run", "measure, decide, log and export; change and send nothing"}

// settings are a command's setting flags, bound once: each flag's value
// is its key's type (a bad value is refused as the command line is
// parsed, by the same UnmarshalText that reads the file), its default the
// key's default, configs.Default, so no default is written twice.
type settings struct {
	fs     *flag.FlagSet
	values *configs.File     // the flags' values: the defaults, then the command line's
	keys   map[string]string // flag name → key
}

// bindSettings declares list's flags on fs. Each flag's usage ends with
// the key it sets, which --help shows and explainFlagError names.
func bindSettings(fs *flag.FlagSet, list ...setting) *settings {
	s := &settings{fs: fs, values: configs.Default(), keys: map[string]string{}}
	for _, st := range list {
		field := s.values.Field(st.key)
		if !field.IsValid() {
			panic("fairgrid BUG: --" + st.flag + " sets no key " + st.key)
		}
		usage := st.usage + "; " + st.key
		switch p := field.Addr().Interface().(type) {
		case encoding.TextUnmarshaler:
			fs.TextVar(p, st.flag, field.Interface().(encoding.TextMarshaler), usage)
		case *string:
			fs.StringVar(p, st.flag, *p, usage)
		case *bool:
			fs.BoolVar(p, st.flag, *p, usage)
		case *int:
			fs.IntVar(p, st.flag, *p, usage)
		case *float64: // the keys in bit/s
			fs.Var(bitsValue{p}, st.flag, usage)
		default:
			panic("fairgrid BUG: no flag type for " + st.key)
		}
		s.keys[st.flag] = st.key
	}
	return s
}

// load reads the configuration file (the defaults if path is empty),
// sets the keys of the flags the command line gave over it, and
// validates the result.
func (s *settings) load(path string) (*configs.File, error) {
	f := configs.Default()
	if path != "" {
		var err error
		if f, err = configs.Load(path); err != nil {
			return nil, err
		}
	}
	s.fs.Visit(func(fl *flag.Flag) {
		if key, ok := s.keys[fl.Name]; ok {
			f.Field(key).Set(s.values.Field(key))
		}
	})
	return f, f.Validate()
}

// newLogger is a front-end's log on w, in the configured format.
func newLogger(w io.Writer, format configs.LogFormat, level slog.Leveler) *slog.Logger {
	return slog.New(format.Handler(w, &slog.HandlerOptions{Level: level}))
}

// errPositiveRate: a rate of 0 for a key where it means nothing.
var errPositiveRate = errors.New("want a positive rate such as 50M")

// bitsValue is a flag for a key in bit/s, given as a rate such as 50M.
type bitsValue struct{ p *float64 }

func (b bitsValue) Set(v string) error {
	r, err := ratecalc.ParseBitRate(v)
	if err != nil {
		return err
	}
	if r <= 0 {
		return errPositiveRate
	}
	*b.p = r.BitsPerSecond()
	return nil
}

// String writes the rate as Set reads it: 50000000 as 50M.
func (b bitsValue) String() string {
	if b.p == nil {
		return ""
	}
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"G", 1e9}, {"M", 1e6}, {"k", 1e3}} {
		if *b.p >= u.mult {
			return strconv.FormatFloat(*b.p/u.mult, 'g', -1, 64) + u.suffix
		}
	}
	return strconv.FormatFloat(*b.p, 'g', -1, 64)
}

package cli

import (
	"encoding"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"

	"github.com/fairgrid/fairgrid/configs"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/proxy"
)

// Setting is a flag that sets a configuration key.
type Setting struct{ Flag, Key, Usage string }

// MetricsKey is the key a front-end's --metrics sets: each has its own,
// so that they run side by side.
func MetricsKey(command string) string {
	switch command {
	case "proxy":
		return "metrics.proxy_address"
	case "gateway":
		return "metrics.gateway_address"
	}
	return "metrics.address"
}

// FrontEndSettings are the flags of the front-ends that read the
// configuration file (run, proxy, gateway): the control loop's, the
// metrics address (each front-end its own key, MetricsKey, so that they
// run side by side) and the log's; then more.
func FrontEndSettings(command string, more ...Setting) []Setting {
	return append([]Setting{
		{"controller", "control.controller", "the fair rate's `controller`: vtcp (virtual TCP, calibrated against real TCP), window (window tracking), tfrc, or viewer (the stock rule)"},
		{"segment", "control.segment", SegmentUsage},
		{"interval", "control.interval", "how often each circuit's request is decided, a `duration` such as 5s"},
		{"metrics", MetricsKey(command), "Prometheus metrics `address` (empty: none)"},
		{"log-level", "log.level", "the least `level` logged: debug, info, warn or error"},
		{"log-format", "log.format", LogFormatUsage},
	}, more...)
}

// LogFormatUsage is --log-format's, in the front-ends and sim.
const LogFormatUsage = "log format: `text` (key=value lines) or json (one object a line)"

// SegmentUsage is --segment's, in the front-ends and audit.
const SegmentUsage = "the segment size s of the TCP-fair rate: `mean` (the mean datagram payload, RFC 5348) or nominal (1460 B, RFC 4828)"

// DryRunSetting is run's and proxy's --dry-run.
var DryRunSetting = Setting{"dry-run", "send.dry_run", "measure, decide, log and export; change and send nothing"}

// RunSettings are run's setting flags.
func RunSettings() []Setting {
	return FrontEndSettings("run", DryRunSetting,
		Setting{"interface", "capture.interface", "interface to capture on (auto: the default route's)"})
}

// ProxySettings are the proxy's: run's, and one for each of the [proxy]
// keys a command line needs.
func ProxySettings() []Setting {
	return FrontEndSettings("proxy", DryRunSetting,
		Setting{"listen", "proxy.listen", "SOCKS5 listen `address` (beyond loopback only with --user)"},
		Setting{"user", "proxy.username", "`username` clients must give (RFC 1929); the password comes from --password-file or $" + ProxyPasswordEnv},
		Setting{"password-file", "proxy.password_file", "`file` holding the password (its first line)"},
		Setting{"allow-ports", "proxy.allow_ports", "CONNECT `ports` and ranges, comma-separated"},
		Setting{"sim-ports", "capture.ports", "the simulators' UDP `ports` and ranges, comma-separated: the only ones the relay sends to"},
		Setting{"max-associations", "proxy.max_associations", "UDP associations open at once per client address"},
		Setting{"max-connects", "proxy.max_connects", "CONNECT sessions open at once per client address"})
}

// GatewaySettings are the gateway's: run's that apply, and one for each
// [gateway] key a command line needs.
func GatewaySettings() []Setting {
	return FrontEndSettings("gateway",
		Setting{"scene-max", "gateway.scene_bps", "the gateway's uplink, a `rate` in bits/s such as 50M, shared by every viewer"},
		Setting{"bind", "gateway.bind", "local `address` of the sockets towards the regions"})
}

// ProxyPasswordEnv holds the proxy's password when no file names it: a
// command line is visible to every user of the host.
const ProxyPasswordEnv = "FAIRGRID_PROXY_PASSWORD"

// ProxyConfig is the proxy's configuration from f, with its credentials
// (the password from proxy.password_file, else envPass), and the address
// to listen on: proxy.listen resolved, refused beyond loopback without
// credentials.
func ProxyConfig(f *configs.File, envPass string) (proxy.Config, string, error) {
	pc := f.ProxyConfig()
	var err error
	if pc.Username, pc.Password, err = proxy.Credentials(f.Proxy.Username, f.Proxy.PasswordFile, envPass, ProxyPasswordEnv); err != nil {
		return proxy.Config{}, "", err
	}
	listen, err := pc.CheckListen(string(f.Proxy.Listen))
	if err != nil {
		return proxy.Config{}, "", fmt.Errorf("proxy.listen (--listen): %w", err)
	}
	return pc, listen, nil
}

// ConfigFlags declares --config and --check-config, as every front-end
// that reads the configuration file has them.
func ConfigFlags(fs *flag.FlagSet) (path *string, check *bool) {
	path = fs.String("config", "", "configuration file (default: the built-in defaults, as in configs/fairgrid.toml)")
	check = fs.Bool("check-config", false, "validate the configuration and exit")
	return path, check
}

// ConfigArg takes `COMMAND --check-config FILE`, as `nginx -t` and
// `promtool check config` users type it: the one positional argument of
// --check-config is the file to check, set in path. Any other is an
// error.
func ConfigArg(fs *flag.FlagSet, path *string, check bool) error {
	if fs.NArg() == 0 {
		return nil
	}
	if !check || fs.NArg() > 1 || *path != "" {
		return fmt.Errorf("unexpected argument %q (a configuration file is given with --config FILE, or as the one argument of --check-config)", fs.Arg(fs.NArg()-1))
	}
	*path = fs.Arg(0)
	return nil
}

// SegmentFlag declares audit's --segment; its default is the shipped
// configuration's (control.segment), as the front-ends'.
func SegmentFlag(fs *flag.FlagSet) *throttle.Segment {
	segment := configs.Default().Control.Segment
	fs.TextVar(&segment, "segment", segment, SegmentUsage)
	return &segment
}

// Settings are a command's setting flags, bound once: each flag's value
// is its key's type (a bad value is refused as the command line is
// parsed, by the same UnmarshalText that reads the file), its default the
// key's default, configs.Default, so no default is written twice.
type Settings struct {
	fs     *flag.FlagSet
	Values *configs.File     // the flags' values: the defaults, then the command line's
	keys   map[string]string // flag name → key
}

// BindSettings declares list's flags on fs. Each flag's usage ends with
// the key it sets, which --help shows and Explain names.
func BindSettings(fs *flag.FlagSet, list ...Setting) *Settings {
	s := &Settings{fs: fs, Values: configs.Default(), keys: map[string]string{}}
	for _, st := range list {
		field := s.Values.Field(st.Key)
		if !field.IsValid() {
			panic("fairgrid BUG: --" + st.Flag + " sets no key " + st.Key)
		}
		usage := st.Usage + "; " + st.Key
		switch p := field.Addr().Interface().(type) {
		case encoding.TextUnmarshaler:
			fs.TextVar(p, st.Flag, field.Interface().(encoding.TextMarshaler), usage)
		case *string:
			fs.StringVar(p, st.Flag, *p, usage)
		case *bool:
			fs.BoolVar(p, st.Flag, *p, usage)
		case *int:
			fs.IntVar(p, st.Flag, *p, usage)
		case *float64: // the keys in bit/s
			fs.Var(bitsValue{p}, st.Flag, usage)
		default:
			panic("fairgrid BUG: no flag type for " + st.Key)
		}
		s.keys[st.Flag] = st.Key
	}
	return s
}

// Load reads the configuration file (the defaults if path is empty),
// sets the keys of the flags the command line gave over it, and
// validates the result.
func (s *Settings) Load(path string) (*configs.File, error) {
	f := configs.Default()
	if path != "" {
		var err error
		if f, err = configs.Load(path); err != nil {
			return nil, err
		}
	}
	s.fs.Visit(func(fl *flag.Flag) {
		if key, ok := s.keys[fl.Name]; ok {
			f.Field(key).Set(s.Values.Field(key))
		}
	})
	return f, f.Validate()
}

// NewLogger is a front-end's log on w, in the configured format.
func NewLogger(w io.Writer, format configs.LogFormat, level slog.Leveler) *slog.Logger {
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

// ExitFail is the exit code of a command that failed.
const ExitFail = 1

// ResultWriter is a command's standard output that remembers the first
// write error, so that the command fails instead of exiting 0 having
// written nothing (a full disk, a closed pipe).
type ResultWriter struct {
	W   io.Writer
	Err error
}

func (r *ResultWriter) Write(p []byte) (int, error) {
	if r.Err != nil {
		return 0, r.Err
	}
	n, err := r.W.Write(p)
	if err != nil {
		r.Err = fmt.Errorf("writing the results: %w", err)
	}
	return n, r.Err
}

// Finish turns a write error into exit 1, reported on errw as fairgrid
// NAME's; otherwise it returns code.
func (r *ResultWriter) Finish(errw io.Writer, name string, code int) int {
	if r.Err == nil {
		return code
	}
	fmt.Fprintf(errw, "fairgrid %s: %v\n", name, r.Err)
	return ExitFail
}

package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fairgrid/fairgrid/configs"
)

// Exit codes of a command line.
const (
	ExitOK    = 0
	ExitUsage = 2
)

// NewFlagSet returns a flag set that reports errors on errw instead of
// exiting, and whose usage is the synopsis and the options.
func NewFlagSet(name, synopsis string, errw io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(errw)
	fs.Usage = func() { printUsage(fs, synopsis, fs.Output()) }
	return fs
}

func printUsage(fs *flag.FlagSet, synopsis string, w io.Writer) {
	fmt.Fprintf(w, "Usage: fairgrid %s %s\n\nOptions:\n", fs.Name(), synopsis)
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// Parse parses args for a command that takes no positional arguments:
// one is an error naming it. It returns false, with the exit code, when
// the command should stop: help was asked for (printed on out, exit 0) or
// the command line was bad (reported on errw, exit 2).
func Parse(fs *flag.FlagSet, synopsis string, args []string, out, errw io.Writer) (int, bool) {
	code, ok := ParseArgs(fs, synopsis, args, out, errw)
	if ok && fs.NArg() > 0 {
		fmt.Fprintf(errw, "fairgrid %s: unexpected argument %q (this command takes options only; see --help)\n", fs.Name(), fs.Arg(0))
		return ExitUsage, false
	}
	return code, ok
}

// ParseArgs parses args for a command that takes positional arguments,
// which it then finds in fs.Args(). Flags may follow them, as users type
// them ("decode real.pcap --summary"); after "--" everything is positional.
func ParseArgs(fs *flag.FlagSet, synopsis string, args []string, out, errw io.Writer) (int, bool) {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "--help" || a == "-help" {
			printUsage(fs, synopsis, out)
			return ExitOK, false
		}
	}
	// The flag package would print its error and then every option; one
	// line saying what is wrong and what to try reads better.
	saved := fs.Output()
	fs.SetOutput(io.Discard)
	positional, err := parseInterleaved(fs, args)
	fs.SetOutput(saved)
	if err != nil {
		fmt.Fprintf(errw, "fairgrid %s: %s; see fairgrid %s --help\n", fs.Name(), Explain(fs, err), fs.Name())
		return ExitUsage, false
	}
	// Parsing "--" and the positionals alone sets no flag and leaves them in
	// fs.Args(), where each command reads them.
	if err := fs.Parse(append([]string{"--"}, positional...)); err != nil {
		return ExitUsage, false
	}
	return ExitOK, true
}

// parseInterleaved parses flags wherever they stand among the positional
// arguments, which it returns in order. The flag package stops at the first
// positional one; parsing resumes after it.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// FormatFlag declares --format: text, json or one of more, checked as
// the flags are parsed, so every subcommand refuses the same way.
func FormatFlag(fs *flag.FlagSet, usage string, more ...string) *string {
	format := "text"
	fs.Var(formatValue{&format, append([]string{"text", "json"}, more...)}, "format", usage)
	return &format
}

type formatValue struct {
	p       *string
	allowed []string
}

func (f formatValue) String() string {
	if f.p == nil {
		return ""
	}
	return *f.p
}

func (f formatValue) Set(v string) error {
	if !slices.Contains(f.allowed, v) {
		last := len(f.allowed) - 1
		return fmt.Errorf("want %s or %s", strings.Join(f.allowed[:last], ", "), f.allowed[last])
	}
	*f.p = v
	return nil
}

// Explain rewords the flag package's error for a person: an
// unknown flag with the nearest known one, a duration without its unit
// with the unit to add, flags written with two dashes as they are typed.
func Explain(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		if near := Nearest(name, names); near != "" {
			return fmt.Sprintf("unknown flag --%s (did you mean --%s?)", name, near)
		}
		return fmt.Sprintf("unknown flag --%s", name)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Sprintf("--%s needs a value", name)
	}
	// "invalid boolean value "maybe" for -gateway: parse error"
	var value, name string
	if n, _ := fmt.Sscanf(msg, "invalid boolean value %q for -%s", &value, &name); n == 2 {
		return fmt.Sprintf("--%s=%q: want true or false (--%s alone is true)", strings.TrimSuffix(name, ":"), value, strings.TrimSuffix(name, ":"))
	}
	// "invalid value "100" for flag -rtt: parse error"
	if n, _ := fmt.Sscanf(msg, "invalid value %q for flag -%s", &value, &name); n == 2 {
		name = strings.TrimSuffix(name, ":")
		reason := msg[strings.Index(msg, name+":")+len(name)+1:]
		reason = strings.TrimSpace(reason)
		// A setting's flag names its key.
		key := ""
		if f := fs.Lookup(name); f != nil && flagKey(f) != "" {
			key = " (" + flagKey(f) + ")"
		}
		if f := fs.Lookup(name); f != nil && isDuration(f) {
			if _, nerr := strconv.ParseFloat(value, 64); nerr == nil {
				return fmt.Sprintf("--%s %s%s: a duration needs a unit, such as %sms or %ss", name, value, key, value, value)
			}
			return fmt.Sprintf("--%s %q%s: want a duration such as 100ms, 5s or 1m", name, value, key)
		}
		// The flag package's numbers say only "parse error": say what
		// the flag takes, from its default.
		if f := fs.Lookup(name); f != nil && reason == "parse error" {
			if g, ok := f.Value.(flag.Getter); ok {
				switch g.Get().(type) {
				case int, int64, uint, uint64:
					reason = "want a whole number, such as " + f.DefValue
				case float64:
					reason = "want a number, such as " + f.DefValue
				}
			}
		}
		// A reason that quotes the value (a typed value's UnmarshalText)
		// is not given it twice.
		quoted := fmt.Sprintf(" %q", value)
		if strings.Contains(reason, strconv.Quote(value)) {
			quoted = ""
		}
		return fmt.Sprintf("--%s%s%s: %s", name, quoted, key, reason)
	}
	return msg
}

// isDuration says whether f takes a duration: a time.Duration, or a
// setting's configs.Duration.
func isDuration(f *flag.Flag) bool {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return false
	}
	switch g.Get().(type) {
	case time.Duration, *configs.Duration:
		return true
	}
	return false
}

// AddrPortVar declares an ip:port flag; an address that is not one, or
// none, is refused as the command line is parsed.
func AddrPortVar(fs *flag.FlagSet, p *netip.AddrPort, name, value, usage string) {
	*p = netip.MustParseAddrPort(value)
	fs.Var(addrPortValue{p}, name, usage)
}

type addrPortValue struct{ p *netip.AddrPort }

func (a addrPortValue) String() string {
	if a.p == nil {
		return ""
	}
	return a.p.String()
}

func (a addrPortValue) Set(v string) (err error) {
	if *a.p, err = netip.ParseAddrPort(v); err != nil {
		return errors.New("want ip:port")
	}
	return nil
}

// flagKey is the configuration key a setting flag sets, which
// BindSettings writes at the end of its usage, or "".
func flagKey(f *flag.Flag) string {
	i := strings.LastIndex(f.Usage, "; ")
	if i < 0 || !slices.Contains(configs.Keys(), f.Usage[i+2:]) {
		return ""
	}
	return f.Usage[i+2:]
}

// Nearest returns the candidate closest to word by edit distance, if it is
// close enough to be what was meant (at most a third of its letters, and
// at least one, differ), else "".
func Nearest(word string, candidates []string) string {
	best, bestDist := "", max(1, len(word)/3)+1
	for _, c := range candidates {
		if d := editDistance(word, c); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the Damerau–Levenshtein distance (optimal string
// alignment): insertions, deletions, substitutions and transpositions of
// neighbours ("clinets" is one from "clients").
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

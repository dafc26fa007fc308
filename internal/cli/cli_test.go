package cli

import (
	"flag"
	"io"
	"net/netip"
	"testing"
	"time"
)

// TestExplain: the flag package's errors, reworded for a person.
func TestExplain(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Duration("rtt", time.Second, "")
	fs.Int("count", 3, "")
	fs.Bool("quiet", false, "")
	var ap netip.AddrPort
	AddrPortVar(fs, &ap, "listen", "127.0.0.1:9", "")
	format := FormatFlag(fs, "", "markdown")
	cases := map[string][]string{
		"unknown flag --cuont (did you mean --count?)":                {"--cuont", "1"},
		"--rtt 100: a duration needs a unit, such as 100ms or 100s":   {"--rtt", "100"},
		`--rtt "soon": want a duration such as 100ms, 5s or 1m`:       {"--rtt", "soon"},
		`--count "1.5": want a whole number, such as 3`:               {"--count", "1.5"},
		`--quiet="maybe": want true or false (--quiet alone is true)`: {"--quiet=maybe"},
		"--count needs a value":                                       {"--count"},
		`--listen "x": want ip:port`:                                  {"--listen", "x"},
		`--format "xml": want text, json or markdown`:                 {"--format", "xml"},
	}
	for want, args := range cases {
		err := fs.Parse(args)
		if err == nil || Explain(fs, err) != want {
			t.Errorf("%v: %v; want %q", args, err, want)
		}
	}
	if err := fs.Parse([]string{"--format", "markdown", "--listen", "[::1]:80"}); err != nil || *format != "markdown" || ap.Port() != 80 {
		t.Errorf("%v: format %q, listen %v", err, *format, ap)
	}
	if got := Explain(fs, io.ErrUnexpectedEOF); got != io.ErrUnexpectedEOF.Error() {
		t.Errorf("an error it does not know: %q", got)
	}
}

// TestEditDistance: insertions, deletions, substitutions and neighbours
// swapped each count one; Nearest takes only a close enough word.
func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "ab", 2}, {"clinets", "clients", 1}, {"controler", "controller", 1},
		{"kitten", "sitting", 3}, {"rate", "rate", 0}, {"ab", "ba", 1},
	} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
	if got := Nearest("zzzz", []string{"sim", "rate"}); got != "" {
		t.Errorf("nearest of an unrelated word = %q, want none", got)
	}
}

package configs

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// TestKeysDocumented: every key of the schema is set in the shipped
// fairgrid.toml, under a comment that explains it, and Keys lists every
// key the file sets.
func TestKeysDocumented(t *testing.T) {
	var v map[string]any
	md, err := toml.NewDecoder(bytes.NewReader(Example)).Decode(&v)
	if err != nil {
		t.Fatal(err)
	}
	keys := Keys()
	if len(keys) != len(md.Keys())-len(v) { // md.Keys has the tables too
		t.Errorf("Keys lists %d keys; fairgrid.toml sets %d", len(keys), len(md.Keys())-len(v))
	}
	lines := strings.Split(string(Example), "\n")
	for _, key := range keys {
		table, name, _ := strings.Cut(key, ".")
		if !md.IsDefined(table, name) {
			t.Errorf("%s is not in fairgrid.toml", key)
			continue
		}
		// A comment may explain a few keys set together under it.
		for i, line := range lines {
			if !strings.HasPrefix(line, name+" = ") {
				continue
			}
			j := i - 1
			for j >= 0 && strings.Contains(lines[j], " = ") && !strings.HasPrefix(lines[j], "#") {
				j--
			}
			if j < 0 || !strings.HasPrefix(lines[j], "#") {
				t.Errorf("%s has no comment above it in fairgrid.toml", key)
			}
		}
	}
}

// TestRatesRefused: a rate that is not a number of bits per second, or is
// beyond what the daemon's consumers can hold, is refused naming the key,
// in bit/s (issue 11, item 5: one checker, ratecalc.CheckBits).
func TestRatesRefused(t *testing.T) {
	for _, tc := range []struct{ toml, want string }{
		{"[control]\nmin_bps = nan\n", "control.min_bps: NaN is not a rate"},
		{"[control]\nmax_bps = inf\n", "control.max_bps: +Inf bit/s is above the"},
		{"[control]\nfloor_bps = -1\n", "control.floor_bps: -1 bit/s is negative"},
		{"[control]\nmax_bps = 1e12\n", "control.max_bps: 1000000000000 bit/s is above the 68719476736 bit/s maximum"},
		{"[control]\nmin_bps = 4000\n", "control.min_bps: 4000: must be at least 8000"},
		{"[control]\nfloor_bps = 6000000\n", "control.floor_bps: 6e+06: must lie between 0 and max_bps"},
	} {
		_, err := Parse([]byte(tc.toml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v; want %q", tc.toml, err, tc.want)
		}
	}
}

// TestChanged: Changed names exactly the keys that differ, and Field
// reaches each key.
func TestChanged(t *testing.T) {
	a, b := Default(), Default()
	if got := Changed(a, b); len(got) != 0 {
		t.Errorf("identical files: %v", got)
	}
	b.Log.Level = LogLevel(slog.LevelDebug)
	b.Control.SplitWeights = []float64{1, 1, 1, 1, 1, 1, 1}
	got := Changed(a, b)
	if strings.Join(got, " ") != "control.split_weights log.level" {
		t.Errorf("changed %v", got)
	}
	for _, key := range Keys() {
		if !a.Field(key).IsValid() {
			t.Errorf("no field for %s", key)
		}
	}
	if a.Field("log.nonesuch").IsValid() {
		t.Error("a field for an unknown key")
	}
}

// TestDefaultsRoundTrip: every default writes as the text a flag shows
// and reads back to itself.
func TestDefaultsRoundTrip(t *testing.T) { checkRoundTrip(t, Default()) }

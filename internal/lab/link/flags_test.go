package link

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

// parseFlags binds a relay's pipe flags and parses args.
func parseFlags(args ...string) (Config, error) {
	var cfg Config
	fs := flag.NewFlagSet("link", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.BindFlags(fs)
	return cfg, fs.Parse(args)
}

// TestBindFlags: each flag sets both directions, or each its own written
// down=…,up=…; a direction left out keeps the flag's default, not zero
// (down=50 leaves the up buffer at 1000 datagrams, not at a refused 0).
func TestBindFlags(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		down, up PipeConfig
	}{
		{nil, PipeConfig{Buffer: 1000, BurstLen: 1}, PipeConfig{Buffer: 1000, BurstLen: 1}},
		{[]string{"--rate", "down=2M,up=500k", "--delay", "25ms", "--loss", "down=3%,up=0.01", "--buffer", "50"},
			PipeConfig{Rate: 250_000, Delay: 25 * time.Millisecond, Loss: 0.03, Buffer: 50, BurstLen: 1},
			PipeConfig{Rate: 62_500, Delay: 25 * time.Millisecond, Loss: 0.01, Buffer: 50, BurstLen: 1}},
		{[]string{"--rate", "down=2M", "--buffer", "down=50", "--burst", "down=4"},
			PipeConfig{Rate: 250_000, Buffer: 50, BurstLen: 4}, PipeConfig{Buffer: 1000, BurstLen: 1}},
		// 100 % loss is accepted and drops everything.
		{[]string{"--loss", "100%", "--burst", "4"}, PipeConfig{Loss: 1, Buffer: 1000, BurstLen: 4}, PipeConfig{Loss: 1, Buffer: 1000, BurstLen: 4}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cfg, err := parseFlags(tc.args...)
			if err != nil || cfg.Down != tc.down || cfg.Up != tc.up {
				t.Errorf("down %+v, up %+v, %v; want %+v and %+v", cfg.Down, cfg.Up, err, tc.down, tc.up)
			}
		})
	}
	// Zero loss is zero however it is written.
	for _, loss := range []string{"0", "0%", "0.0", "down=0%,up=0.0"} {
		if cfg, err := parseFlags("--loss", "3%", "--loss", loss); err != nil || cfg.Down.Loss != 0 || cfg.Up.Loss != 0 {
			t.Errorf("--loss %q: %+v, %v; want no loss", loss, cfg, err)
		}
	}
}

// TestBindFlagsRefuses: a bad value is refused as the flag is parsed, with
// the pipe's own reason.
func TestBindFlagsRefuses(t *testing.T) {
	for _, tc := range []struct{ flag, value, want string }{
		{"rate", "fast", `"fast" is not a rate`},
		{"rate", "up=100G", "100G bit/s is above the 68.7G bit/s maximum"},
		{"rate", "1000", "1000 bit/s is below 8 kbit/s (one 1,000-byte datagram a second); rates are bits/s: did you mean 1000k?"},
		{"rate", "4k", "4000 bit/s is below 8 kbit/s (one 1,000-byte datagram a second)"},
		{"delay", "soon", "want a duration such as 50ms or 1s"},
		{"delay", "50", "a duration needs a unit, such as 50ms or 50s"},
		{"delay", "2m", "delay 2m0s outside [0, 1m]"},
		{"loss", "left=1", `"left=1": want down=VALUE,up=VALUE`},
		{"loss", "down=1%,down=2%", `"down" given twice`},
		{"loss", "3", "for 3 %, write 3%"},
		{"buffer", "0", "want at least 1 datagram"},
		{"buffer", "up=-5", "want at least 1 datagram"},
		{"burst", "NaN", "burst length NaN"},
		{"burst", "often", "want a mean burst length in datagrams"},
		{"burst", "0.5", "burst length 0.5"},
		{"burst", "down=-1", "burst length -1"},
	} {
		t.Run(tc.flag+" "+tc.value, func(t *testing.T) {
			if _, err := parseFlags("--"+tc.flag, tc.value); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("--%s %s: %v; want an error with %q", tc.flag, tc.value, err, tc.want)
			}
		})
	}
}

// TestParsePipe: the demo's RATE,DELAY,LOSS,BUFFER reads as the flags do;
// a rate of 0 is an unlimited link, and each error names its part.
func TestParsePipe(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want PipeConfig
	}{
		{"2M,50ms,3%,100", PipeConfig{Rate: 250_000, Delay: 50 * time.Millisecond, Loss: 0.03, Buffer: 100}},
		{"2M,50ms,0%,100", PipeConfig{Rate: 250_000, Delay: 50 * time.Millisecond, Buffer: 100}},
		{"0,0,100%,1", PipeConfig{Loss: 1, Buffer: 1}},
	} {
		if got, err := ParsePipe(tc.spec); err != nil || got != tc.want {
			t.Errorf("ParsePipe(%q) = %+v, %v; want %+v", tc.spec, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ spec, want string }{
		{"2M,50ms,3%", `"2M,50ms,3%": want RATE,DELAY,LOSS,BUFFER`},
		{"NaN,50ms,3%,100", `rate: "NaN" is not a rate`},
		{"7,50ms,3%,100", "rate: 7 bit/s is below the 8 bit/s minimum"},
		{"2M,50,3%,100", `delay "50": a duration needs a unit`},
		{"2M,50ms,-3%,100", "loss: -3% is outside 0 to 1"},
		{"2M,50ms,3%,0", `buffer "0": want at least 1 datagram`},
	} {
		if _, err := ParsePipe(tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParsePipe(%q): %v; want an error with %q", tc.spec, err, tc.want)
		}
	}
}

// TestWriteStats: a line a direction, or one JSON object.
func TestWriteStats(t *testing.T) {
	down := PipeStats{Forwarded: 10, DroppedRandom: 2, DroppedQueue: 1}
	var b bytes.Buffer
	if err := WriteStats(&b, false, down, PipeStats{}); err != nil {
		t.Fatal(err)
	}
	if want := "down (sim → viewer)  forwarded 10, dropped 2 random + 1 queue, mean queueing delay 0.00 ms\nup (viewer → sim)    forwarded 0,"; !strings.HasPrefix(b.String(), want) {
		t.Errorf("text %q; want it to start %q", b.String(), want)
	}
	b.Reset()
	WriteStats(&b, true, down, PipeStats{Forwarded: 3})
	var got map[string]map[string]float64
	if err := json.Unmarshal(b.Bytes(), &got); err != nil || got["down"]["dropped_random"] != 2 || got["up"]["forwarded"] != 3 {
		t.Errorf("json %s (%v)", b.String(), err)
	}
}

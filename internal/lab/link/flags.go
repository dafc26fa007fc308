package link

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/fairgrid/fairgrid/ratecalc"
)

// The values of a pipe as people write them (fairgrid link's flags and
// the demo's --link): each parser checks its value against the pipe's own
// rules, so that a bad one is refused where it was typed.

// ParseRate reads a bottleneck rate in bits/s ("2M", "500k") as bytes/s:
// 0 is unlimited, anything else at least 8 kbit/s, in whole bytes per
// second as the pipe counts them. Below that a link carries less than one
// 1,000-byte datagram a second, which no one means: "1000" was almost
// surely meant as 1000k.
func ParseRate(v string) (int64, error) {
	r, err := ratecalc.ParseBitRate(v)
	if err != nil {
		return 0, err
	}
	if bps := r.BitsPerSecond(); bps > 0 && bps < 8000 {
		return 0, ratecalc.BelowFloor(v, bps, "8 kbit/s (one 1,000-byte datagram a second)")
	}
	return int64(math.Round(float64(r))), nil
}

// ParseDelay reads a one-way delay: a duration with its unit, or 0, up
// to a minute.
func ParseDelay(v string) (time.Duration, error) {
	if v == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		if _, nerr := strconv.ParseFloat(v, 64); nerr == nil {
			return 0, fmt.Errorf("a duration needs a unit, such as %sms or %ss", v, v)
		}
		return 0, errors.New("want a duration such as 50ms or 1s")
	}
	return d, PipeConfig{Delay: d}.Validate()
}

// ParseBuffer reads a FIFO length in datagrams. A pipe takes 0 for its
// default, so a user's 0 would silently become 1,000 datagrams: refused
// instead.
func ParseBuffer(v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 {
		return 0, errors.New("want at least 1 datagram")
	}
	return n, nil
}

// ParseBurst reads the mean length of loss bursts in datagrams, 1 to 1e6.
func ParseBurst(v string) (float64, error) {
	b, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, errors.New("want a mean burst length in datagrams, 1 or more")
	}
	return b, PipeConfig{BurstLen: b}.Validate()
}

// ParsePipe reads RATE,DELAY,LOSS,BUFFER ("2M,50ms,3%,100"), the demo's
// link, with the parsers of fairgrid link's flags. Its errors name the
// part that is wrong.
func ParsePipe(spec string) (PipeConfig, error) {
	var p PipeConfig
	f := strings.Split(spec, ",")
	if len(f) != 4 {
		return p, fmt.Errorf("%q: want RATE,DELAY,LOSS,BUFFER such as 2M,50ms,3%%,100", spec)
	}
	var err error
	if p.Rate, err = ParseRate(f[0]); err != nil {
		return p, fmt.Errorf("rate: %w", err)
	}
	if p.Delay, err = ParseDelay(f[1]); err != nil {
		return p, fmt.Errorf("delay %q: %w", f[1], err)
	}
	if p.Loss, err = ratecalc.ParseLoss(f[2]); err != nil {
		return p, fmt.Errorf("loss: %w", err)
	}
	if p.Buffer, err = ParseBuffer(f[3]); err != nil {
		return p, fmt.Errorf("buffer %q: %w", f[3], err)
	}
	return p, nil
}

// BindFlags declares --rate, --delay, --loss, --buffer and --burst on fs,
// each setting both directions of c, or each its own when written
// down=VALUE,up=VALUE (down is simulator to viewer); a direction left out
// keeps its default. It first sets both directions to the defaults: no
// rate limit, delay or loss, a buffer of DefaultBuffer datagrams and
// independent losses.
func (c *Config) BindFlags(fs *flag.FlagSet) {
	c.Down = PipeConfig{Buffer: DefaultBuffer, BurstLen: 1}
	c.Up = c.Down
	bind := func(name, usage string, set func(p *PipeConfig, v string) error, get func(p *PipeConfig) string) {
		fs.Var(&pipeFlag{&c.Down, &c.Up, set, get}, name, usage)
	}
	bind("rate", "bottleneck `rate` in bits/s, 8k or more (0: unlimited)",
		func(p *PipeConfig, v string) (err error) { p.Rate, err = ParseRate(v); return err },
		func(p *PipeConfig) string { return strconv.FormatFloat(float64(p.Rate)*8, 'f', -1, 64) })
	bind("delay", "one-way `delay`",
		func(p *PipeConfig, v string) (err error) { p.Delay, err = ParseDelay(v); return err },
		func(p *PipeConfig) string { return p.Delay.String() })
	bind("loss", "random `loss`: a fraction or a percentage, 0 to 1 (100% drops all)",
		func(p *PipeConfig, v string) (err error) { p.Loss, err = ratecalc.ParseLoss(v); return err },
		func(p *PipeConfig) string { return strconv.FormatFloat(p.Loss, 'g', -1, 64) })
	bind("buffer", "FIFO `length` in datagrams, 1 or more (only a limited --rate queues)",
		func(p *PipeConfig, v string) (err error) { p.Buffer, err = ParseBuffer(v); return err },
		func(p *PipeConfig) string { return strconv.Itoa(p.Buffer) })
	bind("burst", "mean `length` of loss bursts in datagrams, 1 to 1e6 (1: independent losses)",
		func(p *PipeConfig, v string) (err error) { p.BurstLen, err = ParseBurst(v); return err },
		func(p *PipeConfig) string { return strconv.FormatFloat(p.BurstLen, 'g', -1, 64) })
}

// pipeFlag is a flag.Value setting one field of both directions.
type pipeFlag struct {
	down, up *PipeConfig
	set      func(p *PipeConfig, v string) error
	get      func(p *PipeConfig) string
}

func (f *pipeFlag) String() string {
	if f == nil || f.down == nil {
		return ""
	}
	down, up := f.get(f.down), f.get(f.up)
	if down == up {
		return down
	}
	return "down=" + down + ",up=" + up
}

// Set reads "VALUE" or "down=VALUE,up=VALUE".
func (f *pipeFlag) Set(v string) error {
	if !strings.Contains(v, "=") {
		if err := f.set(f.down, v); err != nil {
			return err
		}
		return f.set(f.up, v)
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(v, ",") {
		k, val, _ := strings.Cut(strings.TrimSpace(part), "=")
		if seen[k] {
			return fmt.Errorf("%q given twice", k)
		}
		seen[k] = true
		var err error
		switch k {
		case "down":
			err = f.set(f.down, val)
		case "up":
			err = f.set(f.up, val)
		default:
			err = fmt.Errorf("%q: want down=VALUE,up=VALUE", part)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle/group"
)

const linkSynopsis = `--listen ADDR --upstream ADDR [--rate R] [--delay D] [--loss P] [--buffer N] [--burst L] [--seed S] [--duration D] [--format text|json]

Relays UDP between viewers and a simulator like a network link would:
per direction a rate limit, a FIFO buffer in datagrams, a one-way delay and
random or bursty loss, repeatable with a seed. Point viewers at --listen.
Each of --rate, --delay, --loss, --buffer and --burst takes one value for
both directions, or down=VALUE,up=VALUE (down is simulator to viewer).
Rates are bits/s with an optional k, M or G (2M, 500k); loss is a fraction
or a percentage (0.03, 3%). It runs until interrupted or for --duration and
then prints what it forwarded and dropped.`

func runLink(args []string, s stdio) int {
	fs := newFlagSet("link", linkSynopsis, s)
	listen := fs.String("listen", "127.0.0.1:9100", "address viewers send to")
	upstream := fs.String("upstream", "127.0.0.1:9000", "the simulator's address")
	rate := fs.String("rate", "0", "bottleneck rate in bits/s, 8k or more (0: unlimited)")
	delay := fs.String("delay", "0", "one-way delay")
	loss := fs.String("loss", "0", "random loss: a fraction or a percentage, 0 to 1 (100% drops all)")
	buffer := fs.String("buffer", "1000", "FIFO length in datagrams, 1 or more (only a limited --rate queues)")
	burst := fs.String("burst", "1", "mean length of loss bursts in datagrams, 1 to 1e6 (1: independent losses)")
	seed := fs.Uint64("seed", 1, "seed of the loss processes")
	duration := fs.Duration("duration", 0, "stop after this long (0: until interrupted)")
	format := formatFlag(fs, "output format: `text` or json")
	if code, ok := parseFlags(fs, linkSynopsis, args, s); !ok {
		return code
	}
	cfg, err := linkConfig(*listen, *upstream, *rate, *delay, *loss, *buffer, *burst, *seed)
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid link: %v\n", err)
		return exitUsage
	}
	r, err := link.New(cfg, nil)
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid link: %v\n", err)
		return exitFail
	}
	ctx, stop := runContext(*duration, plainNotice(s.err, "fairgrid link"))
	defer stop()
	fmt.Fprintf(s.err, "fairgrid link: relaying %v → %v\n  down (sim → viewer): %v\n  up (viewer → sim):   %v\n", r.Addr(), cfg.Upstream, cfg.Down, cfg.Up)
	if err := linkGroup(r).Run(ctx); err != nil {
		fmt.Fprintf(s.err, "fairgrid link: %v\n", err)
		return exitFail
	}
	down, up := r.Stats()
	out := &resultWriter{w: s.out}
	printLinkStats(out, *format, down, up)
	return out.finish(s, "link", exitOK)
}

// linkGroup is link's group: the relay.
func linkGroup(r runner) *group.Group {
	var g group.Group
	g.Add(r.Run, nil)
	return &g
}

// linkConfig turns the flags into a relay configuration. Each value is
// checked here, against the emulator's own rules, so that a bad one is a
// command-line error naming its flag.
func linkConfig(listen, upstream, rate, delay, loss, buffer, burst string, seed uint64) (link.Config, error) {
	var cfg link.Config
	var err error
	if cfg.Listen, err = netip.ParseAddrPort(listen); err != nil {
		return cfg, fmt.Errorf("--listen %q: want ip:port", listen)
	}
	if cfg.Upstream, err = netip.ParseAddrPort(upstream); err != nil {
		return cfg, fmt.Errorf("--upstream %q: want ip:port", upstream)
	}
	cfg.Seed = seed
	for _, f := range []struct {
		name, value string
		unset       string // a direction left out of down=…,up=…
		set         func(p *link.PipeConfig, v string) error
	}{
		{"--rate", rate, "0", func(p *link.PipeConfig, v string) error {
			r, err := linkRate(v)
			p.Rate = r
			return err
		}},
		{"--delay", delay, "0", func(p *link.PipeConfig, v string) (err error) {
			if p.Delay, err = parseDelay(v); err != nil {
				return err
			}
			return link.PipeConfig{Delay: p.Delay}.Validate()
		}},
		{"--loss", loss, "0", func(p *link.PipeConfig, v string) (err error) {
			p.Loss, err = parseLoss(v)
			return err
		}},
		{"--buffer", buffer, "1000", func(p *link.PipeConfig, v string) (err error) {
			p.Buffer, err = linkBuffer(v)
			return err
		}},
		{"--burst", burst, "1", func(p *link.PipeConfig, v string) (err error) {
			if p.BurstLen, err = strconv.ParseFloat(v, 64); err != nil {
				return errors.New("want a mean burst length in datagrams, 1 or more")
			}
			return link.PipeConfig{BurstLen: p.BurstLen}.Validate()
		}},
	} {
		down, up, err := perDirection(f.value, f.unset)
		if err == nil {
			err = f.set(&cfg.Down, down)
		}
		if err == nil {
			err = f.set(&cfg.Up, up)
		}
		if err != nil {
			return cfg, fmt.Errorf("%s %q: %w", f.name, f.value, err)
		}
	}
	return cfg, nil
}

// linkRate reads a bottleneck rate: 0 is unlimited, anything else at
// least 8 kbit/s, in whole bytes per second as the emulator counts them.
// Below that a link carries less than one 1,000-byte datagram a second,
// which no one means: "1000" was almost surely meant as 1000k.
func linkRate(v string) (int64, error) {
	r, err := ratecalc.ParseBitRate(v)
	if err != nil {
		return 0, err
	}
	if bps := r.BitsPerSecond(); bps > 0 && bps < 8000 {
		return 0, tooSlow(v, bps, "8 kbit/s (one 1,000-byte datagram a second)")
	}
	return int64(math.Round(float64(r))), nil
}

// linkBuffer reads a FIFO length. The emulator takes 0 for its default, so
// a user's 0 would silently become 1,000 datagrams: refused instead.
func linkBuffer(v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 {
		return 0, errors.New("want at least 1 datagram")
	}
	return n, nil
}

// perDirection splits "VALUE" or "down=VALUE,up=VALUE"; a direction left
// out takes unset, the flag's default.
func perDirection(v, unset string) (down, up string, err error) {
	if !strings.Contains(v, "=") {
		return v, v, nil
	}
	down, up = unset, unset
	seen := map[string]bool{}
	for _, part := range strings.Split(v, ",") {
		k, val, _ := strings.Cut(strings.TrimSpace(part), "=")
		if seen[k] {
			return "", "", fmt.Errorf("%q given twice", k)
		}
		seen[k] = true
		switch k {
		case "down":
			down = val
		case "up":
			up = val
		default:
			return "", "", fmt.Errorf("%q: want down=VALUE,up=VALUE", part)
		}
	}
	return down, up, nil
}

func parseDelay(v string) (time.Duration, error) {
	if v == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		if _, nerr := strconv.ParseFloat(v, 64); nerr == nil {
			return 0, fmt.Errorf("a duration needs a unit, such as %sms or %ss", v, v)
		}
		return 0, fmt.Errorf("want a duration such as 50ms or 1s")
	}
	return d, nil
}

// parseLoss is ratecalc.ParseLoss, with a hint when a number above 1 was
// surely meant as a percentage.
func parseLoss(v string) (float64, error) {
	p, err := ratecalc.ParseLoss(v)
	if err != nil {
		return 0, lossHint(v, err)
	}
	return p, nil
}

// lossHint adds to a loss value's error the percentage a number above 1
// surely meant.
func lossHint(v string, err error) error {
	if x, nerr := strconv.ParseFloat(v, 64); nerr == nil && x > 1 && x <= 100 {
		return fmt.Errorf("%w; for %s %%, write %s%%", err, v, v)
	}
	return err
}

func printLinkStats(w io.Writer, format string, down, up link.PipeStats) {
	type dir struct {
		Forwarded       uint64  `json:"forwarded"`
		DroppedRandom   uint64  `json:"dropped_random"`
		DroppedQueue    uint64  `json:"dropped_queue"`
		QueueDelayMsAvg float64 `json:"queue_delay_ms_mean"`
	}
	conv := func(p link.PipeStats) dir {
		return dir{p.Forwarded, p.DroppedRandom, p.DroppedQueue, float64(p.QueueDelayMean()) / float64(time.Millisecond)}
	}
	out := struct {
		Down dir `json:"down"`
		Up   dir `json:"up"`
	}{conv(down), conv(up)}
	if format == "json" {
		json.NewEncoder(w).Encode(out)
		return
	}
	for _, d := range []struct {
		name string
		dir
	}{{"down (sim → viewer)", out.Down}, {"up (viewer → sim)", out.Up}} {
		fmt.Fprintf(w, "%-20s forwarded %d, dropped %d random + %d queue, mean queueing delay %.2f ms\n",
			d.name, d.Forwarded, d.DroppedRandom, d.DroppedQueue, d.QueueDelayMsAvg)
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/fairgrid/fairgrid/opensim/link"
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
	rate := fs.String("rate", "0", "bottleneck rate in bits/s (0: unlimited)")
	delay := fs.String("delay", "0", "one-way delay")
	loss := fs.String("loss", "0", "random loss: a fraction or a percentage")
	buffer := fs.String("buffer", "1000", "FIFO length in datagrams")
	burst := fs.String("burst", "1", "mean length of loss bursts (1: independent losses)")
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
	ctx, stop := runContext(*duration)
	defer stop()
	fmt.Fprintf(s.err, "fairgrid link: relaying %v → %v\n", r.Addr(), cfg.Upstream)
	r.Run(ctx)
	down, up := r.Stats()
	printLinkStats(s, *format, down, up)
	return exitOK
}

// linkConfig turns the flags into a relay configuration.
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
		set         func(p *link.PipeConfig, v string) error
	}{
		{"--rate", rate, func(p *link.PipeConfig, v string) error {
			bps, err := parseBitRate(v)
			p.Rate = int64(bps / 8)
			return err
		}},
		{"--delay", delay, func(p *link.PipeConfig, v string) (err error) { p.Delay, err = parseDelay(v); return err }},
		{"--loss", loss, func(p *link.PipeConfig, v string) error {
			if v == "0" {
				return nil
			}
			x, err := parseLoss(v)
			p.Loss = x
			return err
		}},
		{"--buffer", buffer, func(p *link.PipeConfig, v string) (err error) { p.Buffer, err = strconv.Atoi(v); return err }},
		{"--burst", burst, func(p *link.PipeConfig, v string) (err error) {
			p.BurstLen, err = strconv.ParseFloat(v, 64)
			return err
		}},
	} {
		down, up, err := perDirection(f.value)
		if err == nil {
			err = f.set(&cfg.Down, down)
		}
		if err == nil {
			err = f.set(&cfg.Up, up)
		}
		if err != nil {
			return cfg, fmt.Errorf("%s %q: %v", f.name, f.value, err)
		}
	}
	return cfg, nil
}

// perDirection splits "VALUE" or "down=VALUE,up=VALUE".
func perDirection(v string) (down, up string, err error) {
	if !strings.Contains(v, "=") {
		return v, v, nil
	}
	down, up = "0", "0"
	for _, part := range strings.Split(v, ",") {
		k, val, _ := strings.Cut(strings.TrimSpace(part), "=")
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

// parseBitRate reads bits/s with an optional k, M or G suffix (and an
// optional "bit" or "bit/s" after it).
func parseBitRate(v string) (float64, error) {
	s := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(v), "/s"), "bit")
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "K"):
		mult, s = 1e3, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mult, s = 1e6, s[:len(s)-1]
	case strings.HasSuffix(s, "G"):
		mult, s = 1e9, s[:len(s)-1]
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || x < 0 {
		return 0, fmt.Errorf("not a rate: want bits/s such as 2M or 500k")
	}
	return x * mult, nil
}

func parseDelay(v string) (time.Duration, error) {
	if v == "0" {
		return 0, nil
	}
	return time.ParseDuration(v)
}

func printLinkStats(s stdio, format string, down, up link.PipeStats) {
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
		b, _ := json.Marshal(out)
		fmt.Fprintln(s.out, string(b))
		return
	}
	for _, d := range []struct {
		name string
		dir
	}{{"down (sim → viewer)", out.Down}, {"up (viewer → sim)", out.Up}} {
		fmt.Fprintf(s.out, "%-20s forwarded %d, dropped %d random + %d queue, mean queueing delay %.2f ms\n",
			d.name, d.Forwarded, d.DroppedRandom, d.DroppedQueue, d.QueueDelayMsAvg)
	}
}

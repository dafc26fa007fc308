package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/demo"
)

const runSynopsis = `[--config FILE] [--check-config] [--interface IFACE] [--controller C] [--interval D] [--dry-run] [--metrics ADDR] [--log-level L]
       fairgrid run --demo [--duration D] [--link RATE,DELAY,LOSS,BUFFER] [--controller window|tfrc|viewer] [--format text|json]

The sidecar daemon: it captures the viewer's circuits on an interface,
measures loss and RTT, and every interval asks each simulator for a
TCP-fair rate with an AgentThrottle sent from the viewer's own address
(raw sockets: CAP_NET_RAW). configs/fairgrid.toml documents the
configuration; flags override it; SIGHUP reloads it. --dry-run measures,
decides, logs and exports, and sends nothing.

With --demo it runs the embedded default: a test
region, a link emulator (default 2M,50ms,3%,100: rate in bits/s, one-way
delay, random loss, buffer in datagrams) and a stock viewer asking for
1,500 kbps and following its ±10 % rule, all in this process; fairgrid
reads the viewer's traffic from the emulator and sends its AgentThrottle
through it, so no root is needed. It prints a row per interval — received
rate, TCP-fair rate, loss event rate, RTT, what the viewer asked for, what
fairgrid asked for, what the region applied — and a verdict.`

func runRun(args []string, s stdio) int {
	fs := newFlagSet("run", runSynopsis, s)
	demoMode := fs.Bool("demo", false, "run the embedded default: region, link emulator and viewer in one process")
	duration := fs.Duration("duration", 60*time.Second, "how long the demo runs")
	linkSpec := fs.String("link", "2M,50ms,3%,100", "the emulated link: RATE,DELAY,LOSS,BUFFER")
	controller := fs.String("controller", "window", "window (window tracking), tfrc, or viewer (the stock rule)")
	interval := fs.Duration("interval", 5*time.Second, "decision interval")
	format := formatFlag(fs, "output format: `text` or json (one object per interval, then a summary)")
	configPath := fs.String("config", "", "configuration file (default: the built-in defaults, as in configs/fairgrid.toml)")
	check := fs.Bool("check-config", false, "validate the configuration and exit")
	fs.String("interface", "lo", "interface to capture on")
	fs.Bool("dry-run", false, "measure, decide, log and export; send nothing")
	fs.String("metrics", "127.0.0.1:9101", "Prometheus metrics address (empty: none)")
	fs.String("log-level", "info", "debug, info, warn or error")
	if c, ok := parseFlagsArgs(fs, runSynopsis, args, s); !ok {
		return c
	}
	if fs.NArg() > 0 {
		// `run --check-config FILE`, as `nginx -t` and `promtool check config`
		// users type it: the file is the one to check.
		if !*check || fs.NArg() > 1 || *configPath != "" {
			fmt.Fprintf(s.err, "fairgrid run: unexpected argument %q (a configuration file is given with --config FILE, or as the one argument of --check-config)\n", fs.Arg(fs.NArg()-1))
			return exitUsage
		}
		*configPath = fs.Arg(0)
	}
	if !*demoMode {
		return runDaemon(fs, *configPath, *check, s)
	}
	cfg, err := demoConfig(*linkSpec)
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid run: %v\n", err)
		return exitUsage
	}
	cfg.Duration = *duration
	cfg.Loop = throttle.Config{Controller: *controller, Interval: *interval}
	ctx, stop := runContext(0)
	defer stop()
	enc := json.NewEncoder(s.out)
	if *format == "text" {
		fmt.Fprintf(s.out, "fairgrid demo: link %s, controller %s, %v; a stock viewer asks for 1,536 kbit/s\n\n", *linkSpec, *controller, *duration)
		fmt.Fprintf(s.out, "%6s %12s %12s %8s %8s %12s %12s %12s\n", "t (s)", "received", "TCP-fair", "p", "RTT ms", "viewer asks", "fairgrid", "applied")
	}
	kb := func(v float64) string { return fmt.Sprintf("%.0f kbit/s", v/1000) }
	opt := func(v *float64, f func(float64) string) string {
		if v == nil {
			return "-"
		}
		return f(*v)
	}
	sum, err := demo.Run(ctx, cfg, slog.New(slog.DiscardHandler), func(r demo.Row) {
		if *format == "json" {
			enc.Encode(r)
			return
		}
		fmt.Fprintf(s.out, "%6.0f %12s %12s %8.4f %8s %12s %12s %12s\n", r.T, kb(r.RateBPS), opt(r.FairBPS, kb), r.LossEventRate,
			opt(r.RTTms, func(v float64) string { return fmt.Sprintf("%.0f", v) }), kb(r.ViewerRequestBPS), opt(r.FairgridRequestBPS, kb), kb(r.AppliedBPS))
	})
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid run: %v\n", err)
		return exitFail
	}
	if *format == "json" {
		enc.Encode(sum)
		return exitOK
	}
	fmt.Fprintf(s.out, "\nOver the last half of the run the viewer received %.0f kbit/s, %.2f× the TCP-fair %.0f kbit/s (%s model).\n",
		sum.MeanRateBPS/1000, sum.RatioToFair, sum.MeanFairBPS/1000, sum.FairModel)
	fmt.Fprintf(s.out, "The stock viewer asked for %.2f× the fair rate; fairgrid overrode it %d times, each within %.0f ms.\n",
		sum.ViewerRatioToFair, sum.Reasserts, sum.MaxOverrideMs)
	return exitOK
}

// demoConfig reads RATE,DELAY,LOSS,BUFFER.
func demoConfig(spec string) (demo.Config, error) {
	var cfg demo.Config
	f := strings.Split(spec, ",")
	if len(f) != 4 {
		return cfg, fmt.Errorf("--link %q: want RATE,DELAY,LOSS,BUFFER such as 2M,50ms,3%%,100", spec)
	}
	rate, err := parseBitRate(f[0])
	if err != nil || rate <= 0 {
		return cfg, fmt.Errorf("--link rate %q: want bits/s such as 2M", f[0])
	}
	delay, err := time.ParseDuration(f[1])
	if err != nil || delay < 0 {
		return cfg, fmt.Errorf("--link delay %q: want a duration such as 50ms", f[1])
	}
	loss, err := parseLoss(f[2])
	if err != nil && f[2] != "0" {
		return cfg, fmt.Errorf("--link loss %q: %v", f[2], err)
	}
	buffer, err := strconv.Atoi(f[3])
	if err != nil || buffer < 1 {
		return cfg, fmt.Errorf("--link buffer %q: want datagrams such as 100", f[3])
	}
	cfg.Rate, cfg.Delay, cfg.Loss, cfg.Buffer = rate, delay, loss, buffer
	return cfg, nil
}

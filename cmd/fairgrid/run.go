package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/demo"
	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/throttle"
)

const runSynopsis = `[--config FILE] [--check-config [FILE]] [--interface IFACE] [--controller C] [--segment S] [--interval D] [--dry-run] [--metrics ADDR] [--log-level L] [--log-format F]
       fairgrid run --demo [--duration D] [--link RATE,DELAY,LOSS,BUFFER] [--gateway=false] [--controller vtcp|window|tfrc|viewer] [--segment mean|nominal] [--interval D] [--format text|json]

The sidecar daemon: it captures the viewer's circuits on an interface,
measures loss and RTT, and every interval asks each simulator for a
TCP-fair rate with an AgentThrottle sent from the viewer's own address
(raw sockets: CAP_NET_RAW). configs/fairgrid.toml documents the
configuration; flags override it; SIGHUP reloads it. --dry-run measures,
decides, logs and exports, and sends nothing. --segment is the segment
size s of the TCP-fair rate: mean (the viewer's mean datagram payload, RFC
5348) or nominal (1460 bytes, TFRC-SP, RFC 4828), which asks for
1460/mean times as much (control.segment).

With --demo it runs the embedded default, on lab fairness's rig: a test
region, a link emulator (default 1M,50ms,1%,100: rate in bits/s, 64k to
1G; one-way delay, 0.5ms or more; random loss towards the viewer, a
fraction or a percentage; buffer in datagrams) and a stock viewer asking
for 1,500 kbps and following its ±10 % rule, all in this process, beside
a bulk TCP download (gVisor's userspace CUBIC) on the same link; fairgrid
reads the viewer's traffic from the emulator and sends its AgentThrottle
through it, so no root is needed. It prints a row per interval — received
rate, TCP-fair rate, loss event rate, RTT, what the viewer asked for, what
fairgrid asked for, what the region applied. A copy of the set-up runs
beside it with the stock viewer alone, and another with the stock viewer
reaching the region through fairgrid's gateway instead of the sidecar
(--gateway=false leaves it out). The verdict is the viewer's bytes/s ÷
the download's beside it, on the wire, for each (one TCP share:
0.8–1.25×); then the controller's own yardstick, labelled (the viewer's
payload ÷ its equation's TCP-fair rate), and the three side by side: the
download's throughput, the viewer's received rate and queueing delay, on
the wire. Runs shorter than 10 s
leave the download and the comparison out. --duration
must cover at least two intervals. Interrupted (Ctrl-C, SIGTERM), it prints
the verdict for the intervals that ran and exits 0.

Flags of one mode are errors in the other: --duration, --link,
--gateway and --format are the demo's; --config, --check-config, --interface,
--dry-run, --metrics, --log-level and --log-format the daemon's.`

func runRun(args []string, s stdio) int {
	fs := newFlagSet("run", runSynopsis, s)
	demoMode := fs.Bool("demo", false, "run the embedded default: region, link emulator and viewer in one process")
	duration := fs.Duration("duration", 60*time.Second, "how long the demo runs")
	linkSpec := fs.String("link", "1M,50ms,1%,100", "the emulated link: RATE,DELAY,LOSS,BUFFER (the thesis's 3 %: 2M,50ms,3%,100)")
	withGateway := fs.Bool("gateway", true, "compare with the stock viewer through fairgrid's gateway too (--gateway=false leaves that rig out)")
	format := formatFlag(fs, "output format: `text` or json (one object per interval, then a summary)")
	configPath, check := configFlags(fs)
	// The demo reads controller, segment and interval too.
	set := bindSettings(fs, append(frontEndSettings(metricsKey("run")), dryRunSetting,
		setting{"interface", "capture.interface", "interface to capture on (auto: the default route's)"})...)
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
	if name := flagOfOtherMode(fs, *demoMode); name != "" {
		if *demoMode {
			fmt.Fprintf(s.err, "fairgrid run: --%s is the daemon's; the demo does not use it\n", name)
		} else {
			fmt.Fprintf(s.err, "fairgrid run: --%s is the demo's (with --demo); the daemon does not use it\n", name)
		}
		return exitUsage
	}
	if !*demoMode {
		return runDaemon(set, *configPath, *check, s)
	}
	cfg, err := demoConfig(*linkSpec)
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid run: %v\n", err)
		return exitUsage
	}
	if *duration <= 0 {
		fmt.Fprintf(s.err, "fairgrid run: --duration %v: want a positive duration of at least two intervals\n", *duration)
		return exitUsage
	}
	cfg.Duration = *duration
	cfg.NoGateway = !*withGateway
	c := set.values.Control
	cfg.Loop = throttle.Config{Controller: c.Controller, Segment: c.Segment, Interval: c.Interval.Duration}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(s.err, "fairgrid run: --demo: %v\n", err)
		return exitUsage
	}
	return runDemo(cfg, *linkSpec, c.Controller, *format, s)
}

// Flags only one mode of run reads; the other refuses them rather than
// dropping them silently.
var (
	demoOnlyFlags   = map[string]bool{"duration": true, "link": true, "format": true, "gateway": true}
	daemonOnlyFlags = map[string]bool{"interface": true, "metrics": true, "dry-run": true, "config": true, "check-config": true, "log-level": true, "log-format": true}
)

// flagOfOtherMode names a flag the user set that the chosen mode ignores.
func flagOfOtherMode(fs *flag.FlagSet, demoMode bool) string {
	others := demoOnlyFlags
	if demoMode {
		others = daemonOnlyFlags
	}
	var name string
	fs.Visit(func(f *flag.Flag) {
		if others[f.Name] && name == "" {
			name = f.Name
		}
	})
	return name
}

// runDemo runs the demo, printing a row per interval and the verdict. An
// interrupt (Ctrl-C, SIGTERM) ends it early with the verdict for what ran,
// exit 0: it is how a user stops a demo that has shown enough. A failure to
// write the results stops it and exits 1.
func runDemo(cfg demo.Config, linkSpec string, controller throttle.ControllerName, format string, s stdio) int {
	ctx, stop := runContext(0, plainNotice(s.err, "fairgrid run"))
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := &resultWriter{w: s.out}
	enc := json.NewEncoder(out)
	if format == "text" {
		if cfg.Duration < demo.MinCompareDuration {
			fmt.Fprintf(out, "fairgrid demo: link %s, controller %s, segment %s, %v; a stock viewer asks for 1,536 kbit/s\n\n", linkSpec, controller, cfg.Loop.Segment, cfg.Duration)
		} else {
			fmt.Fprintf(out, "fairgrid demo: link %s, controller %s, segment %s, %v; a stock viewer asks for 1,536 kbit/s beside a bulk TCP download (CUBIC);\n", linkSpec, controller, cfg.Loop.Segment, cfg.Duration)
			if cfg.NoGateway {
				fmt.Fprintf(out, "the same set-up runs beside it without fairgrid, for the comparison at the end\n\n")
			} else {
				fmt.Fprintf(out, "the same set-up runs beside it without fairgrid, and with the stock viewer through fairgrid's gateway, for the comparison at the end\n\n")
			}
		}
		fmt.Fprintf(out, "%6s %12s %12s %8s %8s %12s %12s %12s\n", "t (s)", "received", "TCP-fair", "p", "RTT ms", "viewer asks", "fairgrid", "applied")
	}
	kb := func(v float64) string { return fmt.Sprintf("%.0f kbit/s", v/1000) }
	opt := func(v *float64, f func(float64) string) string {
		if v == nil {
			return "-"
		}
		return f(*v)
	}
	sum, err := demo.Run(ctx, cfg, slog.New(slog.DiscardHandler), func(r demo.Row) {
		if format == "json" {
			enc.Encode(r)
		} else {
			fmt.Fprintf(out, "%6.0f %12s %12s %8.4f %8s %12s %12s %12s\n", r.T, kb(r.RateBPS), opt(r.FairBPS, kb), r.LossEventRate,
				opt(r.RTTms, func(v float64) string { return fmt.Sprintf("%.0f", v) }), kb(r.ViewerRequestBPS), opt(r.FairgridRequestBPS, kb), kb(r.AppliedBPS))
		}
		if out.err != nil {
			cancel() // nobody sees the rest
		}
	})
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid run: %v\n", err)
		return exitFail
	}
	if out.err != nil {
		return out.finish(s, "run", exitFail)
	}
	if format == "json" {
		enc.Encode(sum)
		return out.finish(s, "run", exitOK)
	}
	fmt.Fprintln(out)
	if sum.Interrupted {
		if sum.Intervals == 0 {
			fmt.Fprintln(out, "Interrupted before the first interval ended: nothing to judge.")
			return out.finish(s, "run", exitOK)
		}
		fmt.Fprintf(out, "Interrupted after %d intervals; the verdict covers what ran.\n", sum.Intervals)
	}
	writeDemoVerdict(out, sum)
	return out.finish(s, "run", exitOK)
}

// writeDemoVerdict is the text after the rows: the share beside the
// download first, which is the verdict; then the controller's equation,
// labelled; the overrides; and the table behind the share.
func writeDemoVerdict(w io.Writer, sum demo.Summary) {
	writeDemoShare(w, sum)
	writeDemoEquation(w, sum)
	fmt.Fprintf(w, "%s.\n", overrides(sum.Reasserts, sum.MaxOverrideMs))
	writeDemoComparison(w, sum)
}

// writeDemoShare is the demo's verdict, first: the viewer's bytes/s ÷ the
// download's beside it, on the wire, on the same link at the same time
// (one TCP share is 0.8–1.25×) — with fairgrid, as the stock viewer and
// through the gateway. Nothing before the run has settled, or without
// the download beside it.
func writeDemoShare(w io.Writer, sum demo.Summary) {
	if !sum.Settled || sum.Stock == nil || sum.Fairgrid == nil || sum.Stock.DownloadBPS <= 0 || sum.Fairgrid.DownloadBPS <= 0 {
		return
	}
	gateway := ""
	if sum.Gateway != nil && sum.Gateway.DownloadBPS > 0 {
		gateway = fmt.Sprintf(", %.2f× through fairgrid's gateway", sum.Gateway.ViewerOverDownload)
	}
	fmt.Fprintf(w, "Over the last half of the run, on the wire, the viewer got %.2f× the bytes/s of the TCP download beside it with fairgrid, %.2f× as the stock viewer alone%s (one TCP share: 0.8–1.25×).\n",
		sum.Fairgrid.ViewerOverDownload, sum.Stock.ViewerOverDownload, gateway)
}

// writeDemoEquation says what fairgrid's controller aims at, labelled as
// its own equation and on one basis: the viewer's payload as fairgrid's
// loop counted it, as the equation's segments are payload, against the
// equation's rate at the loss and RTT the loop measured. A run too short
// for the controller gets its figures without a ratio that would read as
// a verdict.
func writeDemoEquation(w io.Writer, sum demo.Summary) {
	received := fmt.Sprintf("Over the last half of the run the viewer received %.0f kbit/s of payload as fairgrid's loop counted it", sum.MeanRateBPS/1000)
	equation := fmt.Sprintf("the controller's own equation (%s model, s = %s) at the loss and RTT the loop measured", sum.FairModel, demoSegment(sum))
	switch {
	case sum.MeanFairBPS <= 0:
		fmt.Fprintf(w, "%s; no loss was measured, so there is no TCP-fair rate to compare it with.\n", received)
	case !sum.Settled:
		fmt.Fprintf(w, "%s, beside the TCP-fair %.0f kbit/s of %s, but %s.\n", received, sum.MeanFairBPS/1000, equation, sum.TooShort())
	default:
		fmt.Fprintf(w, "%s, %.2f× the TCP-fair %.0f kbit/s of %s; the stock viewer asked for %.2f× that rate.\n",
			received, sum.RatioToFair, sum.MeanFairBPS/1000, equation, sum.ViewerRatioToFair)
	}
}

// writeDemoComparison ends the demo with the table behind the verdict:
// the download beside the stock viewer, without fairgrid, with its
// sidecar and, unless left out, through its gateway, all on the wire.
func writeDemoComparison(w io.Writer, sum demo.Summary) {
	if sum.Stock == nil || sum.Fairgrid == nil {
		return
	}
	type row struct {
		name string
		s    *demo.Side
	}
	rows := []row{{"stock viewer", sum.Stock}, {"with fairgrid", sum.Fairgrid}}
	sides := "the stock viewer alone and with fairgrid"
	if sum.Gateway != nil {
		rows = append(rows, row{"through the gateway", sum.Gateway})
		sides = "the stock viewer alone, with fairgrid's sidecar and through fairgrid's gateway"
	}
	fmt.Fprintf(w, "\nBeside a bulk TCP download (CUBIC) on the same link, %s, side by side, last half of the run, on the wire:\n\n", sides)
	fmt.Fprintf(w, "%-20s %14s %16s %18s %22s\n", "", "download", "viewer received", "viewer÷download", "viewer queueing delay")
	for _, r := range rows {
		share := "-"
		if r.s.DownloadBPS > 0 {
			share = fmt.Sprintf("%.2f×", r.s.ViewerOverDownload)
		}
		fmt.Fprintf(w, "%-20s %14s %16s %18s %22s\n", r.name, fmt.Sprintf("%.0f kbit/s", r.s.DownloadBPS/1000), fmt.Sprintf("%.0f kbit/s", r.s.ViewerBPS/1000),
			share, fmt.Sprintf("%.0f ms (p95 %.0f)", r.s.QueueDelayMeanMs, r.s.QueueDelayP95Ms))
	}
	if !sum.Settled {
		fmt.Fprintf(w, "\nThese figures are the controller's start-up, not a verdict on its share.\n")
		return
	}
	if sum.Stock.DownloadBPS > 0 {
		fmt.Fprintf(w, "\nWith fairgrid the download got %.2f× what it got beside the stock viewer.\n", sum.Fairgrid.DownloadBPS/sum.Stock.DownloadBPS)
		if sum.Gateway != nil {
			fmt.Fprintf(w, "Through the gateway it got %.2f× what it got beside the stock viewer.\n", sum.Gateway.DownloadBPS/sum.Stock.DownloadBPS)
		}
	}
}

// demoSegment says what s the demo's fair rates stand on: the virtual
// TCP's are always full segments, whatever the segment setting.
func demoSegment(sum demo.Summary) string {
	if sum.FairModel == "tfrc per segment" {
		return "1460 B, losses counted by bytes"
	}
	return segmentName(sum.Segment)
}

// segmentName says what s a segment setting stands for.
func segmentName(s throttle.Segment) string {
	if s == throttle.SegmentNominal {
		return "1460 B, nominal"
	}
	return "the mean payload"
}

// overrides says how often fairgrid overrode the stock viewer's own
// AgentThrottles, and how fast.
func overrides(n uint64, maxMs float64) string {
	switch n {
	case 0:
		return "The viewer sent no AgentThrottle of its own after fairgrid's first request, so fairgrid never had to override it"
	case 1:
		return fmt.Sprintf("fairgrid overrode the viewer's own AgentThrottle once, within %.0f ms", maxMs)
	}
	return fmt.Sprintf("fairgrid overrode the viewer's own AgentThrottles %d times, each within %.0f ms", n, maxMs)
}

// demoConfig reads --link, RATE,DELAY,LOSS,BUFFER, with the parsers of
// fairgrid link.
func demoConfig(spec string) (demo.Config, error) {
	l, err := link.ParsePipe(spec)
	if err != nil {
		return demo.Config{}, fmt.Errorf("--link %w", err)
	}
	return demo.Config{Link: l}, nil
}

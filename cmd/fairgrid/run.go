package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/fairgrid/fairgrid/internal/cli"
	"github.com/fairgrid/fairgrid/internal/lab/demo"
	"github.com/fairgrid/fairgrid/throttle"
)

func runRun(args []string, s stdio) int {
	fs := newFlagSet("run", cli.RunSynopsis, s)
	demoMode := fs.Bool("demo", false, "run the embedded default: region, link emulator and viewer in one process")
	duration := fs.Duration("duration", 60*time.Second, "how long the demo runs")
	linkSpec := fs.String("link", "1M,50ms,1%,100", "the emulated link: RATE,DELAY,LOSS,BUFFER (the thesis's 3 %: 2M,50ms,3%,100)")
	withGateway := fs.Bool("gateway", true, "compare with the stock viewer through fairgrid's gateway too (--gateway=false leaves that rig out)")
	format := formatFlag(fs, "output format: `text` or json (one object per interval, then a summary)")
	configPath, check := cli.ConfigFlags(fs)
	// The demo reads controller, segment and interval too.
	set := cli.BindSettings(fs, cli.RunSettings()...)
	if c, ok := parseFlagsArgs(fs, cli.RunSynopsis, args, s); !ok {
		return c
	}
	if err := cli.ConfigArg(fs, configPath, *check); err != nil {
		fmt.Fprintf(s.err, "fairgrid run: %v\n", err)
		return exitUsage
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
	cfg, err := demo.LinkConfig(*linkSpec)
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
	c := set.Values.Control
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
	ctx, stop := cli.RunContext(0, cli.PlainNotice(s.err, "fairgrid run"))
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := &cli.ResultWriter{W: s.out}
	enc := json.NewEncoder(out)
	if format == "text" {
		demo.WriteHeader(out, cfg, linkSpec, controller)
	}
	sum, err := demo.Run(ctx, cfg, slog.New(slog.DiscardHandler), func(r demo.Row) {
		if format == "json" {
			enc.Encode(r)
		} else {
			demo.WriteRow(out, r)
		}
		if out.Err != nil {
			cancel() // nobody sees the rest
		}
	})
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid run: %v\n", err)
		return exitFail
	}
	if out.Err != nil {
		return out.Finish(s.err, "run", exitFail)
	}
	if format == "json" {
		enc.Encode(sum)
	} else {
		demo.WriteEnd(out, sum)
	}
	return out.Finish(s.err, "run", exitOK)
}

package main

import (
	"fmt"
	"log/slog"

	"github.com/fairgrid/fairgrid/internal/cli"
	"github.com/fairgrid/fairgrid/internal/lab/gatewaylab"
)

func runLabGateway(args []string, s stdio) int {
	fs := newFlagSet("lab gateway", cli.LabGatewaySynopsis, s)
	format := formatFlag(fs, "output format: `text` or json")
	flags := gatewaylab.BindFlags(fs)
	if c, ok := parseFlags(fs, cli.LabGatewaySynopsis, args, s); !ok {
		return c
	}
	cfg, err := flags.Config()
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid lab gateway: %v\n", err)
		return exitUsage
	}
	ctx, stop := cli.RunContext(0, cli.PlainNotice(s.err, "fairgrid lab gateway"))
	defer stop()
	log := slog.New(slog.NewTextHandler(s.err, &slog.HandlerOptions{Level: slog.LevelWarn}))
	fmt.Fprintf(s.err, "fairgrid lab gateway: %d arms at once, %v each\n", len(cfg.Arms), cfg.Warmup+cfg.Duration)
	r, err := gatewaylab.Run(ctx, cfg, log)
	if err != nil && ctx.Err() != nil {
		// Ctrl-C during the warm-up: nothing was measured yet.
		fmt.Fprintf(s.out, "Interrupted during the %v warm-up: nothing measured yet.\n", cfg.Warmup)
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid lab gateway: %v\n", err)
		return exitFail
	}
	if r.Interrupted {
		fmt.Fprintf(s.out, "Interrupted: the arms measured less than the %v asked (seconds column); what they measured:\n\n", cfg.Duration)
	}
	w := &cli.ResultWriter{W: s.out}
	if *format == "json" {
		gatewaylab.WriteJSON(w, r)
	} else {
		gatewaylab.WriteText(w, r)
	}
	return w.Finish(s.err, "lab gateway", exitOK)
}

package main

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/fairgrid/fairgrid/internal/cli"
	"github.com/fairgrid/fairgrid/internal/lab/fairness"
)

func runLabFairness(args []string, s stdio) int {
	fs := newFlagSet("lab fairness", cli.LabFairnessSynopsis, s)
	format := formatFlag(fs, "output format: `text` (a markdown table) or json (one row per cell)")
	flags := fairness.BindFlags(fs)
	if c, ok := parseFlags(fs, cli.LabFairnessSynopsis, args, s); !ok {
		return c
	}
	plan, err := flags.Plan()
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid lab fairness: %v\n", err)
		return exitUsage
	}
	ctx, stop := cli.RunContext(0, cli.PlainNotice(s.err, "fairgrid lab fairness"))
	defer stop()
	plan.Options.Log = slog.New(slog.NewTextHandler(s.err, &slog.HandlerOptions{Level: slog.LevelWarn}))
	total, done := len(plan.Cells)*plan.Seeds, 0
	fmt.Fprintf(s.err, "fairgrid lab fairness: %v\n", plan)
	runs, err := fairness.RunGrid(ctx, plan.Cells, plan.Seeds, plan.Options, plan.Parallel,
		func(r fairness.Result) {
			done++
			warn := ""
			if r.SenderShortfall > 0.05 {
				warn = fmt.Sprintf(" (the region sent %.0f %% less than allowed: the machine is too loaded to judge this run)", 100*r.SenderShortfall)
			}
			fmt.Fprintf(s.err, "[%d/%d] %v, seed %d: viewer ÷ TCP %.2f%s\n", done, total, r.Cell, r.Seed, fairness.Ratio(r), warn)
		})
	var interrupted *fairness.Interrupted
	if errors.As(err, &interrupted) {
		// Ctrl-C: what the finished runs measured, as the other labs do.
		if interrupted.Finished == 0 {
			fmt.Fprintf(s.out, "Interrupted: none of the %d runs had finished; nothing measured.\n", interrupted.Total)
			return exitOK
		}
		fmt.Fprintf(s.out, "Interrupted: %d of %d runs finished; what they measured (seeds column: how many per cell):\n\n", interrupted.Finished, interrupted.Total)
	} else if err != nil {
		fmt.Fprintf(s.err, "fairgrid lab fairness: %v\n", err)
		return exitFail
	}
	rows := make([]fairness.Row, len(runs))
	for i, rs := range runs {
		rows[i] = fairness.Summarize(rs)
	}
	w := &cli.ResultWriter{W: s.out}
	if *format == "json" {
		fairness.WriteJSON(w, rows)
	} else {
		fairness.WriteMarkdown(w, rows, runs)
	}
	if plan.Out != "" {
		if err := fairness.WriteFiles(plan.Out, rows, runs); err != nil {
			fmt.Fprintf(s.err, "fairgrid lab fairness: %v\n", err)
			return exitFail
		}
	}
	return w.Finish(s.err, "lab fairness", exitOK)
}

package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fairgrid/fairgrid/internal/cli"
	labscenario "github.com/fairgrid/fairgrid/internal/lab/scenario"
)

const labSynopsis = `SCENARIO [--format text|json|markdown] [--out DIR [--pcap]] [--seed N] [--seeds N] [--duration D | --full] [--parallel N]

Runs one of the lab's experiments on an emulated shared bottleneck, in
this process and without root: a test region and a synthetic viewer
(stock, or controlled by fairgrid) beside real TCP flows (gVisor's
userspace Reno and CUBIC; as root, Linux's), and prints each figure
beside the one its source document published, with the document's
title and FILE:LINE ("ours" for figures no document gives), how our
set-up differs, and a verdict: agrees or disagrees with the document's
claim, judged on the seeds' central half, or reported (ours, or no claim to judge). Runs are
real time: --duration sets each run's measured part (warm-ups come on
top), --full runs the documents' published durations instead
(coexistence 1,000 s, the last 200 s measured; multiplexing 200 s),
--seeds repeats every run with that many seeds (the median and the
spread are reported), and --parallel sets how many runs go at once. --format markdown prints the
page docs/lab.md is (for all). With --out, the results (JSON, which
"lab render DIR" prints again without running) and the audit's HTML
report of each viewer circuit go into DIR; --pcap adds each run's
capture as the viewer's host sees it (about 1 GB for all). Progress
shows on stderr as runs end; Ctrl-C stops and prints what the finished
runs measured (exit 0).

Scenarios:
%s`

// labParallel is --parallel's default.
const labParallel = labscenario.DefaultParallel

// labScenarios lists the scenarios and lab's commands of their own.
func labScenarios() string {
	return labscenario.Help(labParallel,
		[2]string{"fairness", "the viewer's share beside TCP over a grid of links (own flags: lab fairness --help)"},
		[2]string{"gateway", "the stock viewer through fairgrid gateway beside it alone, each with a download (own flags: lab gateway --help)"},
		[2]string{"render", "a saved run (--out DIR) printed again with this build's verdicts, nothing run (lab render --help)"})
}

func runLab(args []string, s stdio) int {
	if len(args) > 0 && args[0] == "fairness" {
		return runLabFairness(args[1:], s)
	}
	if len(args) > 0 && args[0] == "gateway" {
		return runLabGateway(args[1:], s)
	}
	if len(args) > 0 && args[0] == "render" {
		return runLabRender(args[1:], s)
	}
	synopsis := fmt.Sprintf(labSynopsis, labScenarios())
	fs := newFlagSet("lab", synopsis, s)
	format := formatFlag(fs, "output format: `text` (tables), json, or markdown (docs/lab.md's page)", "markdown")
	out := fs.String("out", "", "write the results (JSON) and HTML reports into this `directory`")
	pcap := fs.Bool("pcap", false, "with --out, also write each run's capture (pcap)")
	seed := fs.Uint64("seed", 1, "seed of the links' loss and the TCP stacks (the first, with --seeds)")
	seeds := fs.Int("seeds", 1, "run every set-up with this many seeds (seed, seed+1, …): median and spread")
	duration := fs.Duration("duration", 0, "each run's measured part, at least 5s (0: the scenario's default)")
	full := fs.Bool("full", false, "run the documents' published durations")
	parallel := fs.Int("parallel", labParallel, "runs at once")
	if c, ok := parseFlagsArgs(fs, synopsis, args, s); !ok {
		return c
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(s.err, "fairgrid lab: want one scenario, got %d arguments (see --help)\n", fs.NArg())
		return exitUsage
	}
	sc, ok := labscenario.Find(fs.Arg(0))
	if !ok {
		names := []string{"all", "fairness", "gateway", "render"}
		for _, sc := range labscenario.Scenarios() {
			names = append(names, sc.Name)
		}
		if near := cli.Nearest(fs.Arg(0), names); near != "" {
			fmt.Fprintf(s.err, "fairgrid lab: unknown scenario %q; did you mean %s? (--help lists them)\n", fs.Arg(0), near)
		} else {
			fmt.Fprintf(s.err, "fairgrid lab: unknown scenario %q; the scenarios are:\n%s\n", fs.Arg(0), labScenarios())
		}
		return exitUsage
	}
	var err error
	switch {
	case *duration < 0 || *duration > 0 && *duration < 5*time.Second:
		err = fmt.Errorf("--duration %v: want 0 (the default) or at least 5s", *duration)
	case *seeds < 1:
		err = fmt.Errorf("--seeds %d: want at least 1", *seeds)
	case *full && *duration != 0:
		err = errors.New("--full and --duration: choose one")
	case *pcap && *out == "":
		err = errors.New("--pcap needs --out DIR")
	case *parallel < 1:
		err = fmt.Errorf("--parallel %d: want at least 1", *parallel)
	case *out != "":
		// The runs take minutes: a directory that cannot be written is
		// said now, not after them.
		if err = os.MkdirAll(*out, 0o755); err != nil {
			err = fmt.Errorf("--out: %w", err)
		}
	}
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid lab: %v\n", err)
		return exitUsage
	}
	ctx, stop := runContext(0, plainNotice(s.err, "fairgrid lab"))
	defer stop()
	log := slog.New(labscenario.QuietAfter(ctx, slog.NewTextHandler(s.err, &slog.HandlerOptions{Level: slog.LevelWarn})))
	opts := labscenario.Options{Seed: *seed, Seeds: *seeds, Duration: *duration, Full: *full, OutDir: *out, Pcap: *pcap, Parallel: *parallel, Log: log}
	bar := labscenario.NewProgress(s.err, sc.Name, stderrIsTerminal(s.err), progressClock)
	bar.Planned = sc.Plan(opts).Wall
	opts.Progress = bar.Update
	bar.Start()
	res, err := sc.Run(ctx, opts)
	bar.Done()
	w := &resultWriter{w: s.out}
	code := exitOK
	if ir := (*labscenario.Interrupted)(nil); errors.As(err, &ir) {
		// Ctrl-C keeps what was measured, and exits 0 unless a run had
		// failed before it.
		res.Scenario = sc.Name
		labscenario.WriteInterrupted(w, res, ir)
		for _, e := range labscenario.Failures(err) {
			fmt.Fprintf(s.err, "fairgrid lab: %s: %v\n", sc.Name, e)
			code = exitFail
		}
		if ir.Finished == 0 {
			return w.finish(s, "lab", code)
		}
	} else if err != nil {
		fmt.Fprintf(s.err, "fairgrid lab: %s: %v\n", sc.Name, err)
		return exitFail
	} else {
		res.Command = "fairgrid lab " + strings.Join(args, " ")
		labscenario.WriteFormat(w, res, *format)
	}
	if *out != "" {
		if err := labscenario.WriteJSONFile(filepath.Join(*out, sc.Name+".json"), res); err != nil {
			fmt.Fprintf(s.err, "fairgrid lab: %v\n", err)
			code = exitFail
		}
	}
	return w.finish(s, "lab", code)
}

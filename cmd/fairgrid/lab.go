package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	labscenario "github.com/fairgrid/fairgrid/internal/lab/scenario"
)

const labSynopsis = `SCENARIO [--format text|json] [--out DIR] [--seed N] [--duration D] [--parallel N]

Runs one of the lab's experiments on an emulated shared bottleneck, in
this process and without root: a test region and a synthetic viewer
(stock, or controlled by fairgrid) beside real TCP flows (gVisor's
userspace Reno and CUBIC), and prints each run beside the published
numbers it reproduces. Runs are real time: --duration sets each run's
measured part (warm-ups come on top), and --parallel how many run at
once. With --out, each run's capture (pcap, what the bottleneck
delivered) and the audit's HTML report of the viewer's circuit, and the
results as JSON, go into DIR.

Scenarios:
%s`

func labScenarios() string {
	var b strings.Builder
	for _, s := range labscenario.Scenarios() {
		fmt.Fprintf(&b, "  %-17s %s\n", s.Name, s.Summary)
	}
	fmt.Fprintf(&b, "  %-17s %s\n", "all", "every scenario, then one summary table (about 10 minutes with --parallel 4)")
	fmt.Fprintf(&b, "  %-17s %s", "fairness", "the viewer's share beside TCP over a grid of links (own flags: lab fairness --help)")
	return b.String()
}

func runLab(args []string, s stdio) int {
	if len(args) > 0 && args[0] == "fairness" {
		return runLabFairness(args[1:], s)
	}
	synopsis := fmt.Sprintf(labSynopsis, labScenarios())
	fs := newFlagSet("lab", synopsis, s)
	format := formatFlag(fs, "output format: `text` (tables) or json")
	out := fs.String("out", "", "write captures, HTML reports and results.json into this `directory`")
	seed := fs.Uint64("seed", 1, "seed of the links' loss and the TCP stacks")
	duration := fs.Duration("duration", 0, "each run's measured part (0: the scenario's default)")
	parallel := fs.Int("parallel", 4, "runs at once")
	if c, ok := parseFlagsArgs(fs, synopsis, args, s); !ok {
		return c
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(s.err, "fairgrid lab: want one scenario, got %d arguments (see --help)\n", fs.NArg())
		return exitUsage
	}
	sc, ok := labscenario.Find(fs.Arg(0))
	if !ok {
		fmt.Fprintf(s.err, "fairgrid lab: unknown scenario %q; the scenarios are:\n%s\n", fs.Arg(0), labScenarios())
		return exitUsage
	}
	if *duration < 0 || *duration > 0 && *duration < 5*time.Second {
		fmt.Fprintf(s.err, "fairgrid lab: --duration %v: want 0 (the default) or at least 5s\n", *duration)
		return exitUsage
	}
	if *parallel < 1 {
		fmt.Fprintf(s.err, "fairgrid lab: --parallel %d: want at least 1\n", *parallel)
		return exitUsage
	}
	// The runs take minutes: a directory that cannot be written is said
	// now, not after them.
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			fmt.Fprintf(s.err, "fairgrid lab: --out: %v\n", err)
			return exitUsage
		}
	}
	ctx, stop := runContext(0)
	defer stop()
	log := slog.New(slog.NewTextHandler(s.err, &slog.HandlerOptions{Level: slog.LevelWarn}))
	res, err := sc.Run(ctx, labscenario.Options{Seed: *seed, Duration: *duration, OutDir: *out, Parallel: *parallel, Log: log})
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid lab: %s: %v\n", sc.Name, err)
		return exitFail
	}
	w := &resultWriter{w: s.out}
	if *format == "json" {
		labscenario.WriteJSON(w, res)
	} else {
		labscenario.WriteText(w, res)
	}
	if *out != "" {
		if err := writeLabJSON(filepath.Join(*out, sc.Name+".json"), res); err != nil {
			fmt.Fprintf(s.err, "fairgrid lab: %v\n", err)
			return exitFail
		}
	}
	return w.finish(s, "lab", exitOK)
}

func writeLabJSON(path string, res labscenario.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = labscenario.WriteJSON(f, res)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	labscenario "github.com/fairgrid/fairgrid/internal/lab/scenario"
)

const labSynopsis = `SCENARIO [--format text|json|markdown] [--out DIR [--pcap]] [--seed N] [--seeds N] [--duration D | --full] [--parallel N]

Runs one of the lab's experiments on an emulated shared bottleneck, in
this process and without root: a test region and a synthetic viewer
(stock, or controlled by fairgrid) beside real TCP flows (gVisor's
userspace Reno and CUBIC; as root, Linux's), and prints each figure
beside the one its source document published, with the document's
FILE:LINE in ../shared/seeds ("ours" for figures no document gives), how
our set-up differs, and a verdict. Runs are real time: --duration sets
each run's measured part (warm-ups come on top), --full runs the
documents' published durations instead (coexistence 1,000 s, the last
200 s measured; multiplexing 200 s), --seeds repeats every run with that
many seeds (the median and the spread are reported), and --parallel sets
how many runs go at once. --format markdown prints the summary table
docs/lab.md holds. With --out, the results (JSON) and the audit's HTML
report of each viewer circuit go into DIR; --pcap adds each run's
capture (what the bottleneck delivered: about 1 GB for all).

Scenarios:
%s`

func labScenarios() string {
	var b strings.Builder
	for _, s := range labscenario.Scenarios() {
		fmt.Fprintf(&b, "  %-17s %s\n", s.Name, s.Summary)
	}
	fmt.Fprintf(&b, "  %-17s %s\n", "all", "every scenario, then one summary table (docs/lab.md says how long)")
	fmt.Fprintf(&b, "  %-17s %s\n", "fairness", "the viewer's share beside TCP over a grid of links (own flags: lab fairness --help)")
	fmt.Fprintf(&b, "  %-17s %s", "gateway", "the stock viewer through fairgrid gateway beside it alone, each with a download (own flags: lab gateway --help)")
	return b.String()
}

func runLab(args []string, s stdio) int {
	if len(args) > 0 && args[0] == "fairness" {
		return runLabFairness(args[1:], s)
	}
	if len(args) > 0 && args[0] == "gateway" {
		return runLabGateway(args[1:], s)
	}
	synopsis := fmt.Sprintf(labSynopsis, labScenarios())
	fs := newFlagSet("lab", synopsis, s)
	format := "text"
	fs.Var(labFormat{&format}, "format", "output format: `text` (tables), json, or markdown (the summary table of docs/lab.md)")
	out := fs.String("out", "", "write the results (JSON) and HTML reports into this `directory`")
	pcap := fs.Bool("pcap", false, "with --out, also write each run's capture (pcap)")
	seed := fs.Uint64("seed", 1, "seed of the links' loss and the TCP stacks (the first, with --seeds)")
	seeds := fs.Int("seeds", 1, "run every set-up with this many seeds (seed, seed+1, …): median and spread")
	duration := fs.Duration("duration", 0, "each run's measured part (0: the scenario's default)")
	full := fs.Bool("full", false, "run the documents' published durations")
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
	if *seeds < 1 {
		fmt.Fprintf(s.err, "fairgrid lab: --seeds %d: want at least 1\n", *seeds)
		return exitUsage
	}
	if *full && *duration != 0 {
		fmt.Fprintf(s.err, "fairgrid lab: --full and --duration: choose one\n")
		return exitUsage
	}
	if *pcap && *out == "" {
		fmt.Fprintf(s.err, "fairgrid lab: --pcap needs --out DIR\n")
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
	res, err := sc.Run(ctx, labscenario.Options{Seed: *seed, Seeds: *seeds, Duration: *duration, Full: *full, OutDir: *out, Pcap: *pcap, Parallel: *parallel, Log: log})
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid lab: %s: %v\n", sc.Name, err)
		return exitFail
	}
	w := &resultWriter{w: s.out}
	switch format {
	case "json":
		labscenario.WriteJSON(w, res)
	case "markdown":
		labscenario.WriteMarkdown(w, res)
	default:
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

// labFormat is lab's --format: text, json or markdown.
type labFormat struct{ p *string }

func (f labFormat) String() string {
	if f.p == nil {
		return ""
	}
	return *f.p
}

func (f labFormat) Set(v string) error {
	if v != "text" && v != "json" && v != "markdown" {
		return errors.New("want text, json or markdown")
	}
	*f.p = v
	return nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

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
spread are reported), and --parallel sets how many runs go at once. --format markdown prints the summary table
docs/lab.md holds. With --out, the results (JSON) and the audit's HTML
report of each viewer circuit go into DIR; --pcap adds each run's
capture as the viewer's host sees it (about 1 GB for all). Progress
shows on stderr as runs end; Ctrl-C stops and prints what the finished
runs measured (exit 0).

Scenarios:
%s`

func labScenarios() string {
	var b strings.Builder
	defaults := labscenario.Options{Parallel: labParallel}
	for _, s := range labscenario.Scenarios() {
		fmt.Fprintf(&b, "  %-17s %s\n", s.Name, s.Summary)
		fmt.Fprintf(&b, "  %-17s %s\n", "", planText(s.Plan(defaults)))
	}
	all, _ := labscenario.Find("all")
	fmt.Fprintf(&b, "  %-17s %s\n", "all", "every scenario, then one summary table")
	fmt.Fprintf(&b, "  %-17s %s\n", "", planText(all.Plan(defaults)))
	fmt.Fprintf(&b, "  %-17s %s\n", "fairness", "the viewer's share beside TCP over a grid of links (own flags: lab fairness --help)")
	fmt.Fprintf(&b, "  %-17s %s", "gateway", "the stock viewer through fairgrid gateway beside it alone, each with a download (own flags: lab gateway --help)")
	return b.String()
}

// labParallel is --parallel's default.
const labParallel = labscenario.DefaultParallel

// planText says how long a scenario takes with the defaults.
func planText(p labscenario.Plan) string {
	return fmt.Sprintf("(%d runs, about %s in real time with the defaults)", p.Runs, minutes(p.Wall))
}

// minutes is a duration of minutes as people say it.
func minutes(d time.Duration) string {
	switch m := int(d.Round(time.Minute).Minutes()); {
	case d < time.Minute:
		return fmt.Sprintf("%.0f s", d.Seconds())
	case m < 60:
		return fmt.Sprintf("%d min", m)
	default:
		return fmt.Sprintf("%d h %d min", m/60, m%60)
	}
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
		names := []string{"all", "fairness", "gateway"}
		for _, sc := range labscenario.Scenarios() {
			names = append(names, sc.Name)
		}
		if near := nearest(fs.Arg(0), names); near != "" {
			fmt.Fprintf(s.err, "fairgrid lab: unknown scenario %q; did you mean %s? (--help lists them)\n", fs.Arg(0), near)
		} else {
			fmt.Fprintf(s.err, "fairgrid lab: unknown scenario %q; the scenarios are:\n%s\n", fs.Arg(0), labScenarios())
		}
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
	ctx, stop := runContext(0, plainNotice(s.err, "fairgrid lab"))
	defer stop()
	// Once interrupted, the runs' complaints about their ending are noise.
	log := slog.New(quietAfter{ctx, slog.NewTextHandler(s.err, &slog.HandlerOptions{Level: slog.LevelWarn})})
	opts := labscenario.Options{Seed: *seed, Seeds: *seeds, Duration: *duration, Full: *full, OutDir: *out, Pcap: *pcap, Parallel: *parallel, Log: log}
	bar := newLabProgress(s.err, sc.Name, stderrIsTerminal(s.err), progressClock)
	bar.planned = sc.Plan(opts).Wall
	opts.Progress = bar.update
	res, err := sc.Run(ctx, opts)
	bar.done()
	if ir := (*labscenario.Interrupted)(nil); errors.As(err, &ir) {
		return labInterrupted(s, sc.Name, res, err, ir, *out)
	}
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid lab: %s: %v\n", sc.Name, err)
		return exitFail
	}
	res.Command = "fairgrid lab " + strings.Join(args, " ")
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

// labInterrupted prints what the runs that finished measured (and, with
// --out, writes it as the scenario's JSON): Ctrl-C keeps what was
// measured, and exits 0 unless a run had failed before it.
func labInterrupted(s stdio, name string, res labscenario.Result, err error, ir *labscenario.Interrupted, out string) int {
	res.Scenario = name
	w := &resultWriter{w: s.out}
	fmt.Fprintf(w, "Interrupted after %.0f s: %d of %d runs of %s finished", res.Seconds, ir.Finished, ir.Total, name)
	if ir.Finished == 0 {
		fmt.Fprintln(w, "; nothing measured yet.")
	} else {
		fmt.Fprintln(w, "; what they measured (the comparisons with the documents need every run):")
		fmt.Fprintln(w)
		labscenario.WriteRuns(w, res.Runs)
	}
	code := exitOK
	for _, e := range unwrapErrors(err) {
		if _, ok := e.(*labscenario.Interrupted); !ok {
			fmt.Fprintf(s.err, "fairgrid lab: %s: %v\n", name, e)
			code = exitFail
		}
	}
	if out != "" && ir.Finished > 0 {
		if err := writeLabJSON(filepath.Join(out, name+".json"), res); err != nil {
			fmt.Fprintf(s.err, "fairgrid lab: %v\n", err)
			code = exitFail
		}
	}
	return w.finish(s, "lab", code)
}

func unwrapErrors(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// quietAfter drops log records once ctx has ended.
type quietAfter struct {
	ctx context.Context
	slog.Handler
}

func (q quietAfter) Enabled(c context.Context, l slog.Level) bool {
	return q.ctx.Err() == nil && q.Handler.Enabled(c, l)
}

func (q quietAfter) WithAttrs(as []slog.Attr) slog.Handler {
	return quietAfter{q.ctx, q.Handler.WithAttrs(as)}
}
func (q quietAfter) WithGroup(g string) slog.Handler {
	return quietAfter{q.ctx, q.Handler.WithGroup(g)}
}

// labProgress says how far a scenario is: on a terminal one line redrawn
// every second (runs ended, time spent, an estimate of the time left);
// elsewhere a line as each run ends, so that a log shows it is alive.
type labProgress struct {
	w        io.Writer
	name     string
	terminal bool
	now      func() time.Time
	start    time.Time

	// planned is the scenario's planned length (Scenario.Plan), the time
	// left before a run has ended.
	planned time.Duration

	mu          sync.Mutex
	ended, runs int
	drawn       bool
	stop        chan struct{}
	stopped     chan struct{}
}

func newLabProgress(w io.Writer, name string, terminal bool, now func() time.Time) *labProgress {
	p := &labProgress{w: w, name: name, terminal: terminal, now: now, start: now()}
	if terminal {
		p.stop, p.stopped = make(chan struct{}), make(chan struct{})
		go p.tick()
	}
	return p
}

func (p *labProgress) tick() {
	defer close(p.stopped)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.draw()
			p.mu.Unlock()
		}
	}
}

// update is the scenario's Progress hook.
func (p *labProgress) update(ended, runs int, run string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended, p.runs = ended, runs
	if p.terminal {
		p.draw()
		return
	}
	if ended == 0 {
		fmt.Fprintf(p.w, "fairgrid lab: %s: %d runs, about %s in real time\n", p.name, runs, clock(p.planned))
		return
	}
	fmt.Fprintf(p.w, "fairgrid lab: %s: run %d of %d done (%s), %s in\n", p.name, ended, runs, run, clock(p.now().Sub(p.start)))
}

// draw redraws the terminal's line; p.mu is held.
func (p *labProgress) draw() {
	spent := p.now().Sub(p.start)
	line := fmt.Sprintf("fairgrid lab: %s: %s in", p.name, clock(spent))
	if p.runs > 0 {
		line = fmt.Sprintf("fairgrid lab: %s: %d of %d runs done, %s in", p.name, p.ended, p.runs, clock(spent))
		switch {
		case p.ended > 0 && p.ended < p.runs:
			left := time.Duration(float64(spent) / float64(p.ended) * float64(p.runs-p.ended))
			line += ", about " + clock(left) + " left"
		case p.ended == 0 && p.planned > spent:
			line += ", about " + clock(p.planned-spent) + " left"
		}
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s (Ctrl-C stops and prints what finished)", line)
	p.drawn = true
}

// done ends the progress line.
func (p *labProgress) done() {
	if !p.terminal {
		return
	}
	close(p.stop)
	<-p.stopped
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

func clock(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

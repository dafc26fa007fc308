package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
)

// Options are what every scenario takes.
type Options struct {
	// Seed makes the links' loss and the TCP stacks' random choices
	// repeatable; real TCP's timing still follows the goroutines'
	// scheduling, so runs agree closely but not bit for bit.
	Seed uint64
	// Seeds is how many seeds each run is repeated with (Seed, Seed+1,
	// …; default 1): comparisons report the median and the spread over
	// them, and the verdicts judge every seed.
	Seeds int
	// Duration is each run's measured part; 0 is the scenario's default.
	// Warm-ups come on top.
	Duration time.Duration
	// Full runs the documents' published durations (coexistence 1,000 s,
	// the last 200 s measured; multiplexing 200 s) instead of the
	// defaults; an explicit Duration still wins.
	Full bool
	// OutDir, if set, receives the results (JSON) and the audit's HTML
	// report of each run's viewer circuit.
	OutDir string
	// Pcap adds each run's capture (what the bottleneck delivered) to
	// OutDir: about 1 GB for `all`.
	Pcap bool
	// Parallel is how many runs go at once (default DefaultParallel):
	// each run is real time but light on CPU, a few thousand packets a
	// second.
	Parallel int
	Log      *slog.Logger
	// Progress, if set, is called with 0 runs ended as a scenario's runs
	// begin, then as each run ends, but for runs the context's end stopped
	// (from the run's goroutine, one call at a time), with the runs ended,
	// the total of the scenario running and the run's name.
	Progress func(done, total int, run string)
}

// Interrupted is the error of a scenario whose context ended before its
// runs did: the Result it comes with holds the runs that finished (no
// comparisons, which need every run).
type Interrupted struct {
	Finished, Total int
}

func (e *Interrupted) Error() string {
	return fmt.Sprintf("interrupted: %d of %d runs finished", e.Finished, e.Total)
}

// DefaultParallel is how many runs go at once unless Options.Parallel
// says: `lab all` at the defaults ran in 15 min 17 s at 4 (916 s wall,
// 122 s of CPU: the runs wait on real time, not on the CPU), over the
// 15 minutes it is allowed; at 6 it took 11 min 43 s (121 s of CPU).
// Multiplexing caps its own (multiplexParallel).
const DefaultParallel = 6

func (o Options) withDefaults() Options {
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Seeds <= 0 {
		o.Seeds = 1
	}
	if o.Parallel <= 0 {
		o.Parallel = DefaultParallel
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return o
}

// duration is the measured part of each run: o.Duration if set, else the
// published one with Full, else the scenario's default.
func (o Options) duration(def, published time.Duration) time.Duration {
	switch {
	case o.Duration > 0:
		return o.Duration
	case o.Full:
		return published
	}
	return def
}

// Table is a scenario's result in rows, for text and JSON alike.
type Table struct {
	Title   string     `json:"title"`
	Columns []string   `json:"columns"`
	Rows    [][]string `json:"rows"`
	// Notes say where the published numbers come from and what differs.
	Notes []string `json:"notes,omitempty"`
}

// Result is what a scenario reports.
type Result struct {
	Scenario string `json:"scenario"`
	// Command is the command line that made the result, if the caller
	// says (WriteMarkdown heads its table with it).
	Command string  `json:"command,omitempty"`
	Seconds float64 `json:"wall_seconds"`
	// Options are what the runs were made with, for Render.
	Options     *SavedOptions `json:"options,omitempty"`
	Tables      []Table       `json:"tables"`
	Comparisons []Comparison  `json:"comparisons"`
	Runs        []RunResult   `json:"runs"`
}

// SavedOptions are the Options a result's runs were made with, as far as
// they decide its jobs: what Render needs to rebuild the result from the
// runs.
type SavedOptions struct {
	Seed            uint64  `json:"seed"`
	Seeds           int     `json:"seeds"`
	DurationSeconds float64 `json:"duration_seconds,omitempty"`
	Full            bool    `json:"full,omitempty"`
}

func saved(o Options) *SavedOptions {
	o = o.withDefaults()
	return &SavedOptions{Seed: o.Seed, Seeds: o.Seeds, DurationSeconds: o.Duration.Seconds(), Full: o.Full}
}

func (s SavedOptions) options() Options {
	return Options{Seed: s.Seed, Seeds: s.Seeds, Duration: time.Duration(s.DurationSeconds * float64(time.Second)), Full: s.Full}.withDefaults()
}

// RunResult is one run of a scenario, named by its parameters.
type RunResult struct {
	Name        string      `json:"name"`
	Measurement Measurement `json:"measurement"`
}

// Scenario is one experiment of the lab.
type Scenario struct {
	Name    string
	Summary string
	// DefaultDuration is each run's measured part when Options.Duration
	// is 0.
	DefaultDuration time.Duration
	Run             func(ctx context.Context, o Options) (Result, error)
	// seeding is the scenario's runs and results (every scenario but
	// all), which Run runs and the tests build on empty measurements.
	seeding func(o Options) seeding
}

// seeding is what runSeeded runs: a seed's jobs (mk) and how that seed's
// result is built from their runs (result).
type seeding struct {
	mk     func(o Options) []job
	result func(jobs []job, runs []RunResult) Result
}

// runSeeding runs a scenario's seeding with o.
func runSeeding(ctx context.Context, o Options, s seeding) (Result, error) {
	return runSeeded(ctx, o, s.mk, s.result)
}

// Scenarios lists the lab's experiments in the order `all` runs them.
func Scenarios() []Scenario {
	return []Scenario{coexistence(), mongoose(), multiplexing(), wirelessBuffers()}
}

// Find returns the scenario called name ("all" included).
func Find(name string) (Scenario, bool) {
	if name == "all" {
		return all(), true
	}
	for _, s := range Scenarios() {
		if s.Name == name {
			return s, true
		}
	}
	return Scenario{}, false
}

// all runs every scenario and ends with one table of every comparison.
func all() Scenario {
	return Scenario{Name: "all", Summary: "every scenario, then one table: scenario, case, source, published, measured, differs, verdict",
		Run: func(ctx context.Context, o Options) (Result, error) {
			start := time.Now()
			res := Result{Scenario: "all"}
			var errs []error
			for _, s := range Scenarios() {
				r, err := s.Run(ctx, o)
				if ir := (*Interrupted)(nil); errors.As(err, &ir) {
					// what finished, of every scenario's runs
					res.Runs = append(res.Runs, r.Runs...)
					res.Seconds = time.Since(start).Seconds()
					total := 0
					for _, s := range Scenarios() {
						total += s.Plan(o).Runs
					}
					ir.Finished, ir.Total = len(res.Runs), total
					return res, err
				}
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", s.Name, err))
					continue
				}
				res.Tables = append(res.Tables, r.Tables...)
				res.Comparisons = append(res.Comparisons, r.Comparisons...)
				res.Runs = append(res.Runs, r.Runs...)
			}
			res.Tables = append(res.Tables, SummaryTable(res.Comparisons))
			res.Seconds = time.Since(start).Seconds()
			res.Options = saved(o)
			return res, errors.Join(errs...)
		}}
}

// DocumentNames names the source documents the comparisons cite by file
// name, for a reader who has only the output.
const DocumentNames = `The documents: 000_6377d885c127798c.txt is Saldana, Suznjevic, Sequeira et al., "The Effect of TCP Variants on the Coexistence of MMORPG and Best-Effort Traffic"; ` +
	`001_e9d8247e49fbaed2.txt J. Saldana's preliminary NS2 results on multiplexed game TCP flows (tcmtf list, for CCNC 2014); ` +
	`002_de6dcb7b65c28c7b.txt the thesis, chapters 7 and 8 (the Mongoose client; the file names no author or year); ` +
	`003_0f0edd6803f39f4d.txt Ando, Murase, Oguchi, "Characteristics of QoS-Guaranteed TCP on Real Mobile Terminal in Wireless LAN" (CQR 2011).`

// summaryColumns are the summary's columns, in text, JSON and markdown.
var summaryColumns = []string{"scenario", "case", "metric", "source", "published", "measured", "differs", "verdict"}

// SummaryTable is every comparison in one table.
func SummaryTable(cs []Comparison) Table {
	t := Table{Title: "Summary: measured beside published, with each verdict", Columns: summaryColumns,
		Notes: []string{"source: the document, the line and its FILE:LINE, the figure standing on that line; \"ours\": a figure no document gives. " + DocumentNames,
			"measured: the median over the seeds, with the range and their number when more than one.",
			"verdict: agrees or disagrees with the document's own claim, judged on the seeds' central half (25–75 %); reported: ours, or no claim we can judge here."}}
	for _, c := range cs {
		t.Rows = append(t.Rows, []string{c.Scenario, c.Case, c.Metric, sourceShown(c.Source), c.PublishedText, c.spread(), c.Differs, c.Verdict})
	}
	return t
}

func num(v float64, unit string) string {
	s := fmt.Sprintf("%.3g", v)
	if math.Abs(v) >= 1000 || v == math.Trunc(v) {
		s = fmt.Sprintf("%.0f", v)
	} else if math.Abs(v) >= 10 {
		s = fmt.Sprintf("%.1f", v)
	}
	if unit != "" {
		s += " " + unit
	}
	return s
}

// WriteText prints a result's tables, then its comparisons with their
// verdicts (the summary table, which `all` already ends with).
func WriteText(w io.Writer, r Result) error {
	var b strings.Builder
	tables := r.Tables
	if len(r.Comparisons) > 0 && !slices.ContainsFunc(tables, func(t Table) bool { return strings.HasPrefix(t.Title, "Summary") }) {
		tables = append(slices.Clone(tables), SummaryTable(r.Comparisons))
	}
	for _, t := range tables {
		fmt.Fprintf(&b, "%s\n\n", t.Title)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "%s\t\n", strings.Join(t.Columns, "\t"))
		for _, row := range t.Rows {
			fmt.Fprintf(tw, "%s\t\n", strings.Join(row, "\t"))
		}
		tw.Flush()
		for _, n := range t.Notes {
			fmt.Fprintf(&b, "  %s\n", n)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%s took %.0f s.\n", r.Scenario, r.Seconds)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes a result as one JSON object.
func WriteJSON(w io.Writer, r Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// job is one run of a scenario: a rig (cfg), or a run of its own
// (custom, as multiplexing's two branches are).
type job struct {
	name   string
	cfg    RigConfig
	custom func(ctx context.Context, tap func(link.Event), log *slog.Logger) (Measurement, error)
	// length is a custom run's real time (a rig's is its warm-up and
	// duration), for Plan.
	length time.Duration
}

// runLength is how long a job runs in real time.
func (j job) runLength() time.Duration {
	if j.custom != nil {
		return j.length
	}
	return j.cfg.Warmup + j.cfg.Duration
}

// Plan is what a scenario would run with o: how many runs, and about how
// long they take in real time, o.Parallel at a time (setting up each run
// and writing its report come on top).
type Plan struct {
	Runs int
	Wall time.Duration
}

type planKey struct{}

// errPlanned ends a scenario's Run once its runs are planned.
var errPlanned = errors.New("planned")

// Plan says how many runs s makes with o and about how long they take,
// without running any.
func (s Scenario) Plan(o Options) Plan {
	var p Plan
	ctx := context.WithValue(context.Background(), planKey{}, &p)
	s.Run(ctx, o) // ends with errPlanned from each runSeeded
	return p
}

// plan adds jobs to the plan: each goes to the first of parallel slots
// to come free, as runEach's semaphore hands them out.
func (p *Plan) add(jobs []job, parallel int) {
	slots := make([]time.Duration, max(parallel, 1))
	for _, j := range jobs {
		i := slices.Index(slots, slices.Min(slots))
		slots[i] += j.runLength()
	}
	p.Runs += len(jobs)
	p.Wall += slices.Max(slots)
}

// runSeeded makes a scenario's jobs for each of o's seeds (mk), runs them
// all, o.Parallel at a time, builds each seed's result from its runs
// (result) and merges them: every comparison over every seed.
func runSeeded(ctx context.Context, o Options, mk func(o Options) []job, result func(jobs []job, runs []RunResult) Result) (Result, error) {
	o = o.withDefaults()
	start := time.Now()
	all, ends := seededJobs(o, mk)
	if p, ok := ctx.Value(planKey{}).(*Plan); ok {
		p.add(all, o.Parallel)
		return Result{}, errPlanned
	}
	runs, err := runAll(ctx, o, all)
	if err != nil && ctx.Err() != nil {
		// Interrupted: the runs that finished, and the errors of any that
		// failed before.
		res := Result{Seconds: time.Since(start).Seconds()}
		var failed []error
		for _, e := range unwrapJoined(err) {
			if _, ok := e.(failedBefore); ok {
				failed = append(failed, e)
			}
		}
		for _, r := range runs {
			if r.Name != "" {
				res.Runs = append(res.Runs, r)
			}
		}
		return res, errors.Join(append(failed, &Interrupted{Finished: len(res.Runs), Total: len(runs)})...)
	}
	if err != nil {
		return Result{}, err
	}
	res, err := seededResult(all, ends, runs, result)
	res.Seconds = time.Since(start).Seconds()
	res.Options = saved(o)
	return res, err
}

// seededJobs are mk's jobs for each of o's seeds, in seed order, each
// named with its seed when there are several; ends[i] is where seed i's
// end.
func seededJobs(o Options, mk func(o Options) []job) (all []job, ends []int) {
	for i := range o.Seeds {
		so := o
		so.Seed = o.Seed + uint64(i)
		jobs := mk(so)
		if o.Seeds > 1 {
			for k := range jobs {
				jobs[k].name += fmt.Sprintf(" seed=%d", so.Seed)
			}
		}
		all = append(all, jobs...)
		ends = append(ends, len(all))
	}
	return all, ends
}

// seededResult builds each seed's result from its runs and merges them.
func seededResult(all []job, ends []int, runs []RunResult, result func(jobs []job, runs []RunResult) Result) (Result, error) {
	var rs []Result
	begin := 0
	for _, end := range ends {
		rs = append(rs, result(all[begin:end], runs[begin:end]))
		begin = end
	}
	return mergeSeeds(rs)
}

// Render rebuilds a saved result (a scenario's or all's, as --out wrote
// it) from its runs with this code's comparisons and verdicts, without
// running anything: a wording or verdict fix needs no new run. The runs
// must be the ones this code's jobs make with the saved options, in
// order (as root, the kernel's runs are among them).
func Render(saved Result) (Result, error) {
	if saved.Options == nil {
		return Result{}, errors.New("scenario: the saved result has no options (made before lab render existed): run it again")
	}
	o := saved.Options.options()
	scenarios := Scenarios()
	if saved.Scenario != "all" {
		s, ok := Find(saved.Scenario)
		if !ok {
			return Result{}, fmt.Errorf("scenario: the saved result is of %q, no scenario of this lab", saved.Scenario)
		}
		scenarios = []Scenario{s}
	}
	out := Result{Scenario: saved.Scenario, Command: saved.Command, Seconds: saved.Seconds, Options: saved.Options, Runs: saved.Runs}
	runs := saved.Runs
	for _, s := range scenarios {
		sd := s.seeding(o)
		all, ends := seededJobs(o, sd.mk)
		if len(runs) < len(all) {
			return Result{}, fmt.Errorf("scenario: %s: %d runs saved, its jobs are %d", s.Name, len(runs), len(all))
		}
		for i, j := range all {
			if runs[i].Name != j.name {
				return Result{}, fmt.Errorf("scenario: %s: saved run %d is %q, this code's job %q", s.Name, i, runs[i].Name, j.name)
			}
		}
		r, err := seededResult(all, ends, runs[:len(all)], sd.result)
		if err != nil {
			return Result{}, err
		}
		runs = runs[len(all):]
		out.Tables = append(out.Tables, r.Tables...)
		out.Comparisons = append(out.Comparisons, r.Comparisons...)
	}
	if len(runs) > 0 {
		return Result{}, fmt.Errorf("scenario: %d saved runs more than this code's jobs", len(runs))
	}
	if saved.Scenario == "all" {
		out.Tables = append(out.Tables, SummaryTable(out.Comparisons))
	}
	return out, nil
}

// runAll runs jobs, o.Parallel at a time, and returns their measurements
// in order; a run that did not finish has no name. With o.OutDir set each writes the audit's report of its
// viewer's circuit there, and with o.Pcap its capture too.
func runAll(ctx context.Context, o Options, jobs []job) ([]RunResult, error) {
	out := make([]RunResult, len(jobs))
	names := make([]string, len(jobs))
	for i, j := range jobs {
		names[i] = j.name
	}
	err := runEach(ctx, o, names, func(i int, tap func(link.Event)) error {
		j := jobs[i]
		if j.custom != nil {
			m, err := j.custom(ctx, tap, o.Log)
			if err == nil {
				out[i] = RunResult{Name: j.name, Measurement: m}
			}
			return err
		}
		cfg := j.cfg
		cfg.Tap = tap
		var vlog *viewerLog
		if o.OutDir != "" && cfg.Viewer != nil {
			vlog = &viewerLog{}
			cfg.ViewerTap = vlog.add
		}
		m, err := RunRig(ctx, cfg, o.Log)
		if err != nil {
			return err
		}
		if vlog != nil {
			if err := vlog.writeAudit(o.OutDir, j.name); err != nil {
				return err
			}
		}
		out[i] = RunResult{Name: j.name, Measurement: m}
		return nil
	})
	return out, err
}

// runEach calls run for each of the named runs, o.Parallel at a time, and
// joins their errors; with o.OutDir and o.Pcap set, tap writes the run's
// capture there (else it is nil).
func runEach(ctx context.Context, o Options, names []string, run func(i int, tap func(link.Event)) error) error {
	errs := make([]error, len(names))
	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	ended := func(name string) {
		if o.Progress == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		done++
		o.Progress(done, len(names), name)
	}
	if o.Progress != nil {
		o.Progress(0, len(names), "")
	}
	for i, name := range names {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			}
			defer func() { <-sem }()
			var tap func(link.Event)
			var capture *pcapFile
			if o.OutDir != "" && o.Pcap {
				var err error
				if capture, err = createPcap(o.OutDir, name); err != nil {
					errs[i] = err
					return
				}
				tap = capture.tap
			}
			err := run(i, tap)
			if capture != nil {
				err = errors.Join(err, capture.close())
			}
			if err != nil {
				errs[i] = fmt.Errorf("run %s: %w", name, err)
				if ctx.Err() == nil {
					errs[i] = failedBefore{errs[i]}
					ended(name)
				}
				return
			}
			ended(name)
			o.Log.Info("run done", "run", name)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// unwrapJoined lists the errors errors.Join joined (err itself when it
// joins none).
func unwrapJoined(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// failedBefore is the error of a run that failed while its context was
// still live: a failure, not the interruption's doing.
type failedBefore struct{ error }

func (f failedBefore) Unwrap() error { return f.error }

// RenderFile renders the result saved at path (Render): a directory
// --out wrote (its all.json, or its one scenario's JSON), or the file.
func RenderFile(path string) (Result, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		matches, _ := filepath.Glob(filepath.Join(path, "*.json"))
		switch {
		case slices.Contains(matches, filepath.Join(path, "all.json")):
			path = filepath.Join(path, "all.json")
		case len(matches) == 1:
			path = matches[0]
		default:
			return Result{}, fmt.Errorf("%s: no all.json, and %d results to choose from: name the file", path, len(matches))
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Result{}, err
	}
	var saved Result
	if err := json.Unmarshal(b, &saved); err != nil {
		return Result{}, fmt.Errorf("%s: %w", path, err)
	}
	res, err := Render(saved)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", path, err)
	}
	return res, nil
}

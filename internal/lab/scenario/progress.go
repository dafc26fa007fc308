package scenario

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
)

// Help lists the scenarios for fairgrid lab --help, each with how long
// it takes with parallel runs at once, then others: commands of their
// own, a name and a summary each.
func Help(parallel int, others ...[2]string) string {
	var b strings.Builder
	defaults := Options{Parallel: parallel}
	for _, s := range Scenarios() {
		fmt.Fprintf(&b, "  %-17s %s\n", s.Name, s.Summary)
		fmt.Fprintf(&b, "  %-17s %s\n", "", planText(s.Plan(defaults)))
	}
	all, _ := Find("all")
	fmt.Fprintf(&b, "  %-17s %s\n", "all", "every scenario, then one summary table")
	fmt.Fprintf(&b, "  %-17s %s\n", "", planText(all.Plan(defaults)))
	for _, o := range others {
		fmt.Fprintf(&b, "  %-17s %s\n", o[0], o[1])
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// planText says how long a scenario takes with the defaults.
func planText(p Plan) string {
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

// Progress says how far a scenario is: on a terminal one line redrawn
// every second (runs ended, time spent, an estimate of the time left);
// elsewhere a line as each run ends, so that a log shows it is alive.
type Progress struct {
	w        io.Writer
	name     string
	terminal bool
	now      func() time.Time
	start    time.Time

	// Planned is the scenario's planned length (Scenario.Plan), the time
	// left before a run has ended.
	Planned time.Duration

	mu          sync.Mutex
	ended, runs int
	drawn       bool
	stop        chan struct{}
	stopped     chan struct{}
}

// NewProgress is the progress of scenario name, written to w, a
// terminal or not; now is the clock.
func NewProgress(w io.Writer, name string, terminal bool, now func() time.Time) *Progress {
	return &Progress{w: w, name: name, terminal: terminal, now: now, start: now()}
}

// Start redraws the line every second on a terminal, until Done.
func (p *Progress) Start() {
	if p.terminal {
		p.stop, p.stopped = make(chan struct{}), make(chan struct{})
		go p.tick()
	}
}

func (p *Progress) tick() {
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

// Update is Options.Progress.
func (p *Progress) Update(ended, runs int, run string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended, p.runs = ended, runs
	if p.terminal {
		p.draw()
		return
	}
	if ended == 0 {
		fmt.Fprintf(p.w, "fairgrid lab: %s: %d runs, about %s in real time\n", p.name, runs, clock(p.Planned))
		return
	}
	fmt.Fprintf(p.w, "fairgrid lab: %s: run %d of %d done (%s), %s in\n", p.name, ended, runs, run, clock(p.now().Sub(p.start)))
}

// draw redraws the terminal's line; p.mu is held.
func (p *Progress) draw() {
	spent := p.now().Sub(p.start)
	line := fmt.Sprintf("fairgrid lab: %s: %s in", p.name, clock(spent))
	if p.runs > 0 {
		line = fmt.Sprintf("fairgrid lab: %s: %d of %d runs done, %s in", p.name, p.ended, p.runs, clock(spent))
		switch {
		case p.ended > 0 && p.ended < p.runs:
			left := time.Duration(float64(spent) / float64(p.ended) * float64(p.runs-p.ended))
			line += ", about " + clock(left) + " left"
		case p.ended == 0 && p.Planned > spent:
			line += ", about " + clock(p.Planned-spent) + " left"
		}
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s (Ctrl-C stops and prints what finished)", line)
	p.drawn = true
}

// Done ends the progress line.
func (p *Progress) Done() {
	if !p.terminal {
		return
	}
	if p.stop != nil {
		close(p.stop)
		<-p.stopped
	}
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

func clock(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

// WriteInterrupted says how far a scenario ir interrupted got, and what
// the runs that finished measured (res.Runs): Ctrl-C keeps what was
// measured.
func WriteInterrupted(w io.Writer, res Result, ir *Interrupted) error {
	fmt.Fprintf(w, "Interrupted after %.0f s: %d of %d runs of %s finished", res.Seconds, ir.Finished, ir.Total, res.Scenario)
	if ir.Finished == 0 {
		_, err := fmt.Fprintln(w, "; nothing measured yet.")
		return err
	}
	fmt.Fprintln(w, "; what they measured (the comparisons with the documents need every run):")
	fmt.Fprintln(w)
	return WriteRuns(w, res.Runs)
}

// Failures are the errors of err, a scenario's, other than the
// interruption: the runs that failed before it.
func Failures(err error) []error {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var failed []error
	for _, e := range errs {
		if _, ok := e.(*Interrupted); !ok && e != nil {
			failed = append(failed, e)
		}
	}
	return failed
}

// WriteJSONFile writes res as WriteJSON does into the file at path.
func WriteJSONFile(path string, res Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = WriteJSON(f, res)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// QuietAfter drops log records once ctx has ended: once a scenario is
// interrupted, its runs' complaints about their ending are noise.
func QuietAfter(ctx context.Context, h slog.Handler) slog.Handler { return quietAfter{ctx, h} }

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

package audit

import (
	"fmt"
	"io"
	"time"
)

// Progress draws a one-line progress bar: bytes read of the total,
// datagrams per second and the time left. It draws nothing during the
// first second, so that short audits stay quiet, and at most a few times a
// second. A nil *Progress does nothing, so that callers need no test.
type Progress struct {
	w         io.Writer
	total     int64
	now       func() time.Time
	counters  []*CountingReader
	start     time.Time
	last      time.Time
	datagrams int64
	drawn     bool
}

// Progress timing: quiet for short work, and redrawn no faster than a
// terminal shows it usefully.
const (
	progressQuiet  = time.Second
	progressRedraw = 250 * time.Millisecond
)

// NewProgress returns a bar on w for total bytes; now is the clock.
func NewProgress(w io.Writer, total int64, now func() time.Time) *Progress {
	t := now()
	return &Progress{w: w, total: total, now: now, start: t, last: t}
}

// Track adds an input's byte counter to the bytes read.
func (p *Progress) Track(c *CountingReader) {
	if p != nil && c != nil {
		p.counters = append(p.counters, c)
	}
}

// Update is Read's progress hook: progressEvery more datagrams were read.
func (p *Progress) Update() {
	if p == nil {
		return
	}
	p.datagrams += progressEvery
	t := p.now()
	if t.Sub(p.start) < progressQuiet || t.Sub(p.last) < progressRedraw {
		return
	}
	p.last = t
	p.draw(t)
}

func (p *Progress) read() int64 {
	var n int64
	for _, c := range p.counters {
		n += c.N
	}
	return n
}

func (p *Progress) draw(t time.Time) {
	read, elapsed := p.read(), t.Sub(p.start).Seconds()
	line := fmt.Sprintf("\r%s", mebibytes(read))
	if p.total > 0 {
		line += fmt.Sprintf(" of %s (%3.0f %%)", mebibytes(p.total), 100*float64(read)/float64(p.total))
	}
	line += fmt.Sprintf("  %.2f M datagrams/s", float64(p.datagrams)/elapsed/1e6)
	if p.total > 0 && read > 0 && read < p.total {
		left := time.Duration(elapsed * float64(p.total-read) / float64(read) * float64(time.Second))
		line += "  ETA " + left.Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "%-78s", line)
	p.drawn = true
}

// Done draws the final state and ends the line, if the work took longer
// than the quiet first second (read slowly, from a pipe say, it may have
// needed no Update to get there).
func (p *Progress) Done() {
	if p == nil {
		return
	}
	if t := p.now(); p.drawn || t.Sub(p.start) >= progressQuiet {
		p.draw(t)
		fmt.Fprintln(p.w)
	}
}

func mebibytes(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

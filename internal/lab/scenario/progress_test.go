package scenario

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestProgress: on a terminal the line is redrawn with the runs done,
// the time spent and an estimate of the time left, and cleared at the
// end; elsewhere a line per run.
func TestProgress(t *testing.T) {
	at := time.Unix(1000, 0)
	now := func() time.Time { return at }
	var term bytes.Buffer
	p := NewProgress(&term, "mongoose", true, now)
	at = at.Add(30 * time.Second)
	p.Update(3, 10, "loss=3% stock")
	p.Done()
	want := "\r\x1b[Kfairgrid lab: mongoose: 3 of 10 runs done, 0:30 in, about 1:10 left (Ctrl-C stops and prints what finished)"
	if got := term.String(); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "\r\x1b[K") {
		t.Errorf("terminal: %q, want %q then the line cleared", got, want)
	}
	var log bytes.Buffer
	p = NewProgress(&log, "mongoose", false, now)
	p.Planned = 100 * time.Second
	p.Update(0, 10, "")
	at = at.Add(65 * time.Second)
	p.Update(4, 10, "loss=3% window")
	p.Done()
	if got, want := log.String(), "fairgrid lab: mongoose: 10 runs, about 1:40 in real time\nfairgrid lab: mongoose: run 4 of 10 done (loss=3% window), 1:05 in\n"; got != want {
		t.Errorf("not a terminal: %q, want %q", got, want)
	}
}

// TestFailures: the interruption is not a failure; the runs that failed
// before it are.
func TestFailures(t *testing.T) {
	broken := errors.New("run 3: broken")
	if got := Failures(errors.Join(&Interrupted{Finished: 2, Total: 5}, broken)); len(got) != 1 || got[0] != broken {
		t.Errorf("Failures = %v, want [%v]", got, broken)
	}
	if got := Failures(&Interrupted{}); len(got) != 0 {
		t.Errorf("Failures of an interruption alone = %v", got)
	}
}

// TestWriteInterrupted: how far the scenario got, and nothing more when
// no run finished.
func TestWriteInterrupted(t *testing.T) {
	var b bytes.Buffer
	WriteInterrupted(&b, Result{Scenario: "mongoose", Seconds: 12}, &Interrupted{Finished: 0, Total: 4})
	if want := "Interrupted after 12 s: 0 of 4 runs of mongoose finished; nothing measured yet.\n"; b.String() != want {
		t.Errorf("%q, want %q", b.String(), want)
	}
}

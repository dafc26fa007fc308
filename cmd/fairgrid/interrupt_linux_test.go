//go:build linux

package main

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// interruptCases are long-running front-ends that print a partial result
// on stdout when Ctrl-C stops them (TestLabInterrupted and
// TestLabGatewayInterrupted check that result after one Ctrl-C); every
// front-end takes its signals from cli.RunContext.
var interruptCases = []struct {
	name  string
	args  []string
	ready *regexp.Regexp // a stderr line once the signals are caught
}{
	{"lab gateway", []string{"lab", "gateway", "--arms", "stock"},
		regexp.MustCompile(`^fairgrid lab gateway: (\d+) arms at once`)},
	{"lab scenario", []string{"lab", "wireless-buffers", "--duration", "5s", "--parallel", "1"},
		regexp.MustCompile(`^fairgrid lab: wireless-buffers: (\d+) runs, about`)},
}

// stopNotice is what the first Ctrl-C prints on stderr.
var stopNotice = regexp.MustCompile(`(?m)^(fairgrid [a-z ]+): Ctrl-C: stopping; Ctrl-C again quits at once$`)

// TestSecondInterruptQuits: a second Ctrl-C ends a command at once, even
// when its graceful stop cannot finish: it dies by SIGINT, as if the
// signal had never been caught, so a shell shows status 130 and a script
// running it stops too. The graceful stop is held here by a stdout that
// nobody reads (a full pipe, as a terminal paused with Ctrl-S or a
// stalled pager holds it). The test waits on stderr lines and the exit,
// each with a deadline, never on time alone.
func TestSecondInterruptQuits(t *testing.T) {
	for _, c := range interruptCases {
		t.Run(c.name, func(t *testing.T) {
			r, w := fullPipe(t)
			defer r.Close() // after the exit: an unread pipe, not a broken one
			defer w.Close()
			s := startBinaryTo(t, 2*time.Minute, w, c.args...)
			if s.waitLine(c.ready) == "" {
				s.cmd.Process.Kill()
				s.cmd.Wait()
				t.Fatalf("no start line on stderr:\n%s", s.errText())
			}
			noticed := make(chan bool, 1)
			exited := make(chan error, 1)
			go func() {
				seen := false
				for l := range s.lines {
					if !seen && stopNotice.MatchString(l) {
						seen = true
						noticed <- true
					}
				}
				if !seen {
					noticed <- false
				}
				exited <- s.cmd.Wait()
			}()
			if err := s.cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			select {
			case ok := <-noticed:
				if !ok {
					t.Fatalf("stderr ended without the notice after the first Ctrl-C:\n%s", s.errText())
				}
			case <-time.After(30 * time.Second):
				t.Errorf("no notice 30 s after the first Ctrl-C")
			}
			select {
			case err := <-exited:
				t.Fatalf("exited (%v) after the first Ctrl-C, with its stdout unread: the test held nothing", err)
			default:
			}
			if err := s.cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				s.cmd.Process.Kill()
				<-exited
				t.Fatalf("still running 10 s after the second Ctrl-C; stderr:\n%s", s.errText())
			}
			ws, ok := s.cmd.ProcessState.Sys().(syscall.WaitStatus)
			if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
				t.Errorf("ended %v, want killed by SIGINT (status 130 in a shell)", s.cmd.ProcessState)
			}
		})
	}
}

// fullPipe returns a pipe whose buffer is full: a write to w blocks until
// someone reads r.
func fullPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	size, err := unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, 4096)
	if err != nil {
		r.Close()
		w.Close()
		t.Skipf("skipped: cannot size a pipe: %v", err)
	}
	if _, err := w.Write(make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	return r, w
}

// TestInterruptNoticeLogged: a front-end that logs says it is stopping
// in its log, so that a JSON log stays JSON lines.
func TestInterruptNoticeLogged(t *testing.T) {
	s := startBinary(t, time.Minute, "sim", "--listen", "127.0.0.1:0", "--log-format", "json", "--duration", "1m")
	if s.waitLine(regexp.MustCompile(`"msg":"(region listening)"`)) == "" {
		_, _, errOut := s.interrupt(t)
		t.Fatalf("no start line on stderr:\n%s", errOut)
	}
	code, _, stderr := s.interrupt(t)
	noticed := false
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		var rec struct{ Msg, Signal string }
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Errorf("not a JSON line: %q", l)
		}
		noticed = noticed || rec.Msg == "stopping; the same signal again quits at once" && rec.Signal == "Ctrl-C"
	}
	if code != exitOK || !noticed {
		t.Errorf("exit %d, notice logged %v; want 0 and the notice:\n%s", code, noticed, stderr)
	}
}

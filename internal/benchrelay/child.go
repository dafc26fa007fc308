package benchrelay

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Child is a relay in a child process, so that a benchmark measures its
// CPU time and memory apart from the load's and the echo's.
type Child struct {
	Cmd  *exec.Cmd
	Addr string // the address it said it listens on
}

// StartChild starts cmd, the relay named name, and reads the lines it
// prints on stdout (on stderr with fromStderr) until addrIn finds the
// address it listens on; the rest is drained. A benchmark that fails
// before it stops the child does not leave it behind.
func StartChild(b testing.TB, name string, cmd *exec.Cmd, fromStderr bool, addrIn func(line string) (string, bool)) *Child {
	b.Helper()
	pipe, err := cmd.StdoutPipe()
	if fromStderr {
		pipe, err = cmd.StderrPipe()
	}
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		if addr, ok := addrIn(sc.Text()); ok {
			go func() {
				for sc.Scan() {
				}
			}()
			return &Child{Cmd: cmd, Addr: addr}
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	b.Fatalf("%s relay: no address", name)
	return nil
}

// CPU is the CPU time the child has used so far, all threads, user and
// system, in nanoseconds (the first field of each thread's
// /proc/PID/task/TID/schedstat): /proc/PID/stat counts in ticks of 10 ms,
// too coarse for a relay using 30 ms a second. Read around the measured
// part, it leaves out start-up and warm-up. A thread that exits takes its
// time with it, which a Go program's threads do not (the runtime keeps
// them).
func (c *Child) CPU(b testing.TB) time.Duration {
	dir := fmt.Sprintf("/proc/%d/task", c.Cmd.Process.Pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	for _, t := range tasks {
		s, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread ended between the listing and the read
		}
		ns, err := strconv.ParseInt(strings.Fields(string(s))[0], 10, 64)
		if err != nil {
			b.Fatalf("%s/%s/schedstat: %q", dir, t.Name(), s)
		}
		total += time.Duration(ns)
	}
	return total
}

// Memory is a field of the child's /proc/PID/status in bytes: VmHWM, its
// peak resident set (its own memory since exec, unlike rusage's, which a
// vfork-started child shares with the parent's), or VmRSS, now.
func (c *Child) Memory(b testing.TB, field string) float64 {
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.Cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(string(s), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			if err == nil {
				return kb * 1024
			}
		}
	}
	b.Fatal("no " + field)
	return 0
}

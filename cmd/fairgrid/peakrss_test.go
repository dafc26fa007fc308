//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// peakRSSFileEnv, when set, makes the test binary a measuring parent: it
// runs the command in its arguments, forwards SIGINT and SIGTERM to it,
// writes the command's peak RSS in bytes to the named file and exits with
// its exit code.
//
// A process started straight from the test cannot be measured by its own
// rusage: Go starts children with vfork (CLONE_VM), and exec records the
// peak RSS of the memory it leaves — the test process's, race detector
// and all — as the child's. Started from this small, freshly executed
// parent, the child's peak starts from the parent's few megabytes instead.
const peakRSSFileEnv = "FAIRGRID_TEST_PEAK_RSS_FILE"

func TestMain(m *testing.M) {
	if path := os.Getenv(peakRSSFileEnv); path != "" {
		os.Exit(runMeasured(path, os.Args[1:]))
	}
	code := m.Run()
	removeBuiltBinary()
	os.Exit(code)
}

func runMeasured(path string, argv []string) int {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = withoutEnv(os.Environ(), peakRSSFileEnv)
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "measuring parent:", err)
		return 125
	}
	go func() {
		for s := range signals {
			cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
	if werr := os.WriteFile(path, []byte(strconv.FormatInt(rss, 10)), 0o600); werr != nil {
		fmt.Fprintln(os.Stderr, "measuring parent:", werr)
		return 125
	}
	if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
		if status, ok := exit.Sys().(syscall.WaitStatus); ok && status.Signaled() {
			return 128 + int(status.Signal())
		}
		return exit.ExitCode()
	}
	return 0
}

func withoutEnv(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// measuredCommand is exec.Command(name, args...) run through the
// measuring parent; peakRSS, called after the command has been waited
// for, returns its peak RSS in bytes.
func measuredCommand(t *testing.T, name string, args ...string) (cmd *exec.Cmd, peakRSS func() int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "peak-rss")
	cmd = exec.Command(os.Args[0], append([]string{name}, args...)...)
	cmd.Env = append(os.Environ(), peakRSSFileEnv+"="+path)
	return cmd, func() int64 {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("peak RSS of %s: %v", name, err)
		}
		n, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil {
			t.Fatalf("peak RSS of %s: %v", name, err)
		}
		return n
	}
}

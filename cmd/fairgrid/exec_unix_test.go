//go:build unix

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAuditInterrupted: Ctrl-C while the audit reads a capture that is
// still being written (a FIFO) ends the read, prints the report of what
// was read with a warning that says so, and exits 0.
func TestAuditInterrupted(t *testing.T) {
	realPath := auditRealCapture(t)
	capture, err := os.ReadFile(realPath)
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(t.TempDir(), "growing.pcap")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("skipped: no FIFO: %v", err)
	}
	s := startBinary(t, time.Minute, "audit", fifo)
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// Half the capture; the pipe's writes return once the audit has read
	// all but what the pipe and its buffers hold. The writer stays open:
	// no end of file, as with a capture still running.
	if _, err := w.Write(capture[:len(capture)/2]); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := s.interrupt(t)
	if code != exitOK {
		t.Errorf("exit %d after Ctrl-C, want 0\n%s", code, stderr)
	}
	if !regexp.MustCompile(`fairgrid audit: warning: interrupted \(Ctrl-C\) after \d+ bytes: the report covers the datagrams read before`).MatchString(stderr) {
		t.Errorf("stderr does not say the report is partial:\n%s", stderr)
	}
	m := regexp.MustCompile(`growing.pcap: (\d+) bytes, (\d+) UDP datagrams`).FindStringSubmatch(stdout)
	if m == nil || m[2] == "0" || !strings.Contains(stdout, "127.0.0.1:55436 > 127.0.0.1:9000") {
		t.Errorf("the report of what was read is missing:\n%s", stdout)
	}
}

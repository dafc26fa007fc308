package region_test

import (
	"context"
	"net/netip"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/opensim/region"
)

// openFiles counts the process's open file descriptors.
func openFiles(t *testing.T) int {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("counting open files reads /proc/self/fd, which only Linux has")
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("counting open files: %v", err)
	}
	return len(fds)
}

func newRegion(t *testing.T) *region.Server {
	t.Helper()
	s, err := region.New(region.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCloseWithoutRun: New's socket is released by Close alone, and a
// second Close is harmless.
func TestCloseWithoutRun(t *testing.T) {
	// The first socket of the process also opens the runtime's poller,
	// which stays: open and close one before counting.
	newRegion(t).Close()
	before := openFiles(t)
	s := newRegion(t)
	if n := openFiles(t); n <= before {
		t.Fatalf("New opened no file: %d open before, %d after", before, n)
	}
	for i := range 2 {
		if err := s.Close(); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
	if n := openFiles(t); n != before {
		t.Errorf("%d files open after Close, %d before New", n, before)
	}
}

// TestCloseEndsRun: Close during Run ends it, and Run's own release
// after it closes nothing twice.
func TestCloseEndsRun(t *testing.T) {
	s := newRegion(t)
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after Close")
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close after Run: %v", err)
	}
}

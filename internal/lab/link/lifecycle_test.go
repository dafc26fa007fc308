package link

import (
	"context"
	"net/netip"
	"os"
	"runtime"
	"testing"
	"time"
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

// TestRelayCloseWithoutRun: the relay's listening socket, and a viewer's
// upstream socket that InjectUp opened, are released by Close alone; a
// second Close is harmless, and an InjectUp after it opens nothing.
func TestRelayCloseWithoutRun(t *testing.T) {
	cfg := Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Upstream: netip.MustParseAddrPort("127.0.0.1:9")}
	open := func() *Relay {
		r, err := New(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// The first socket of the process also opens the runtime's poller,
	// which stays: open and close one before counting.
	open().Close()
	before := openFiles(t)
	r := open()
	viewer := netip.MustParseAddrPort("127.0.0.1:40000")
	r.InjectUp(viewer, []byte("hello"))
	if n := openFiles(t); n < before+2 {
		t.Fatalf("New and InjectUp opened %d files, want the listening and the upstream socket", n-before)
	}
	for i := range 2 {
		if err := r.Close(); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
	r.InjectUp(netip.MustParseAddrPort("127.0.0.1:40001"), []byte("hello"))
	r.wg.Wait() // the upstream socket's reader
	if n := openFiles(t); n != before {
		t.Errorf("%d files open after Close, %d before New", n, before)
	}
}

// TestRelayCloseEndsRun: Close during Run ends it with nil, and Run's own
// release after it closes nothing twice.
func TestRelayCloseEndsRun(t *testing.T) {
	r, err := New(Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Upstream: netip.MustParseAddrPort("127.0.0.1:9")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	r.InjectUp(netip.MustParseAddrPort("127.0.0.1:40000"), []byte("hello"))
	if err := r.Close(); err != nil {
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
	if err := r.Close(); err != nil {
		t.Errorf("Close after Run: %v", err)
	}
}

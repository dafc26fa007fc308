package lifecycletest

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/throttle/group"
)

// Open returns how many files the process has open. It skips t where
// they cannot be counted.
func Open(t testing.TB) int {
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

// Released checks that what open acquires — at least least files — its
// Close releases, and that Close twice returns nil both times. open is
// called twice: the first value is closed before counting, since the
// process's first socket also opens the runtime's poller, which stays.
func Released(t testing.TB, least int, open func() io.Closer) {
	t.Helper()
	if err := open().Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	before := Open(t)
	c := open()
	if n := Open(t); n < before+least {
		t.Fatalf("opened %d files, want at least %d", n-before, least)
	}
	for i := range 2 {
		if err := c.Close(); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
	if n := Open(t); n != before {
		t.Errorf("%d files open after Close, %d before", n, before)
	}
}

// EndsRun checks that Close ends a Run in progress: it starts run, calls
// serving (which may wait until it serves), then Close, and wants run to
// return nil within ten seconds, and a second Close to return nil.
func EndsRun(t testing.TB, c io.Closer, run func(context.Context) error, serving func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- run(context.Background()) }()
	if serving != nil {
		serving()
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10 s of Close")
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close after Run: %v", err)
	}
}

// Serve runs a group until the test ends, as the commands run theirs:
// add puts in it what serves on a listener on addr; the group's error
// fails the test. It returns the listener's address.
func Serve(t testing.TB, addr string, add func(*group.Group, net.Listener)) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var g group.Group
	add(&g, ln)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("group: %v", err)
		}
	})
	return ln.Addr().String()
}

// FailsAtOnce runs run, a group's Run with a member that fails with
// broken, in a synctest bubble, and checks that the failure, named with
// want, reaches the caller at once: no virtual time passes.
func FailsAtOnce(t testing.TB, run func(context.Context) error, broken error, want string) {
	t.Helper()
	start := time.Now()
	err := run(context.Background())
	if !errors.Is(err, broken) || !strings.Contains(err.Error(), want) {
		t.Errorf("Run = %v, want the failure, named %q", err, want)
	}
	if d := time.Since(start); d != 0 {
		t.Errorf("the failure took %v of virtual time to reach the caller", d)
	}
}

// HeapInUse is the heap in use after a collection: what a test of a
// bound on memory compares before and after a flood.
func HeapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

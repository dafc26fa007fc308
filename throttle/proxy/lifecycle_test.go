package proxy

import (
	"context"
	"net"
	"os"
	"runtime"
	"testing"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/throttle"
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

// TestCloseWithoutRun: a proxy whose group never runs releases the
// listener AddTo was given, and its source, by Close alone; a second
// Close is harmless, and so is Close after the group ran.
func TestCloseWithoutRun(t *testing.T) {
	loop, err := throttle.New(throttle.Config{SimPorts: lludp.SimPorts}, nil)
	if err != nil {
		t.Fatal(err)
	}
	open := func() (*Proxy, *throttle.Group) {
		p, err := New(Config{}, throttle.SidecarConfig{Loop: loop}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var g throttle.Group
		p.AddTo(&g, ln)
		return p, &g
	}
	// The first socket of the process also opens the runtime's poller,
	// which stays: open and close one before counting.
	p, _ := open()
	p.Close()
	before := openFiles(t)
	p, _ = open()
	if n := openFiles(t); n <= before {
		t.Fatalf("the listener opened no file: %d open before, %d after", before, n)
	}
	for i := range 2 {
		if err := p.Close(); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
	if n := openFiles(t); n != before {
		t.Errorf("%d files open after Close, %d before New", n, before)
	}

	p, g := open()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.Run(ctx); err != nil {
		t.Fatalf("the group: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close after the group ran: %v", err)
	}
}

package gatewaylab

import (
	"os"
	"runtime"
	"testing"
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

// TestArmRigCloseWithoutRun: each arm's rig, built and never run,
// releases its sockets (region, gateway, relay, viewer or proxy
// listener) by Close alone, each member closed by its Close rather than
// run on an ended context; a second Close is harmless.
func TestArmRigCloseWithoutRun(t *testing.T) {
	for _, arm := range []Arm{Stock, Gateway, Sidecar, Proxy} {
		t.Run(string(arm), func(t *testing.T) {
			open := func() *ArmRig {
				r, err := NewArmRig(Config{}, arm, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			// The first socket of the process also opens the runtime's
			// poller, which stays: build and close one before counting.
			if err := open().Close(); err != nil {
				t.Fatal(err)
			}
			before := openFiles(t)
			r := open()
			if n := openFiles(t); n < before+2 {
				t.Fatalf("NewArmRig opened %d files, want the region's socket and the viewer's side", n-before)
			}
			for i := range 2 {
				if err := r.Close(); err != nil {
					t.Fatalf("Close #%d: %v", i+1, err)
				}
			}
			if n := openFiles(t); n != before {
				t.Errorf("%d files open after Close, %d before NewArmRig", n, before)
			}
		})
	}
}

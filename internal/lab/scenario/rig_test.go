package scenario

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/kerneltcp"
	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/internal/lab/tcpflow"
	"github.com/fairgrid/fairgrid/internal/lifecycletest"
)

// TestRunRigMemberFailure: a member of a rig's group that fails (here
// Linux's flow, refused a congestion control the kernel lacks) ends the
// whole run at once, every other member stopped, and its error is what
// RunRig returns, not a measurement.
func TestRunRigMemberFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("real time: skipped with -short")
	}
	if err := kerneltcp.Supported(); err != nil {
		t.Skipf("Linux TCP in network namespaces needs root, /dev/net/tun and iproute2 (CI runs as root): %v", err)
	}
	pc := link.PipeConfig{Rate: 6_000_000 / 8, Delay: 10 * time.Millisecond, Buffer: 100}
	start := time.Now()
	_, err := RunRig(context.Background(), RigConfig{Up: pc, Down: pc, Seed: 1, Warmup: 20 * time.Second, Duration: 20 * time.Second,
		TCP:    []tcpflow.FlowConfig{{Name: "cubic download", CC: tcpflow.CUBIC, Dir: tcpflow.Download}},
		Kernel: []kerneltcp.FlowConfig{{Name: "linux vegas upload", Congestion: "vegas"}}}, nil)
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "vegas") {
		t.Fatalf("RunRig: %v, want the kernel flow's refusal of vegas", err)
	}
	if took > 15*time.Second {
		t.Errorf("RunRig returned after %v: the failure did not stop the run (40 s planned)", took)
	}
	t.Logf("failed after %v: %v", took.Round(time.Millisecond), err)
}

// TestRigCloseReturnsKernelError: a rig whose kernel lab cannot remove its
// network namespaces says so from Close, rather than leaving them behind
// in silence. The removal is made to fail by taking iproute2's ip off
// PATH for the Close; the test then removes the namespaces itself.
func TestRigCloseReturnsKernelError(t *testing.T) {
	if err := kerneltcp.Supported(); err != nil {
		t.Skipf("Linux TCP in network namespaces needs root, /dev/net/tun and iproute2 (CI runs as root): %v", err)
	}
	ipTool, err := exec.LookPath("ip")
	if err != nil {
		t.Skipf("iproute2's ip is needed: %v", err)
	}
	ours := func() map[string]bool {
		names := map[string]bool{}
		entries, _ := os.ReadDir("/run/netns")
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), fmt.Sprintf("%s%d-", kerneltcp.NamePrefix, os.Getpid())) {
				names[e.Name()] = true
			}
		}
		return names
	}
	before := ours()
	pc := link.PipeConfig{Rate: 6_000_000 / 8, Delay: 10 * time.Millisecond, Buffer: 100}
	r, err := NewRig(context.Background(), RigConfig{Up: pc, Down: pc, Seed: 1, Warmup: time.Second, Duration: time.Second,
		Kernel: []kerneltcp.FlowConfig{{Name: "linux cubic upload", Congestion: "cubic"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var created []string
	for name := range ours() {
		if !before[name] {
			created = append(created, name)
		}
	}
	t.Cleanup(func() {
		for _, name := range created {
			if _, err := os.Stat("/run/netns/" + name); err == nil {
				if out, err := exec.Command(ipTool, "netns", "delete", name).CombinedOutput(); err != nil {
					t.Errorf("removing %s: %v: %s", name, err, out)
				}
			}
		}
	})
	if len(created) == 0 {
		t.Fatal("the rig created no namespace of this process's")
	}
	t.Setenv("PATH", t.TempDir())
	err = r.Close()
	if err == nil || !strings.Contains(err.Error(), "kerneltcp: close") || !strings.Contains(err.Error(), "netns delete") {
		t.Errorf("Close: %v; want the kernel lab's failure to delete its namespaces", err)
	}
	t.Logf("Close: %v", err)
}

// TestRigCloseWithoutRun: a rig built and never run releases its sockets
// (the region's, the relay's, the viewer's) by Close alone, each member
// closed by its Close rather than run on an ended context; a second
// Close is harmless.
func TestRigCloseWithoutRun(t *testing.T) {
	pc := link.PipeConfig{Rate: 6_000_000 / 8, Delay: 10 * time.Millisecond, Buffer: 100}
	cfg := RigConfig{Up: pc, Down: pc, Seed: 1, Warmup: time.Second, Duration: time.Second,
		TCP: []tcpflow.FlowConfig{{Name: "cubic download", CC: tcpflow.CUBIC, Dir: tcpflow.Download}}, Viewer: &RigViewer{Mode: Window}}
	lifecycletest.Released(t, 3, func() io.Closer {
		r, err := NewRig(context.Background(), cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	})
}

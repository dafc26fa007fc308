package scenario

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/kerneltcp"
	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/internal/lab/tcpflow"
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

package throttle

import (
	"bytes"
	"flag"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/collector.golden from the collector's output")

// goldenCircuit scripts one identified circuit with a ping, a lost
// packet, an AgentThrottle from the viewer and a decision, which evicts a
// circuit of no known agent.
func goldenCircuit(t *testing.T) *Loop {
	l, err := New(Config{Sims: []netip.AddrPort{simEP}, MaxCircuits: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A circuit of no known agent, evicted when the real one comes.
	for seq := range uint32(3) {
		spoofed(t, l, 0, netip.MustParseAddrPort("10.0.0.9:50000"), seq+1, &lludp.StartPingCheck{PingID: uint8(seq)})
	}
	f := &feed{t: t, l: l}
	f.send(0, true, lludp.FlagReliable, &lludp.UseCircuitCode{Code: 1, SessionID: agent.SessionID, AgentID: agent.AgentID})
	f.send(time.Millisecond, true, lludp.FlagReliable, &lludp.CompleteAgentMovement{AgentData: agent, CircuitCode: 1})
	f.send(2*time.Millisecond, true, 0, &lludp.StartPingCheck{PingID: 1})
	f.send(82*time.Millisecond, false, 0, &lludp.CompletePingCheck{PingID: 1})
	f.send(100*time.Millisecond, true, lludp.FlagZeroCoded, &lludp.AgentUpdate{AgentData: agent})
	f.send(110*time.Millisecond, true, lludp.FlagReliable|lludp.FlagZeroCoded, &lludp.AgentThrottle{AgentData: agent, CircuitCode: 1, Throttles: ViewerSplit(1536000 / 8)})
	f.stream(200*time.Millisecond, 50)
	f.down += 2 // two sequence numbers lost
	f.stream(800*time.Millisecond, 50)
	l.Tick(t0.Add(5 * time.Second))
	return l
}

// TestCollectorGolden (issue 11, item 10): the series the daemon's own
// collector exports for a scripted circuit, against a golden file. Run
// with -update after a deliberate change, and review the diff.
func TestCollectorGolden(t *testing.T) {
	c := &Collector{Loop: goldenCircuit(t), Capture: func() capture.Stats { return capture.Stats{Datagrams: 1234, KernelDrops: 5} }}
	names := []string{"fairgrid_circuit_rtt_seconds", "fairgrid_circuit_loss_event_rate", "fairgrid_circuit_receive_rate_bytes_per_second",
		"fairgrid_circuit_received_bytes_total", "fairgrid_circuit_target_rate_bytes_per_second", "fairgrid_circuit_viewer_request_bytes_per_second",
		"fairgrid_circuit_requests_sent_total", "fairgrid_circuits", "fairgrid_throttle_requests_sent_total", "fairgrid_throttle_reassertions_total",
		"fairgrid_circuits_evicted_total", "fairgrid_endpoints_folded_total",
		"fairgrid_packets_captured_total", "fairgrid_capture_drops_total", "fairgrid_decode_errors_total"}
	if *updateGolden {
		got, err := testutil.CollectAndFormat(c, expfmt.TypeTextPlain, names...)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("testdata/collector.golden", got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden, err := os.ReadFile("testdata/collector.golden")
	if err != nil {
		t.Fatal(err)
	}
	if err := testutil.CollectAndCompare(c, bytes.NewReader(golden), names...); err != nil {
		t.Error(err)
	}
	// The build's series carries the toolchain, which the golden file
	// cannot.
	got, err := testutil.CollectAndFormat(c, expfmt.TypeTextPlain, "fairgrid_build_info")
	if err != nil || !strings.Contains(string(got), `goversion="`+runtime.Version()+`"`) || !strings.Contains(string(got), `commit="unknown",`) {
		t.Errorf("build info %s, %v", got, err)
	}
}

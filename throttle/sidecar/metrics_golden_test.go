package sidecar

import (
	"bytes"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/collector.golden from the collector's output")

// goldenCircuit scripts one identified circuit with a ping, a lost
// packet, an AgentThrottle from the viewer and a decision, which evicts a
// circuit of no known agent.
func goldenCircuit(t *testing.T) *throttle.Loop {
	return goldenCircuitWith(t, throttle.SegmentMean)
}

func goldenCircuitWith(t *testing.T, segment throttle.Segment) *throttle.Loop {
	l, err := throttle.New(throttle.Config{Sims: []netip.AddrPort{simEP}, MaxCircuits: 1, Segment: segment}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A circuit of no known agent, evicted when the real one comes.
	for seq := range uint32(3) {
		observe(t, l, 0, netip.MustParseAddrPort("10.0.0.9:50000"), simEP, lludp.FlagReliable, seq+1, &lludp.StartPingCheck{PingID: uint8(seq)})
	}
	f := &feed{t: t, l: l}
	f.send(0, true, lludp.FlagReliable, &lludp.UseCircuitCode{Code: 1, SessionID: agent.SessionID, AgentID: agent.AgentID})
	f.send(time.Millisecond, true, lludp.FlagReliable, &lludp.CompleteAgentMovement{AgentData: agent, CircuitCode: 1})
	f.send(2*time.Millisecond, true, 0, &lludp.StartPingCheck{PingID: 1})
	f.send(82*time.Millisecond, false, 0, &lludp.CompletePingCheck{PingID: 1})
	f.send(100*time.Millisecond, true, lludp.FlagZeroCoded, &lludp.AgentUpdate{AgentData: agent})
	f.send(110*time.Millisecond, true, lludp.FlagReliable|lludp.FlagZeroCoded, &lludp.AgentThrottle{AgentData: agent, CircuitCode: 1, Throttles: throttle.ViewerSplit(1536000 / 8)})
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
	c := &Collector{Loop: goldenCircuit(t), Capture: func() capture.Stats { return capture.Stats{Datagrams: 1234, KernelDrops: 5} },
		Reloads: func() ReloadStats { return ReloadStats{Applied: 2, Rejected: 1} }}
	names := []string{"fairgrid_circuit_rtt_seconds", "fairgrid_circuit_loss_event_rate", "fairgrid_circuit_receive_rate_bytes_per_second",
		"fairgrid_circuit_received_bytes_total", "fairgrid_circuit_target_rate_bytes_per_second", "fairgrid_circuit_share_bytes_per_second", "fairgrid_circuit_tfrc_equation_bytes_per_second",
		"fairgrid_circuit_viewer_request_bytes_per_second",
		"fairgrid_circuit_requests_sent_total", "fairgrid_circuits", "fairgrid_throttle_requests_sent_total", "fairgrid_throttle_reassertions_total",
		"fairgrid_circuits_evicted_total", "fairgrid_endpoints_folded_total",
		"fairgrid_packets_captured_total", "fairgrid_capture_drops_total", "fairgrid_decode_errors_total", "fairgrid_config_reloads_total"}
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

// TestCollectorTCPFairRate: a circuit with a ping and a loss has the
// series, with the value TCPFairRate gives its summary; one without a loss
// has none.
func TestCollectorTCPFairRate(t *testing.T) {
	const name = "fairgrid_circuit_tfrc_equation_bytes_per_second"
	l := goldenCircuit(t)
	states := l.Snapshot()
	if len(states) != 1 {
		t.Fatalf("%d circuits", len(states))
	}
	want, ok := throttle.TCPFairRate(states[0].Summary, throttle.SegmentMean)
	if !ok {
		t.Fatal("the golden circuit has a ping and a loss, yet no TCP-fair rate")
	}
	got, err := testutil.CollectAndFormat(&Collector{Loop: l}, expfmt.TypeTextPlain, name)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), fmt.Sprint(float64(want))) {
		t.Errorf("exported %s, want %v", got, float64(want))
	}
	// The loop's segment setting reaches the gauge.
	nominalLoop := goldenCircuitWith(t, throttle.SegmentNominal)
	wantNominal, _ := throttle.TCPFairRate(nominalLoop.Snapshot()[0].Summary, throttle.SegmentNominal)
	got, err = testutil.CollectAndFormat(&Collector{Loop: nominalLoop}, expfmt.TypeTextPlain, name)
	if err != nil {
		t.Fatal(err)
	}
	if wantNominal == want || !strings.Contains(string(got), fmt.Sprint(float64(wantNominal))) {
		t.Errorf("with segment = nominal exported %s, want %v (mean: %v)", got, float64(wantNominal), float64(want))
	}

	lossless, err := throttle.New(throttle.Config{Sims: []netip.AddrPort{simEP}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &feed{t: t, l: lossless}
	f.send(0, true, 0, &lludp.StartPingCheck{PingID: 1})
	f.send(80*time.Millisecond, false, 0, &lludp.CompletePingCheck{PingID: 1})
	f.stream(100*time.Millisecond, 50)
	if st := lossless.Snapshot(); len(st) != 1 || st[0].Summary.RTTms == nil || st[0].Summary.Down.LossEventRate != 0 {
		t.Fatalf("want one circuit with an RTT and no loss: %+v", st)
	}
	if n := testutil.CollectAndCount(&Collector{Loop: lossless}, name); n != 0 {
		t.Errorf("%d series for a circuit without loss, want none", n)
	}
}

// TestCollectorOneShare: the share series is ratecalc.TCPShareRate at the
// controller's path RTT and loss event rate per segment, the formula
// `fairgrid rate` prints as one share, and differs from the TFRC
// equation's series, which is labelled as an equation.
func TestCollectorOneShare(t *testing.T) {
	l := goldenCircuit(t)
	states := l.Snapshot()
	if len(states) != 1 {
		t.Fatalf("%d circuits", len(states))
	}
	st := states[0].Control
	want := ratecalc.TCPShareRate(ratecalc.NominalSegmentSize, st.PathRTT, st.SegmentLossEventRate)
	if want <= 0 || throttle.OneShare(st) != want {
		t.Fatalf("OneShare %v, TCPShareRate at RTT %v and p %v: %v", throttle.OneShare(st), st.PathRTT, st.SegmentLossEventRate, want)
	}
	got, err := testutil.CollectAndFormat(&Collector{Loop: l}, expfmt.TypeTextPlain, "fairgrid_circuit_share_bytes_per_second")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), fmt.Sprint(float64(want))) {
		t.Errorf("exported %s, want %v", got, float64(want))
	}
	if eq, _ := throttle.TCPFairRate(states[0].Summary, throttle.SegmentMean); eq == want {
		t.Errorf("the equation's series equals one share (%v): the case cannot tell them apart", eq)
	}
	if throttle.OneShare(ratecalc.Stats{PathRTT: st.PathRTT}) != 0 {
		t.Error("one share before any loss event")
	}
}

package scenario

import (
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
)

// TestBranchPackets: a branch's packets on the shared link are summed
// over its flows: rates over the run's seconds, sizes and drops per packet
// arrived, queueing per packet forwarded.
func TestBranchPackets(t *testing.T) {
	report := func(arrived, dropped, bytes uint64, waits ...time.Duration) link.FlowReport {
		// What was not dropped got through, in proportion.
		r := link.FlowReport{FlowStats: link.FlowStats{Arrived: arrived, DroppedQueue: dropped, ArrivedBytes: bytes,
			Delivered: arrived - dropped, DeliveredBytes: bytes * (arrived - dropped) / arrived}}
		for _, w := range waits {
			r.QueueDelay.Add(w)
		}
		return r
	}
	for _, tc := range []struct {
		name    string
		reports []link.FlowReport
		seconds float64
		want    branchResult
	}{
		{"nothing", nil, 10, branchResult{GoodputKbps: 5}},
		{"one flow", []link.FlowReport{report(4, 1, 2000, 100*time.Millisecond, 200*time.Millisecond, 300*time.Millisecond)}, 2,
			branchResult{GoodputKbps: 5, IPKbps: 6, PacketsPerSecond: 2, MeanPacketBytes: 500, DropRate: 0.25, QueueDelayMeanMs: 200}},
		{"two flows weighed by their packets", []link.FlowReport{report(1, 0, 100, 400*time.Millisecond), report(4, 1, 700, 0, 0, 0)}, 5,
			branchResult{GoodputKbps: 5, IPKbps: 1, PacketsPerSecond: 1, MeanPacketBytes: 160, DropRate: 0.2, QueueDelayMeanMs: 100}},
		{"all dropped", []link.FlowReport{report(2, 2, 300)}, 1,
			branchResult{GoodputKbps: 5, PacketsPerSecond: 2, MeanPacketBytes: 150, DropRate: 1}},
	} {
		var p branchPackets
		for _, r := range tc.reports {
			p.add(r)
		}
		if got := p.result(5, tc.seconds); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestIdleFlows: each branch's row counts its own flows that delivered
// nothing in the measured part, and no other branch's.
func TestIdleFlows(t *testing.T) {
	for _, tc := range []struct {
		name           string
		flows          []TCPResult
		delayed, plain float64
	}{
		{"none idle", []TCPResult{{Name: "branch0 game0", GoodputBPS: 1470}, {Name: "branch1 game0", GoodputBPS: 1400}}, 0, 0},
		{"one each", []TCPResult{{Name: "branch0 game0", GoodputBPS: 0}, {Name: "branch0 game1", GoodputBPS: 900}, {Name: "branch1 game0", GoodputBPS: 0}}, 1, 1},
		{"delayed only", []TCPResult{{Name: "branch0 game0"}, {Name: "branch0 game1"}, {Name: "branch1 game10", GoodputBPS: 1}}, 2, 0},
	} {
		rows := idleFlows(multiplexCases[1], 15*time.Second, tc.flows)
		if len(rows) != 2 || rows[0].Measured != tc.delayed || rows[1].Measured != tc.plain {
			t.Errorf("%s: %v", tc.name, rows)
			continue
		}
		if rows[0].Judgement != Reported || rows[0].Case != multiplexCases[1].name {
			t.Errorf("%s: %q %q", tc.name, rows[0].Case, rows[0].Verdict)
		}
	}
}

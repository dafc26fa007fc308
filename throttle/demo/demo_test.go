package demo

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/throttle"
)

// TestDemo runs the embedded default for 90 s: a stock viewer asking for
// 1,536 kbit/s over a 2 Mbit/s, 3 %-loss, 50 ms link, window tracking. The
// region must apply each of fairgrid's requests within 2 intervals, every
// AgentThrottle of the viewer's own must be overridden within 100 ms, and
// the viewer must end within ±25 % of the TCP-fair rate of the model window
// tracking follows (Mathis). 90 s leaves nine intervals to average.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("a one-minute run: skipped with -short")
	}
	var rows []Row
	sum, err := Run(context.Background(), Config{Duration: 90 * time.Second}, nil, func(r Row) { rows = append(rows, r) })
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		t.Logf("t=%2.0f received %6.0f fair %s applied %7.0f fairgrid %s viewer %7.0f p=%.4f", r.T, r.RateBPS, fmtOpt(r.FairBPS), r.AppliedBPS, fmtOpt(r.FairgridRequestBPS), r.ViewerRequestBPS, r.LossEventRate)
	}
	t.Logf("summary %+v", sum)
	if len(rows) < 17 {
		t.Fatalf("%d intervals in 90 s", len(rows))
	}
	if sum.Requests == 0 || sum.MaxFollowIntervals == 0 || sum.MaxFollowIntervals > 2 {
		t.Errorf("the region applied requests within %d intervals (want 1–2); %d requests", sum.MaxFollowIntervals, sum.Requests)
	}
	if sum.Reasserts == 0 {
		t.Error("the viewer never overrode the throttle: its ±10 % rule should have")
	}
	if sum.MaxOverrideMs > 100 {
		t.Errorf("a viewer's AgentThrottle held %.0f ms before fairgrid's replaced it", sum.MaxOverrideMs)
	}
	if sum.RatioToFair < 0.75 || sum.RatioToFair > 1.25 {
		t.Errorf("the viewer received %.2f× the TCP-fair rate, want within ±25 %%", sum.RatioToFair)
	}
	if sum.ViewerRatioToFair < 2 {
		t.Errorf("the stock viewer asked for only %.2f× the fair rate: the demo would show nothing", sum.ViewerRatioToFair)
	}
}

func fmtOpt(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', 0, 64)
}

// TestLive is the same run on the daemon's production path, with the TFRC
// controller: fairgrid captures the viewer's datagrams on lo through
// AF_PACKET and sends its AgentThrottle with raw sockets as the viewer. It
// needs root (CI has it).
func TestLive(t *testing.T) {
	if testing.Short() {
		t.Skip("a one-minute run: skipped with -short")
	}
	sum, err := Run(context.Background(), Config{Duration: 90 * time.Second, Live: true, Loop: throttle.Config{Controller: "tfrc"}}, nil, nil)
	if err != nil {
		t.Skipf("live capture and raw sockets need CAP_NET_RAW (run as root; CI does): %v", err)
	}
	t.Logf("summary %+v", sum)
	if sum.Requests == 0 || sum.MaxFollowIntervals == 0 || sum.MaxFollowIntervals > 2 {
		t.Errorf("the region applied requests within %d intervals (want 1–2); %d requests", sum.MaxFollowIntervals, sum.Requests)
	}
	if sum.Reasserts == 0 || sum.MaxOverrideMs > 100 {
		t.Errorf("%d re-assertions; a viewer's AgentThrottle held %.0f ms", sum.Reasserts, sum.MaxOverrideMs)
	}
	if sum.RatioToFair < 0.75 || sum.RatioToFair > 1.25 {
		t.Errorf("the viewer received %.2f× the TCP-fair rate, want within ±25 %%", sum.RatioToFair)
	}
}

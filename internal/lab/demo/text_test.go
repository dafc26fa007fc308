package demo

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/fairgrid/fairgrid/throttle"
)

// TestDemoVerdictOneBasis (issue #20, item 4): after the rows, the demo's
// first line is its measure — the viewer's bytes/s ÷ the download's beside
// it, on the wire, with fairgrid, as the stock viewer and through the
// gateway; a ratio to the controller's equation comes once, labelled, on
// the payload the equation stands on. No figure divides wire bytes by the
// equation's rate: every "×" in the text is one of the summary's ratios.
// (The figures are the sample in docs/demo.md.)
func TestDemoVerdictOneBasis(t *testing.T) {
	side := func(download, viewer, fair, delay, p95 float64) *Side {
		return &Side{DownloadBPS: download, ViewerBPS: viewer, FairBPS: fair, ViewerOverDownload: viewer / download, QueueDelayMeanMs: delay, QueueDelayP95Ms: p95}
	}
	sum := Summary{Summary: true, Intervals: 12, IntervalSeconds: 5, Settled: true, FairModel: "tfrc per segment", Segment: throttle.SegmentMean,
		MeanRateBPS: 503e3, MeanFairBPS: 355e3, RatioToFair: 503.0 / 355, ViewerRatioToFair: 3.75, Reasserts: 2, MaxOverrideMs: 1,
		Stock: side(253e3, 747e3, 428e3, 287, 406), Fairgrid: side(461e3, 536e3, 355e3, 170, 356), Gateway: side(514e3, 481e3, 299e3, 261, 778)}
	var b strings.Builder
	WriteVerdict(&b, sum)
	out := b.String()
	ratio := func(v float64) string { return fmt.Sprintf("%.2f×", v) }

	first, _, _ := strings.Cut(out, "\n")
	share := regexp.MustCompile(`^Over the last half of the run, on the wire, the viewer got (\d+\.\d\d×) the bytes/s of the TCP download beside it with fairgrid, (\d+\.\d\d×) as the stock viewer alone, (\d+\.\d\d×) through fairgrid's gateway \(one TCP share: 0\.8–1\.25×\)\.$`)
	if m := share.FindStringSubmatch(first); m == nil || m[1] != ratio(sum.Fairgrid.ViewerOverDownload) || m[2] != ratio(sum.Stock.ViewerOverDownload) || m[3] != ratio(sum.Gateway.ViewerOverDownload) {
		t.Errorf("first line %q; want the viewer ÷ the download on the wire: %s with fairgrid, %s stock, %s through the gateway",
			first, ratio(sum.Fairgrid.ViewerOverDownload), ratio(sum.Stock.ViewerOverDownload), ratio(sum.Gateway.ViewerOverDownload))
	}

	var equation []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "TCP-fair") || strings.Contains(l, "fair rate") || strings.Contains(l, "equation") {
			equation = append(equation, l)
		}
	}
	if len(equation) != 1 || !strings.Contains(equation[0], "received 503 kbit/s of payload as fairgrid's loop counted it, "+ratio(sum.RatioToFair)+" the TCP-fair 355 kbit/s of the controller's own equation") ||
		!strings.Contains(equation[0], "the stock viewer asked for 3.75× that rate") {
		t.Errorf("lines about the equation's rate %q; want one, its ratio labelled: payload as the loop counted it ÷ the controller's equation", equation)
	}

	allowed := map[string]string{
		ratio(sum.Fairgrid.ViewerOverDownload): "viewer÷download with fairgrid", ratio(sum.Stock.ViewerOverDownload): "viewer÷download stock",
		ratio(sum.Gateway.ViewerOverDownload): "viewer÷download through the gateway", ratio(sum.RatioToFair): "payload ÷ the equation",
		ratio(sum.ViewerRatioToFair): "the stock request ÷ the equation", ratio(sum.Fairgrid.DownloadBPS / sum.Stock.DownloadBPS): "download with fairgrid ÷ stock",
		ratio(sum.Gateway.DownloadBPS / sum.Stock.DownloadBPS): "download through the gateway ÷ stock",
	}
	for _, r := range regexp.MustCompile(`\d+\.\d+×`).FindAllString(out, -1) {
		if _, ok := allowed[r]; !ok && r != "1.25×" {
			t.Errorf("%s in the text is none of the summary's ratios (wire bytes ÷ the equation's rate?):\n%s", r, out)
		}
	}
	t.Logf("\n%s", out)
}

// TestOverridesWording: the demo's verdict counts overrides in English.
func TestOverridesWording(t *testing.T) {
	for _, tc := range []struct {
		n    uint64
		want string
	}{
		{0, "The viewer sent no AgentThrottle of its own after fairgrid's first request, so fairgrid never had to override it"},
		{1, "fairgrid overrode the viewer's own AgentThrottle once, within 3 ms"},
		{4, "fairgrid overrode the viewer's own AgentThrottles 4 times, each within 3 ms"},
	} {
		if got := overrides(tc.n, 3.2); got != tc.want {
			t.Errorf("overrides(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

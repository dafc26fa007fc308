package demo

import (
	"fmt"
	"io"

	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/throttle"
)

// WriteHeader is the text before the rows: the set-up, and the rows'
// heading.
func WriteHeader(w io.Writer, cfg Config, linkSpec string, controller throttle.ControllerName) {
	if cfg.Duration < MinCompareDuration {
		fmt.Fprintf(w, "fairgrid demo: link %s, controller %s, segment %s, %v; a stock viewer asks for 1,536 kbit/s\n\n", linkSpec, controller, cfg.Loop.Segment, cfg.Duration)
	} else {
		fmt.Fprintf(w, "fairgrid demo: link %s, controller %s, segment %s, %v; a stock viewer asks for 1,536 kbit/s beside a bulk TCP download (CUBIC);\n", linkSpec, controller, cfg.Loop.Segment, cfg.Duration)
		if cfg.NoGateway {
			fmt.Fprintf(w, "the same set-up runs beside it without fairgrid, for the comparison at the end\n\n")
		} else {
			fmt.Fprintf(w, "the same set-up runs beside it without fairgrid, and with the stock viewer through fairgrid's gateway, for the comparison at the end\n\n")
		}
	}
	fmt.Fprintf(w, "%6s %12s %12s %8s %8s %12s %12s %12s\n", "t (s)", "received", "TCP-fair", "p", "RTT ms", "viewer asks", "fairgrid", "applied")
}

// WriteRow is a row of the text, one interval.
func WriteRow(w io.Writer, r Row) {
	kb := func(v float64) string { return fmt.Sprintf("%.0f kbit/s", v/1000) }
	opt := func(v *float64, f func(float64) string) string {
		if v == nil {
			return "-"
		}
		return f(*v)
	}
	fmt.Fprintf(w, "%6.0f %12s %12s %8.4f %8s %12s %12s %12s\n", r.T, kb(r.RateBPS), opt(r.FairBPS, kb), r.LossEventRate,
		opt(r.RTTms, func(v float64) string { return fmt.Sprintf("%.0f", v) }), kb(r.ViewerRequestBPS), opt(r.FairgridRequestBPS, kb), kb(r.AppliedBPS))
}

// WriteEnd is the text after the rows: the verdict, or for an interrupted
// run, that it was and the verdict for what ran, if anything did.
func WriteEnd(w io.Writer, sum Summary) {
	fmt.Fprintln(w)
	if sum.Interrupted {
		if sum.Intervals == 0 {
			fmt.Fprintln(w, "Interrupted before the first interval ended: nothing to judge.")
			return
		}
		fmt.Fprintf(w, "Interrupted after %d intervals; the verdict covers what ran.\n", sum.Intervals)
	}
	WriteVerdict(w, sum)
}

// WriteVerdict is the text after the rows: the share beside the
// download first, which is the verdict; then the controller's equation,
// labelled; the overrides; and the table behind the share.
func WriteVerdict(w io.Writer, sum Summary) {
	writeShare(w, sum)
	writeEquation(w, sum)
	fmt.Fprintf(w, "%s.\n", overrides(sum.Reasserts, sum.MaxOverrideMs))
	writeComparison(w, sum)
}

// writeShare is the demo's verdict, first: the viewer's bytes/s ÷ the
// download's beside it, on the wire, on the same link at the same time
// (one TCP share is 0.8–1.25×) — with fairgrid, as the stock viewer and
// through the gateway. Nothing before the run has settled, or without
// the download beside it.
func writeShare(w io.Writer, sum Summary) {
	if !sum.Settled || sum.Stock == nil || sum.Fairgrid == nil || sum.Stock.DownloadBPS <= 0 || sum.Fairgrid.DownloadBPS <= 0 {
		return
	}
	gateway := ""
	if sum.Gateway != nil && sum.Gateway.DownloadBPS > 0 {
		gateway = fmt.Sprintf(", %.2f× through fairgrid's gateway", sum.Gateway.ViewerOverDownload)
	}
	fmt.Fprintf(w, "Over the last half of the run, on the wire, the viewer got %.2f× the bytes/s of the TCP download beside it with fairgrid, %.2f× as the stock viewer alone%s (one TCP share: 0.8–1.25×).\n",
		sum.Fairgrid.ViewerOverDownload, sum.Stock.ViewerOverDownload, gateway)
}

// writeEquation says what fairgrid's controller aims at, labelled as
// its own equation and on one basis: the viewer's payload as fairgrid's
// loop counted it, as the equation's segments are payload, against the
// equation's rate at the loss and RTT the loop measured. A run too short
// for the controller gets its figures without a ratio that would read as
// a verdict.
func writeEquation(w io.Writer, sum Summary) {
	received := fmt.Sprintf("Over the last half of the run the viewer received %.0f kbit/s of payload as fairgrid's loop counted it", sum.MeanRateBPS/1000)
	equation := fmt.Sprintf("the controller's own equation (%s model, s = %s) at the loss and RTT the loop measured", sum.FairModel, segmentOf(sum))
	switch {
	case sum.MeanFairBPS <= 0:
		fmt.Fprintf(w, "%s; no loss was measured, so there is no TCP-fair rate to compare it with.\n", received)
	case !sum.Settled:
		fmt.Fprintf(w, "%s, beside the TCP-fair %.0f kbit/s of %s, but %s.\n", received, sum.MeanFairBPS/1000, equation, sum.TooShort())
	default:
		fmt.Fprintf(w, "%s, %.2f× the TCP-fair %.0f kbit/s of %s; the stock viewer asked for %.2f× that rate.\n",
			received, sum.RatioToFair, sum.MeanFairBPS/1000, equation, sum.ViewerRatioToFair)
	}
}

// writeComparison ends the demo with the table behind the verdict:
// the download beside the stock viewer, without fairgrid, with its
// sidecar and, unless left out, through its gateway, all on the wire.
func writeComparison(w io.Writer, sum Summary) {
	if sum.Stock == nil || sum.Fairgrid == nil {
		return
	}
	type row struct {
		name string
		s    *Side
	}
	rows := []row{{"stock viewer", sum.Stock}, {"with fairgrid", sum.Fairgrid}}
	sides := "the stock viewer alone and with fairgrid"
	if sum.Gateway != nil {
		rows = append(rows, row{"through the gateway", sum.Gateway})
		sides = "the stock viewer alone, with fairgrid's sidecar and through fairgrid's gateway"
	}
	fmt.Fprintf(w, "\nBeside a bulk TCP download (CUBIC) on the same link, %s, side by side, last half of the run, on the wire:\n\n", sides)
	fmt.Fprintf(w, "%-20s %14s %16s %18s %22s\n", "", "download", "viewer received", "viewer÷download", "viewer queueing delay")
	for _, r := range rows {
		share := "-"
		if r.s.DownloadBPS > 0 {
			share = fmt.Sprintf("%.2f×", r.s.ViewerOverDownload)
		}
		fmt.Fprintf(w, "%-20s %14s %16s %18s %22s\n", r.name, fmt.Sprintf("%.0f kbit/s", r.s.DownloadBPS/1000), fmt.Sprintf("%.0f kbit/s", r.s.ViewerBPS/1000),
			share, fmt.Sprintf("%.0f ms (p95 %.0f)", r.s.QueueDelayMeanMs, r.s.QueueDelayP95Ms))
	}
	if !sum.Settled {
		fmt.Fprintf(w, "\nThese figures are the controller's start-up, not a verdict on its share.\n")
		return
	}
	if sum.Stock.DownloadBPS > 0 {
		fmt.Fprintf(w, "\nWith fairgrid the download got %.2f× what it got beside the stock viewer.\n", sum.Fairgrid.DownloadBPS/sum.Stock.DownloadBPS)
		if sum.Gateway != nil {
			fmt.Fprintf(w, "Through the gateway it got %.2f× what it got beside the stock viewer.\n", sum.Gateway.DownloadBPS/sum.Stock.DownloadBPS)
		}
	}
}

// segmentOf says what s the demo's fair rates stand on: the virtual
// TCP's are always full segments, whatever the segment setting.
func segmentOf(sum Summary) string {
	if sum.FairModel == "tfrc per segment" {
		return "1460 B, losses counted by bytes"
	}
	return segmentName(sum.Segment)
}

// segmentName says what s a segment setting stands for.
func segmentName(s throttle.Segment) string {
	if s == throttle.SegmentNominal {
		return "1460 B, nominal"
	}
	return "the mean payload"
}

// overrides says how often fairgrid overrode the stock viewer's own
// AgentThrottles, and how fast.
func overrides(n uint64, maxMs float64) string {
	switch n {
	case 0:
		return "The viewer sent no AgentThrottle of its own after fairgrid's first request, so fairgrid never had to override it"
	case 1:
		return fmt.Sprintf("fairgrid overrode the viewer's own AgentThrottle once, within %.0f ms", maxMs)
	}
	return fmt.Sprintf("fairgrid overrode the viewer's own AgentThrottles %d times, each within %.0f ms", n, maxMs)
}

// LinkConfig is the demo's configuration for --link,
// RATE,DELAY,LOSS,BUFFER, read with the parsers of fairgrid link.
func LinkConfig(spec string) (Config, error) {
	l, err := link.ParsePipe(spec)
	if err != nil {
		return Config{}, fmt.Errorf("--link %w", err)
	}
	return Config{Link: l}, nil
}

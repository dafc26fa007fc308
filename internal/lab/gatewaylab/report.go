package gatewaylab

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/fairgrid/fairgrid/opensim"
)

// WriteText writes r as the command prints it: the link, then a line per
// arm, then the gateway's own view.
func WriteText(w io.Writer, r Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "link: %.0f kbit/s, %.0f ms one way, a %d-datagram buffer, each way, %g %% loss towards the viewer; a CUBIC download (gVisor) and a stock viewer asking %.0f kbit/s; seed %d\n",
		r.LinkBPS/1000, r.DelayMs, r.Buffer, 100*r.Loss, r.ThrottleBP/1000, r.Seed)
	fmt.Fprintf(&b, "each arm a cell of lab fairness's rig (fairgrid sim's region with OpenSim's category buckets; the download starts once the viewer is in)\n")
	fmt.Fprintf(&b, "measured %.0f s after a %.0f s warm-up (real time)\n\n", r.DurationS, r.WarmupS)
	fmt.Fprintf(&b, "%-16s %10s %10s %9s %10s %12s %12s %8s\n", "viewer", "download", "viewer", "download", "viewer ÷", "queue delay", "queue delay", "seconds")
	fmt.Fprintf(&b, "%-16s %10s %10s %9s %10s %12s %12s %8s\n", "reaches", "wire kb/s", "kbit/s", "share", "download", "mean ms", "p95 ms", "")
	for _, a := range r.Arms {
		fmt.Fprintf(&b, "%-16s %10.0f %10.0f %9.2f %10.2f %12.1f %12.1f %8.1f\n", a.Arm, a.DownloadWireBPS/1000, a.ViewerBPS/1000, a.DownloadShare,
			a.ViewerOverDownload, a.QueueDelayMeanMs, a.QueueDelayP95Ms, a.Seconds)
	}
	for _, a := range r.Arms {
		gv := a.Gateway
		if gv == nil {
			continue
		}
		fmt.Fprintf(&b, "\n%s, the gateway (%s): fair rate %.0f kbit/s, in force %.0f kbit/s, loss event rate %.4f, RTT %.0f ms; %d AgentThrottles asserted, %d rewritten\n",
			a.Arm, gv.Controller, gv.FairBPS/1000, gv.RateBPS/1000, gv.LossEventRate, gv.RTTms, gv.Asserts, gv.Rewrites)
		fmt.Fprintf(&b, "the rate in force varied %.3f (coefficient of variation, once a second)", gv.RateCV)
		switch a.Arm {
		case Sidecar:
			fmt.Fprintf(&b, "; the client side sent %d requests", gv.ClientRequests)
		}
		fmt.Fprintf(&b, "\ngateway queueing delay: mean %.2f ms", gv.QueueDelayMeanMs)
		var chans []string
		for ch := range opensim.Channel(opensim.NumChannels) {
			if ms, ok := gv.ByChannelMs[ch.String()]; ok {
				chans = append(chans, fmt.Sprintf("%s %.2f", ch, ms))
			}
		}
		slices.Sort(chans)
		if len(chans) > 0 {
			fmt.Fprintf(&b, " (%s ms)", strings.Join(chans, ", "))
		}
		b.WriteString("\n")
	}
	b.WriteString("\nTCP-fair means one share: viewer ÷ download within 0.8–1.25.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes r as one JSON object.
func WriteJSON(w io.Writer, r Result) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(r)
}

package status

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteText writes the snapshot for a terminal (`fairgrid status`): a
// line on the front-end and its health, the gateway's routes, then one
// line per circuit.
func WriteText(w io.Writer, s Snapshot) error {
	state := "working"
	if !s.Healthy {
		state = "NOT WORKING"
	}
	fmt.Fprintf(w, "fairgrid %s: %s (%s); %d circuit(s); running %v\n", s.Front, state, strings.Join(s.Health, "; "), len(s.Circuits), s.At.Sub(s.Started).Round(time.Second))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(s.Routes) > 0 {
		fmt.Fprintln(tw, "ROUTE\tREGION\tANSWERS\tCIRCUITS")
		for _, r := range s.Routes {
			answers := "yes"
			if !r.Answers {
				answers = "no, for " + r.Waiting
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", r.Listen, r.Region, answers, r.Circuits)
		}
		fmt.Fprintf(tw, "established %d, pending %d\n", s.Established, s.Pending)
		var refused []string
		for _, c := range s.Refusals {
			if c.N > 0 {
				refused = append(refused, fmt.Sprintf("%s %d", c.Name, c.N))
			}
		}
		if len(refused) > 0 {
			fmt.Fprintf(tw, "refused: %s\n", strings.Join(refused, ", "))
		}
		tw.Flush()
	}
	if len(s.Circuits) == 0 {
		fmt.Fprintln(w, "no circuit")
		return tw.Flush()
	}
	fmt.Fprintln(tw, "REGION\tVIEWER\tRECEIVED\tASKS\tSHARE\tVIEWER ASKED\tLOSS\tRTT\tQUEUE\tWHY")
	for _, c := range s.Circuits {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Region, c.Viewer, Kbit(c.ReceivedBPS), orDash(c.AskedBPS), orDash(c.ShareBPS),
			orDash(c.ViewerAskedBPS), Percent(c.Loss), Millis(c.RTTms), Millis(c.QueueMs), c.Why)
	}
	return tw.Flush()
}

func orDash(bps float64) string {
	if bps <= 0 {
		return "-"
	}
	return Kbit(bps)
}

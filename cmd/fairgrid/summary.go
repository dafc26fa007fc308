package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/fairgrid/fairgrid/throttle/circuit"
)

// writeSummaryTable prints one row per circuit: the down direction (the
// throttled one) in full, and the RTT signals.
func writeSummaryTable(w io.Writer, cs []*circuit.Circuit) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "viewer\tsim\tagent\tpackets\tkbit/s\tlost\tloss events\tp\tresent\tspurious\tdup\treordered\tRTT ms\tack RTT ms\t")
	for _, c := range cs {
		s := c.Summary()
		agent := s.AgentID
		if agent == "" {
			agent = "?"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.1f\t%d\t%d\t%.4f\t%d\t%d\t%d\t%d\t%s\t%s\t\n",
			s.Viewer, s.Sim, agent, s.Down.Packets, s.Down.RateBPS/1000, s.Down.Lost, s.Down.LossEvents, s.Down.LossEventRate,
			s.Down.Resent, s.Down.SpuriousResends, s.Down.Duplicates, s.Down.Reordered, optMillis(s.RTTms), optMillis(s.AckRTTms))
	}
	tw.Flush()
}

func optMillis(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", *v)
}

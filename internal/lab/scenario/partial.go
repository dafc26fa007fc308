package scenario

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteRuns prints what each finished run measured, one line a run: what
// an interrupted scenario has, before the comparisons that need every
// run. Columns no run has are left out.
func WriteRuns(w io.Writer, runs []RunResult) error {
	var hasViewer, hasTCP, hasBranches bool
	for _, r := range runs {
		hasViewer = hasViewer || r.Measurement.Viewer != nil
		hasTCP = hasTCP || len(r.Measurement.TCP) > 0
		hasBranches = hasBranches || len(r.Measurement.Branches) > 0
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	head := []string{"run"}
	if hasViewer {
		head = append(head, "viewer received", "viewer p", "viewer RTT")
	}
	if hasTCP {
		head = append(head, "TCP flows' goodput")
	}
	if hasBranches {
		head = append(head, "branches, client→server")
	}
	fmt.Fprintf(tw, "%s\t\n", strings.Join(head, "\t"))
	for _, r := range runs {
		m := r.Measurement
		row := []string{r.Name}
		if hasViewer {
			if v := m.Viewer; v != nil {
				row = append(row, kbits(v.Down.ThroughputBPS), fmt.Sprintf("%.4f", v.LossEventRate), fmt.Sprintf("%.0f ms", v.RTTms))
			} else {
				row = append(row, "-", "-", "-")
			}
		}
		if hasTCP {
			row = append(row, goodputs(m.TCP))
		}
		if hasBranches {
			var bs []string
			for _, br := range m.Branches {
				bs = append(bs, fmt.Sprintf("%s %.0f kbit/s", br.Branch, br.UpKbps))
			}
			row = append(row, orDash(strings.Join(bs, ", ")))
		}
		fmt.Fprintf(tw, "%s\t\n", strings.Join(row, "\t"))
	}
	tw.Flush()
	_, err := io.WriteString(w, b.String())
	return err
}

// kbits is a rate with its unit.
func kbits(bps float64) string { return kbit(bps) + " kbit/s" }

// goodputs names up to three flows' goodputs, and summarises more.
func goodputs(fs []TCPResult) string {
	if len(fs) == 0 {
		return "-"
	}
	if len(fs) <= 3 {
		var parts []string
		for _, f := range fs {
			parts = append(parts, f.Name+" "+kbits(f.GoodputBPS))
		}
		return strings.Join(parts, ", ")
	}
	lo, hi, sum := fs[0].GoodputBPS, fs[0].GoodputBPS, 0.0
	for _, f := range fs {
		lo, hi, sum = min(lo, f.GoodputBPS), max(hi, f.GoodputBPS), sum+f.GoodputBPS
	}
	return fmt.Sprintf("%d flows: mean %s, %s to %s", len(fs), kbits(sum/float64(len(fs))), kbits(lo), kbits(hi))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

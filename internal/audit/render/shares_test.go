package render

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"
)

// TestWriteSharesHTML: a page per panel set, the cells in its table, an
// SVG per panel; no panels is an error.
func TestWriteSharesHTML(t *testing.T) {
	var b bytes.Buffer
	err := WriteSharesHTML(&b, "shares", []SharePanel{
		{Title: "vtcp", Cells: []ShareCell{{Label: "cubic, 6 Mbit/s", Ratio: 0.97, Lo: 0.8, Hi: 1.2}, {Label: "reno <b>", Ratio: 1.3, Lo: 1.1, Hi: 1.5}}},
		{Title: "window", Cells: []ShareCell{{Label: "cubic, 6 Mbit/s", Ratio: 0.05}, {Label: "no TCP moved", Ratio: 0}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"<h2>vtcp</h2>", "<h2>window</h2>", "reno &lt;b&gt;", "0.97", "1.30"} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(out, "<svg"); n != 2 {
		t.Errorf("%d SVG figures, want 2", n)
	}
	if err := WriteSharesHTML(&b, "none", nil); err == nil {
		t.Error("no panels: no error")
	}
}

// TestShareFigureTicks: the ratio axis is labelled as its values are
// written (0.7, not 0.7000000000000001), the cells only at whole
// numbers, and the band's lines in the legend.
func TestShareFigureTicks(t *testing.T) {
	svg, err := shareFigure(SharePanel{Title: "vtcp", Cells: []ShareCell{{Ratio: 0.72, Lo: 0.61, Hi: 0.9}, {Ratio: 1.1}, {Ratio: 1.4}}})
	if err != nil {
		t.Fatal(err)
	}
	out := string(svg)
	if strings.Contains(out, "0000000") {
		t.Error("the figure has a label written with float noise")
	}
	for _, want := range []string{">1<", ">2<", ">3<", "0.8 and 1.25: the promised band", "1: one TCP flow"} {
		if !strings.Contains(out, want) {
			t.Errorf("the figure lacks %q", want)
		}
	}
	for _, tk := range cellTicks(3) {
		if tk.Value != math.Trunc(tk.Value) || tk.Label != strconv.Itoa(int(tk.Value)) {
			t.Errorf("cell tick %+v", tk)
		}
	}
	var labels []string
	for _, tk := range (fewDecadesTicks{}).Ticks(0.62, 0.95) {
		labels = append(labels, tk.Label)
	}
	if strings.Join(labels, " ") != "0.7 0.8 0.9" {
		t.Errorf("ticks over 0.62–0.95 labelled %q, want 0.7 0.8 0.9", labels)
	}
}

package render

import (
	"bytes"
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

//go:build linux

package render

import (
	"bytes"
	"fmt"
	"image/png"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/audit"
	"github.com/fairgrid/fairgrid/internal/browsertest"
)

type figureBox struct {
	ID       string  `json:"id"`
	X        float64 `json:"x"`
	Y        float64 `json:"y"`
	W        float64 `json:"w"`
	H        float64 `json:"h"`
	BBoxW    float64 `json:"bboxW"`
	BBoxH    float64 `json:"bboxH"`
	Drawn    int     `json:"drawn"`
	Overflow bool    `json:"overflow"`
}

// measure is run in the page by the test (the page itself has no
// script): each figure's box on the page, its SVG's bounding box, and how
// many of its drawing elements have a non-empty one.
const measure = `JSON.stringify(Array.from(document.querySelectorAll('figure')).map(f => {
  const svg = f.querySelector('svg');
  const r = f.getBoundingClientRect();
  const b = svg ? svg.getBBox() : {width: 0, height: 0};
  let drawn = 0;
  if (svg) for (const e of svg.querySelectorAll('path, line, circle, rect, polygon, polyline, text')) {
    const eb = e.getBBox();
    if (eb.width > 0 || eb.height > 0) drawn++;
  }
  return {id: f.id, x: r.left + window.scrollX, y: r.top + window.scrollY, w: r.width, h: r.height,
          bboxW: b.width, bboxH: b.height, drawn: drawn,
          overflow: svg ? svg.getBoundingClientRect().width > r.width + 1 : false};
}))`

// layoutCheck is run in the page by the test: the widest element's right
// edge and the page's scroll width, each figure's data elements that
// leave its plot box (by more than a glyph's radius: glyphs at the edge of
// the data reach into the frame's margin), and the counts the page's
// first paragraph states beside those of its tables.
const layoutCheck = `JSON.stringify((() => {
  let right = 0, widest = '';
  for (const e of document.querySelectorAll('body *')) {
    if (e.closest('#circuit-details')) continue; // the columns on demand, in a scroller of their own
    const r = e.getBoundingClientRect();
    if (r.width > 0 && r.right > right) { right = r.right; widest = e.tagName + (e.id ? '#' + e.id : '') + (e.className && typeof e.className === 'string' ? '.' + e.className : ''); }
  }
  const outside = [];
  let points = 0;
  for (const f of document.querySelectorAll('figure')) {
    const boxEl = f.querySelector('rect.plot-box');
    if (!boxEl) { outside.push(f.id + ': no plot box'); continue; }
    const box = boxEl.getBoundingClientRect();
    const frame = f.querySelector('svg').getBoundingClientRect();
    for (const e of f.querySelectorAll('svg text')) {
      const r = e.getBoundingClientRect();
      if (r.width > 0 && (r.left < frame.left - 1 || r.right > frame.right + 1))
        outside.push(f.id + ': text "' + e.textContent + '" cut at the figure\'s edge');
    }
    const tol = 6;
    for (const g of f.querySelectorAll('g.data')) for (const e of g.querySelectorAll('path, line, circle, rect, polygon, polyline')) {
      const r = e.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) continue;
      points++;
      if (r.left < box.left - tol || r.right > box.right + tol || r.top < box.top - tol || r.bottom > box.bottom + tol)
        outside.push(f.id + ': ' + e.tagName + ' at ' + [r.left, r.top, r.right, r.bottom].map(Math.round) + ' outside ' + [box.left, box.top, box.right, box.bottom].map(Math.round));
    }
  }
  const num = s => Number(s.replace(/[\u2009\s]/g, ''));
  const head = document.querySelector('p').textContent;
  const m = head.match(/(\d+) file\(s\), ([\d\u2009]+) datagrams, (\d+) circuit directions/);
  const files = Array.from(document.querySelectorAll('#file-table tbody tr'));
  const circuits = document.querySelectorAll('#circuit-table tbody tr').length;
  const full = document.querySelectorAll('#circuit-table-full tbody tr').length;
  return {right: right, widest: widest, scrollWidth: document.documentElement.scrollWidth, outside: outside, points: points,
    said: m ? [num(m[1]), num(m[2]), num(m[3])] : null,
    tables: [files.length, files.reduce((n, tr) => n + num(tr.children[2].textContent), 0), circuits, full]};
})())`

type layout struct {
	Right       float64   `json:"right"`
	Widest      string    `json:"widest"`
	ScrollWidth float64   `json:"scrollWidth"`
	Outside     []string  `json:"outside"`
	Points      int       `json:"points"`
	Said        []float64 `json:"said"`
	Tables      []float64 `json:"tables"`
}

// laptopWidth is the viewport the pages must fit: a 1,366 px laptop
// screen.
const laptopWidth = 1366

// checkLayout measures the page loaded and says what is wrong with it:
// anything wider than the laptop's screen, a figure's data outside its
// plot box, or counts the page states that differ from its tables' (the
// whole report: hidden is how many circuits the tables leave out).
func checkLayout(t *testing.T, d *browsertest.Page, hidden int) (layout, []string) {
	t.Helper()
	var l layout
	d.EvalJSON(t, "checking the layout", layoutCheck, &l)
	var bad []string
	if l.Right > laptopWidth || l.ScrollWidth > laptopWidth {
		bad = append(bad, fmt.Sprintf("the page is %.0f px wide (scroll width %.0f; widest element %s), the screen %d", l.Right, l.ScrollWidth, l.Widest, laptopWidth))
	}
	for _, o := range l.Outside {
		bad = append(bad, "outside its plot: "+o)
	}
	switch {
	case len(l.Said) != 3:
		bad = append(bad, "the page's first paragraph states no counts of files, datagrams and circuits")
	case l.Said[0] != l.Tables[0] || l.Said[1] != l.Tables[1] || l.Said[2] != l.Tables[2]+float64(hidden) || l.Tables[2] != l.Tables[3]:
		bad = append(bad, fmt.Sprintf("the page says %v files, datagrams and circuits; its tables hold %v (and %d circuits not shown)", l.Said, l.Tables, hidden))
	}
	return l, bad
}

// TestHTMLInBrowser opens reports in headless Chromium on a 1,366 px wide
// laptop screen (one browser, a page per report: the synthetic grid and,
// when it is there, the real OpenSim capture, as the audit and as the lab
// reports it), checks that every figure renders with a non-empty SVG
// bounding box, that nothing is wider than the screen, that every
// figure's data lie inside its plot box, that the counts the page states
// are its tables', and that the browser reports no console error, and
// saves a screenshot of each figure (FAIRGRID_ARTIFACTS, or the test's
// temporary directory).
func TestHTMLInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: starts a browser")
	}
	chromium := browsertest.Chromium(t)
	dir := artifacts(t)
	reports := []struct {
		name   string
		report func(t *testing.T) *audit.Report
	}{
		{"grid", func(*testing.T) *audit.Report { return makeReport(1, 12, 600) }},
		{"real", func(t *testing.T) *audit.Report { return realReport(t) }},
		{"lab", func(t *testing.T) *audit.Report { return observedReport(t) }},
		{"ipv6", func(*testing.T) *audit.Report { return ipv6Report() }},
	}
	d := browsertest.Start(t, chromium, 45*time.Second)
	for _, c := range []struct {
		method string
		params any
	}{
		{"Runtime.enable", nil}, {"Log.enable", nil}, {"Page.enable", nil},
		{"Emulation.setDeviceMetricsOverride", map[string]any{"width": laptopWidth, "height": 1000, "deviceScaleFactor": 1, "mobile": false}},
	} {
		if err := d.Call(c.method, c.params, nil); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("checks fail on a broken page", func(t *testing.T) { checkBrowserCatches(t, d, t.TempDir()) })
	for _, rep := range reports {
		t.Run(rep.name, func(t *testing.T) {
			out := filepath.Join(dir, rep.name)
			if err := os.MkdirAll(out, 0o755); err != nil {
				t.Fatal(err)
			}
			r := rep.report(t)
			path := writePage(t, out, "report.html", r)
			want, err := checkPage(readFile(t, path))
			if err != nil {
				t.Fatal(err)
			}
			boxes := render(t, d, path)
			if len(boxes) != len(want) {
				t.Errorf("browser shows %d figures, the page has %d", len(boxes), len(want))
			}
			for i, b := range boxes {
				if i < len(want) && b.ID != want[i].id {
					t.Errorf("figure %d is %q, want %q", i, b.ID, want[i].id)
				}
				if !(b.BBoxW > 0 && b.BBoxH > 0 && b.W > 0 && b.H > 0) {
					t.Errorf("figure %q renders empty: SVG bounding box %.0f×%.0f, figure %.0f×%.0f", b.ID, b.BBoxW, b.BBoxH, b.W, b.H)
				}
				if i < len(want) && b.Drawn < want[i].drawings/2 {
					t.Errorf("figure %q: %d of its %d drawing elements have a size", b.ID, b.Drawn, want[i].drawings)
				}
				if b.Overflow {
					t.Errorf("figure %q: its SVG is wider than the figure", b.ID)
				}
				raw := d.Screenshot(t, b.X, b.Y, b.W, b.H)
				img, err := png.Decode(bytes.NewReader(raw))
				if err != nil {
					t.Fatalf("screenshot of %q: %v", b.ID, err)
				}
				if f := browsertest.Inked(img); f < 0.01 {
					t.Errorf("screenshot of %q is blank (%.2f %% of its pixels drawn)", b.ID, f*100)
				}
				if err := os.WriteFile(filepath.Join(out, b.ID+".png"), raw, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			hidden := max(0, len(r.Circuits)-maxTableRows)
			l, bad := checkLayout(t, d, hidden)
			for _, b := range bad {
				t.Error(b)
			}
			if l.Points == 0 && len(boxes) > 0 {
				t.Errorf("no data drawn in %d figures: the plot boxes check nothing", len(boxes))
			}
			t.Logf("page %.0f px wide (widest: %s); %d data elements inside their plots; counts %v", l.Right, l.Widest, l.Points, l.Said)
			// A last round trip, so that messages logged late are in.
			if err := d.Call("Runtime.evaluate", map[string]any{"expression": "1"}, nil); err != nil {
				t.Fatal(err)
			}
			if p := d.Problems(); len(p) > 0 {
				t.Errorf("the browser reported:\n%s", strings.Join(p, "\n"))
			}
			t.Logf("%d figures rendered; screenshots in %s", len(boxes), out)
		})
	}
}

// TestHTMLInBrowser's checks, on a page that must fail them: a missing
// image is a console error, an empty SVG has an empty bounding box.
func checkBrowserCatches(t *testing.T, d *browsertest.Page, dir string) {
	path := filepath.Join(dir, "broken.html")
	page := `<!DOCTYPE html><html><head><meta charset="utf-8"><title>broken</title></head><body>
<img src="missing.png" alt="x"><figure id="fig-empty"><svg width="100pt" height="50pt" viewBox="0 0 100 50"></svg></figure></body></html>`
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	boxes := render(t, d, path)
	if err := d.Call("Runtime.evaluate", map[string]any{"expression": "1"}, nil); err != nil {
		t.Fatal(err)
	}
	if len(boxes) != 1 || boxes[0].BBoxW != 0 || boxes[0].BBoxH != 0 {
		t.Errorf("empty SVG measured as %+v, want a zero bounding box", boxes)
	}
	if len(d.Problems()) == 0 {
		t.Error("a missing image raised no console error: the check cannot fail")
	}
	// A page too wide, with a point outside its plot and counts its
	// tables contradict.
	path = filepath.Join(dir, "contradicts.html")
	page = `<!DOCTYPE html><html><head><meta charset="utf-8"><title>contradicts</title></head><body>
<p>1 file(s), 5 datagrams, 2 circuit directions.</p>
<table id="file-table"><tbody><tr><td>a</td><td>1</td><td>0</td></tr></tbody></table>
<table id="circuit-table"><tbody><tr><td>x</td></tr><tr><td>y</td></tr></tbody></table>
<table id="circuit-table-full"><tbody><tr><td>x</td></tr><tr><td>y</td></tr></tbody></table>
<div style="width: 2000px">wide</div>
<figure id="fig-out"><svg width="100pt" height="100pt" viewBox="0 0 100 100"><rect class="plot-box" x="10" y="10" width="50" height="50" style="fill:none" /><g class="data"><path d="M70,70L90,90" style="stroke:#000" /></g><text x="5" y="95">a title far too long for its figure</text></svg></figure>
</body></html>`
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	render(t, d, path)
	_, bad := checkLayout(t, d, 0)
	for _, want := range []string{"px wide", "outside its plot", "cut at the figure's edge", "the page says"} {
		if !strings.Contains(strings.Join(bad, "\n"), want) {
			t.Errorf("the layout check missed %q on a page made to fail it; it found: %q", want, bad)
		}
	}
}

// render loads the page at path and measures its figures.
func render(t *testing.T, d *browsertest.Page, path string) []figureBox {
	t.Helper()
	d.Navigate(t, (&url.URL{Scheme: "file", Path: path}).String())
	var boxes []figureBox
	d.EvalJSON(t, "measuring the figures", measure, &boxes)
	return boxes
}

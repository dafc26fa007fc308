package render

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/fairgrid/fairgrid/internal/audit"
)

// voidElements never have an end tag in HTML.
var voidElements = map[string]bool{
	"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true, "img": true,
	"input": true, "link": true, "meta": true, "source": true, "track": true, "wbr": true,
}

// checkWellFormed tokenizes the page and requires what the HTML parser
// would otherwise repair silently: every element closed in order (SVG
// included), no duplicate attribute, no duplicate id, no tokenizer error.
func checkWellFormed(page []byte) error {
	z := html.NewTokenizer(bytes.NewReader(page))
	var stack []string
	ids := map[string]bool{}
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if z.Err() == io.EOF {
				if len(stack) > 0 {
					return fmt.Errorf("unclosed elements at the end: %v", stack)
				}
				return nil
			}
			return fmt.Errorf("tokenizer: %w", z.Err())
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			seen := map[string]bool{}
			for _, a := range tok.Attr {
				key := a.Namespace + ":" + a.Key
				if seen[key] {
					return fmt.Errorf("<%s> has attribute %s twice", tok.Data, a.Key)
				}
				seen[key] = true
				if a.Key == "id" {
					if ids[a.Val] {
						return fmt.Errorf("id %q used twice", a.Val)
					}
					ids[a.Val] = true
				}
			}
			if tt == html.StartTagToken && !voidElements[tok.Data] {
				stack = append(stack, tok.Data)
			}
		case html.EndTagToken:
			tok := z.Token()
			if len(stack) == 0 || stack[len(stack)-1] != tok.Data {
				return fmt.Errorf("</%s> closes %v", tok.Data, stack)
			}
			stack = stack[:len(stack)-1]
		}
	}
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// external matches a reference that would reach the network.
var external = regexp.MustCompile(`(?i)^\s*(https?:|//|ftp:|ws:|wss:)|url\(\s*['"]?\s*(https?:|//)|@import`)

// drawing elements: what makes a figure more than an empty frame
var drawing = map[string]bool{"path": true, "line": true, "circle": true, "rect": true, "polygon": true, "polyline": true, "ellipse": true}

type svgFigure struct {
	id        string
	drawings  int
	texts     int
	viewBoxWH [2]float64
}

// checkPage parses the page as a browser would and checks what a
// self-contained report needs: no script, no external reference, and
// every figure one <svg> with a viewBox, a size and something drawn.
func checkPage(page []byte) ([]svgFigure, error) {
	if err := checkWellFormed(page); err != nil {
		return nil, err
	}
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	var figs []svgFigure
	var errs []string
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode {
			continue
		}
		switch n.DataAtom {
		case atom.Script, atom.Iframe, atom.Object, atom.Embed, atom.Link, atom.Base:
			errs = append(errs, "<"+n.Data+"> in a self-contained page")
		case atom.Style:
			if n.FirstChild != nil && external.MatchString(n.FirstChild.Data) {
				errs = append(errs, "<style> refers outside the page")
			}
		}
		for _, a := range n.Attr {
			k := strings.ToLower(a.Key)
			if k == "src" || k == "href" || k == "style" || k == "action" || k == "srcset" || k == "poster" {
				if external.MatchString(a.Val) {
					errs = append(errs, fmt.Sprintf("<%s %s=%q> refers outside the page", n.Data, a.Key, a.Val))
				}
			}
			if strings.HasPrefix(k, "on") {
				errs = append(errs, fmt.Sprintf("<%s %s> is JavaScript", n.Data, a.Key))
			}
		}
		if n.DataAtom != atom.Figure {
			continue
		}
		id, _ := attr(n, "id")
		var svgs []*html.Node
		for d := range n.Descendants() {
			if d.Type == html.ElementNode && d.Data == "svg" && d.Namespace == "svg" {
				svgs = append(svgs, d)
			}
		}
		if len(svgs) != 1 {
			errs = append(errs, fmt.Sprintf("figure %q has %d <svg> elements", id, len(svgs)))
			continue
		}
		fig := svgFigure{id: id}
		svg := svgs[0]
		vb, ok := attr(svg, "viewbox") // the parser lower-cases, then maps back for SVG
		if !ok {
			vb, ok = attr(svg, "viewBox")
		}
		f := strings.Fields(vb)
		if !ok || len(f) != 4 {
			errs = append(errs, fmt.Sprintf("figure %q: viewBox %q", id, vb))
			continue
		}
		for k := range 2 {
			fig.viewBoxWH[k], err = strconv.ParseFloat(f[2+k], 64)
			if err != nil || !(fig.viewBoxWH[k] > 0) {
				errs = append(errs, fmt.Sprintf("figure %q: viewBox %q", id, vb))
			}
		}
		for _, key := range []string{"width", "height"} {
			v, ok := attr(svg, key)
			x, err := strconv.ParseFloat(strings.TrimSuffix(v, "pt"), 64)
			if !ok || err != nil || !(x > 0) {
				errs = append(errs, fmt.Sprintf("figure %q: %s %q", id, key, v))
			}
		}
		for d := range svg.Descendants() {
			if d.Type != html.ElementNode {
				continue
			}
			if drawing[d.Data] {
				if d.Data == "path" {
					if v, _ := attr(d, "d"); strings.TrimSpace(v) == "" {
						errs = append(errs, fmt.Sprintf("figure %q: <path> without d", id))
						continue
					}
				}
				fig.drawings++
			}
			if d.Data == "text" && d.FirstChild != nil && strings.TrimSpace(d.FirstChild.Data) != "" {
				fig.texts++
			}
		}
		if fig.drawings == 0 || fig.texts == 0 {
			errs = append(errs, fmt.Sprintf("figure %q: %d drawing elements and %d texts", id, fig.drawings, fig.texts))
		}
		figs = append(figs, fig)
	}
	if len(errs) > 0 {
		return figs, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return figs, nil
}

// losslessReport is what the real OpenSim capture gives (SOURCES.md):
// loopback, so no loss; pings, so an RTT; and the fair rate unbounded.
func losslessReport() *audit.Report {
	r := makeReport(21, 4, 300)
	for i := range r.Seconds {
		s := &r.Seconds[i]
		s.LossEventRate, s.Lost, s.FairBitPerS, s.Ratio, s.FairState = 0, 0, nil, nil, audit.FairUnbounded
	}
	for i := range r.Circuits {
		c := &r.Circuits[i]
		c.LossRate, c.LossEventRate, c.Lost, c.LossEvents, c.FairState, c.Verdict = 0, 0, 0, 0, audit.FairUnbounded, "fair rate unbounded: no loss"
		c.FairMeanS, c.FairNominal, c.Mathis, c.ReceivedOverFair, c.FairTCP, c.ReceivedOverTCP = nil, nil, nil, nil, nil, nil
		c.RatioMean, c.RatioMedian, c.RatioP25, c.RatioP75, c.RequestedOverFair = nil, nil, nil, nil, nil
	}
	for i := range r.Requests {
		r.Requests[i].FairBitPerS, r.Requests[i].RequestedOverFair = nil, nil
	}
	r.JainIndex = nil
	return r
}

// TestHTMLValid renders reports of different shapes and checks each page
// with the validator above, which figures it has, and that unknown
// values read as words.
func TestHTMLValid(t *testing.T) {
	nan := math.NaN()
	broken := makeReport(31, 3, 50)
	broken.Circuits[0].FairMeanS = &nan
	broken.Circuits[0].MedianBitPerS = math.Inf(1)
	broken.Seconds[3].BitPerS = nan
	broken.Seconds[4].FairBitPerS = &nan
	broken.Seconds[5].LossEventRate = math.Inf(1)

	tests := []struct {
		name     string
		report   *audit.Report
		figures  []string // figure ids, in page order
		contains []string
	}{
		{
			name:   "grid",
			report: makeReport(1, 12, 600),
			figures: []string{"per-second", "per-connection", "loss", "loss-levels",
				"rate-0", "channels-0", "rtt-0", "loss-rate-0", "rate-1", "channels-1", "rtt-1", "loss-rate-1",
				"rate-2", "channels-2", "loss-rate-2"}, // the third busiest has no pings
			contains: []string{"unbounded: no loss", "unknown: no RTT", "unknown: no ping pairs", "stopped at byte 48\u2009213\u2009761: truncated record",
				"3 downstream circuit(s) that carried most bytes, of 12", "averaged over 2 s"},
		},
		{
			name:     "no loss, as in the real OpenSim capture",
			report:   losslessReport(),
			figures:  []string{"loss-levels", "rate-0", "channels-0", "rtt-0", "loss-rate-0", "rate-1", "channels-1", "rtt-1", "loss-rate-1", "rate-2", "channels-2", "rtt-2", "loss-rate-2"},
			contains: []string{"fair rate unbounded: no loss", "no second has a known TCP-fair rate", "no circuit has a known TCP-fair rate", "no second has a loss event rate above zero", "The TCP-fair rate is not drawn: unbounded: no loss."},
		},
		{
			name:     "circuits only",
			report:   &audit.Report{Circuits: makeReport(3, 2, 10).Circuits, Files: []audit.FileResult{{Name: "-"}}},
			figures:  []string{"per-connection"},
			contains: []string{"No figure over time", "the report holds no per-second rows"},
		},
		{
			name:     "more circuits than the table shows",
			report:   &audit.Report{Circuits: make([]audit.Circuit, maxTableRows+7)},
			figures:  nil,
			contains: []string{fmt.Sprintf("The tables show the first %d; the other 7 are in the CSV, JSON and Parquet outputs.", maxTableRows)},
		},
		{
			name:     "empty",
			report:   &audit.Report{},
			contains: []string{"0 circuit directions"},
		},
		{
			name:    "NaN and infinity in the rows",
			report:  broken,
			figures: []string{"per-second", "per-connection", "loss", "loss-levels", "rate-0", "channels-0", "rtt-0", "loss-rate-0", "rate-1", "channels-1", "rtt-1", "loss-rate-1", "rate-2", "channels-2", "rtt-2", "loss-rate-2"},
		},
	}
	dir := artifacts(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writePage(t, dir, fmt.Sprintf("page-%d.html", i), tt.report)
			page := readFile(t, path)
			figs, err := checkPage(page)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			var ids []string
			for _, f := range figs {
				ids = append(ids, strings.TrimPrefix(f.id, "fig-"))
			}
			if strings.Join(ids, " ") != strings.Join(tt.figures, " ") {
				t.Errorf("figures %v, want %v", ids, tt.figures)
			}
			text := string(page)
			for _, s := range tt.contains {
				if !strings.Contains(text, s) {
					t.Errorf("page lacks %q", s)
				}
			}
			for _, bad := range []string{"NaN", "+Inf", "-Inf", "%!"} {
				if strings.Contains(text, bad) {
					t.Errorf("page contains %q", bad)
				}
			}
		})
	}
}

// TestValidatorCatches runs the validator on broken pages, so that a
// passing TestHTMLValid means something.
func TestValidatorCatches(t *testing.T) {
	const svg = `<svg width="10pt" height="10pt" viewBox="0 0 10 10"><g><path d="M0,0L1,1"/><text>x</text></g></svg>`
	tests := []struct{ name, page string }{
		{"unclosed div", `<!DOCTYPE html><html><body><div><figure id="a">` + svg + `</figure></body></html>`},
		{"script", `<!DOCTYPE html><html><body><script>1</script></body></html>`},
		{"external image", `<!DOCTYPE html><html><body><img src="https://example.org/a.png"></body></html>`},
		{"external font", `<!DOCTYPE html><html><head><style>@font-face{src:url(https://x/f.ttf)}</style></head><body></body></html>`},
		{"event handler", `<!DOCTYPE html><html><body onload="x()"></body></html>`},
		{"figure without svg", `<!DOCTYPE html><html><body><figure id="a"><p>no</p></figure></body></html>`},
		{"empty svg", `<!DOCTYPE html><html><body><figure id="a"><svg width="10pt" height="10pt" viewBox="0 0 10 10"></svg></figure></body></html>`},
		{"no viewBox", `<!DOCTYPE html><html><body><figure id="a"><svg width="10pt" height="10pt"><path d="M0,0L1,1"/><text>x</text></svg></figure></body></html>`},
		{"zero size", `<!DOCTYPE html><html><body><figure id="a"><svg width="0pt" height="10pt" viewBox="0 0 10 10"><path d="M0,0L1,1"/><text>x</text></svg></figure></body></html>`},
		{"duplicate id", `<!DOCTYPE html><html><body><figure id="a">` + svg + `</figure><figure id="a">` + svg + `</figure></body></html>`},
		{"misnested", `<!DOCTYPE html><html><body><b><i>x</b></i></body></html>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := checkPage([]byte(tt.page)); err == nil {
				t.Error("accepted")
			}
		})
	}
	good := `<!DOCTYPE html><html><head><meta charset="utf-8"><title>t</title></head><body><figure id="a">` + svg + `</figure></body></html>`
	if _, err := checkPage([]byte(good)); err != nil {
		t.Errorf("rejected a good page: %v", err)
	}
}

// negativeTick is a tick label below zero in a figure's SVG.
var negativeTick = regexp.MustCompile(`>[-−][0-9][0-9.]*</text>`)

// TestNoAxisBelowZero: rates, RTTs and loss rates are never negative, so
// no figure's axis reaches below zero: not the loss rate of a lossless
// circuit (gonum widens a flat series by ±1), nor any other.
func TestNoAxisBelowZero(t *testing.T) {
	if !negativeTick.MatchString(`<text x="1" y="2">-1</text>`) {
		t.Fatal("the pattern misses a negative tick label: the test cannot fail")
	}
	for name, r := range map[string]*audit.Report{"lossless": losslessReport(), "grid": makeReport(5, 6, 120)} {
		var b bytes.Buffer
		if err := WriteHTML(&b, r); err != nil {
			t.Fatal(err)
		}
		if m := negativeTick.FindAllString(b.String(), 5); m != nil {
			t.Errorf("%s: tick labels below zero: %q", name, m)
		}
		if name == "lossless" && !strings.Contains(b.String(), `id="fig-loss-rate-0"`) {
			t.Errorf("%s: no loss rate figure to check", name)
		}
	}
}

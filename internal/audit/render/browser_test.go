//go:build linux

package render

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/fairgrid/fairgrid/internal/audit"
)

// chromiumPath finds headless Chromium, installing Debian's package when
// it is missing and apt can run (as root); otherwise the test is skipped
// with the reason.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	apt, err := exec.LookPath("apt-get")
	if err != nil {
		t.Skip("skipped: chromium is not installed and there is no apt-get to install it")
	}
	if os.Geteuid() != 0 {
		t.Skip("skipped: chromium is not installed and only root can install it with apt-get")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	install := func() ([]byte, error) {
		cmd := exec.CommandContext(ctx, apt, "install", "-y", "chromium")
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		return cmd.CombinedOutput()
	}
	if _, err := install(); err != nil {
		// the package lists may be missing or stale on a fresh machine
		if upd, uerr := exec.CommandContext(ctx, apt, "update").CombinedOutput(); uerr != nil {
			t.Skipf("skipped: chromium is not installed and apt-get update failed (%v): %s", uerr, tail(upd, 300))
		}
		if out, err := install(); err != nil {
			t.Skipf("skipped: chromium is not installed and apt-get install chromium failed (%v): %s", err, tail(out, 300))
		}
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		t.Skipf("skipped: apt-get installed chromium but it is not on PATH: %v", err)
	}
	t.Logf("installed Debian's chromium: %s", p)
	return p
}

// devtools is a DevTools-protocol connection to one page: requests by id,
// and the events collected as they come.
type devtools struct {
	ws     *websocket.Conn
	nextID int
	events []cdpMessage
}

type cdpMessage struct {
	ID     int             `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// call sends one command and reads until its answer, keeping the events
// that arrive meanwhile.
func (d *devtools) call(method string, params any, result any) error {
	d.nextID++
	id := d.nextID
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if err := websocket.JSON.Send(d.ws, msg); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	for {
		var m cdpMessage
		if err := websocket.JSON.Receive(d.ws, &m); err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		if m.ID == 0 {
			d.events = append(d.events, m)
			continue
		}
		if m.ID != id {
			continue
		}
		if m.Error != nil {
			return fmt.Errorf("%s: %s (%d)", method, m.Error.Message, m.Error.Code)
		}
		if result != nil {
			return json.Unmarshal(m.Result, result)
		}
		return nil
	}
}

// waitEvent reads until an event of the given method arrives.
func (d *devtools) waitEvent(method string) error {
	for _, e := range d.events {
		if e.Method == method {
			return nil
		}
	}
	for {
		var m cdpMessage
		if err := websocket.JSON.Receive(d.ws, &m); err != nil {
			return fmt.Errorf("waiting for %s: %w", method, err)
		}
		if m.ID == 0 {
			d.events = append(d.events, m)
			if m.Method == method {
				return nil
			}
		}
	}
}

// problems lists the console errors and warnings, uncaught exceptions and
// browser log errors (a blocked or failed load) among the events.
func (d *devtools) problems() []string {
	var out []string
	for _, e := range d.events {
		switch e.Method {
		case "Runtime.consoleAPICalled":
			var p struct {
				Type string `json:"type"`
				Args []struct {
					Value       any    `json:"value"`
					Description string `json:"description"`
				} `json:"args"`
			}
			json.Unmarshal(e.Params, &p)
			if p.Type == "error" || p.Type == "warning" || p.Type == "assert" {
				out = append(out, fmt.Sprintf("console.%s %v", p.Type, p.Args))
			}
		case "Runtime.exceptionThrown":
			out = append(out, "exception: "+string(e.Params))
		case "Log.entryAdded":
			var p struct {
				Entry struct {
					Level, Source, Text, URL string
				} `json:"entry"`
			}
			json.Unmarshal(e.Params, &p)
			if p.Entry.Level == "error" || p.Entry.Level == "warning" {
				out = append(out, fmt.Sprintf("%s %s: %s %s", p.Entry.Level, p.Entry.Source, p.Entry.Text, p.Entry.URL))
			}
		}
	}
	return out
}

var devtoolsURL = regexp.MustCompile(`DevTools listening on (ws://[^\s]+)`)

// startChromium starts headless Chromium with DevTools on a free port and
// returns a connection to a new page. Chromium and its children end with
// the test.
func startChromium(t *testing.T, chromium string) *devtools {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	cmd := exec.CommandContext(ctx, chromium,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-default-apps", "--disable-extensions", "--mute-audio", "--hide-scrollbars",
		"--user-data-dir="+t.TempDir(), "--remote-debugging-port=0", "--remote-allow-origins=*",
		"about:blank")
	// its own process group, so the renderer and GPU processes end with it
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Skipf("skipped: chromium does not start: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
	})
	found := make(chan string, 1)
	var logged bytes.Buffer
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			if m := devtoolsURL.FindStringSubmatch(sc.Text()); m != nil && !sent {
				found <- m[1]
				sent = true
			} else if !sent && logged.Len() < 4000 {
				logged.WriteString(sc.Text() + "\n")
			}
		}
		if !sent {
			close(found)
		}
		io.Copy(io.Discard, stderr)
	}()
	var browserURL string
	select {
	case u, ok := <-found:
		if !ok {
			t.Fatalf("chromium exited without DevTools: %s", tail(logged.Bytes(), 1000))
		}
		browserURL = u
	case <-ctx.Done():
		t.Fatalf("chromium did not open DevTools within a minute")
	}
	deadline := time.Now().Add(45 * time.Second)
	b, err := websocket.Dial(browserURL, "", "http://127.0.0.1/")
	if err != nil {
		t.Fatalf("devtools: %v", err)
	}
	defer b.Close()
	b.SetDeadline(deadline)
	browser := &devtools{ws: b}
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := browser.call("Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(browserURL)
	if err != nil {
		t.Fatal(err)
	}
	pageURL := "ws://" + u.Host + "/devtools/page/" + target.TargetID
	ws, err := websocket.Dial(pageURL, "", "http://127.0.0.1/")
	if err != nil {
		t.Fatalf("devtools page: %v", err)
	}
	ws.MaxPayloadBytes = 64 << 20 // screenshots
	ws.SetDeadline(deadline)
	t.Cleanup(func() { ws.Close() })
	return &devtools{ws: ws}
}

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
func (d *devtools) checkLayout(t *testing.T, hidden int) (layout, []string) {
	t.Helper()
	var l layout
	d.evalJSON(t, "checking the layout", layoutCheck, &l)
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
	chromium := chromiumPath(t)
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
	d := startChromium(t, chromium)
	for _, c := range []struct {
		method string
		params any
	}{
		{"Runtime.enable", nil}, {"Log.enable", nil}, {"Page.enable", nil},
		{"Emulation.setDeviceMetricsOverride", map[string]any{"width": laptopWidth, "height": 1000, "deviceScaleFactor": 1, "mobile": false}},
	} {
		if err := d.call(c.method, c.params, nil); err != nil {
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
			boxes := d.render(t, path)
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
				raw := d.screenshot(t, b)
				img, err := png.Decode(bytes.NewReader(raw))
				if err != nil {
					t.Fatalf("screenshot of %q: %v", b.ID, err)
				}
				if f := inked(img); f < 0.01 {
					t.Errorf("screenshot of %q is blank (%.2f %% of its pixels drawn)", b.ID, f*100)
				}
				if err := os.WriteFile(filepath.Join(out, b.ID+".png"), raw, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			hidden := max(0, len(r.Circuits)-maxTableRows)
			l, bad := d.checkLayout(t, hidden)
			for _, b := range bad {
				t.Error(b)
			}
			if l.Points == 0 && len(boxes) > 0 {
				t.Errorf("no data drawn in %d figures: the plot boxes check nothing", len(boxes))
			}
			t.Logf("page %.0f px wide (widest: %s); %d data elements inside their plots; counts %v", l.Right, l.Widest, l.Points, l.Said)
			// A last round trip, so that messages logged late are in.
			if err := d.call("Runtime.evaluate", map[string]any{"expression": "1"}, nil); err != nil {
				t.Fatal(err)
			}
			if p := d.problems(); len(p) > 0 {
				t.Errorf("the browser reported:\n%s", strings.Join(p, "\n"))
			}
			t.Logf("%d figures rendered; screenshots in %s", len(boxes), out)
		})
	}
}

// TestHTMLInBrowser's checks, on a page that must fail them: a missing
// image is a console error, an empty SVG has an empty bounding box.
func checkBrowserCatches(t *testing.T, d *devtools, dir string) {
	path := filepath.Join(dir, "broken.html")
	page := `<!DOCTYPE html><html><head><meta charset="utf-8"><title>broken</title></head><body>
<img src="missing.png" alt="x"><figure id="fig-empty"><svg width="100pt" height="50pt" viewBox="0 0 100 50"></svg></figure></body></html>`
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	boxes := d.render(t, path)
	if err := d.call("Runtime.evaluate", map[string]any{"expression": "1"}, nil); err != nil {
		t.Fatal(err)
	}
	if len(boxes) != 1 || boxes[0].BBoxW != 0 || boxes[0].BBoxH != 0 {
		t.Errorf("empty SVG measured as %+v, want a zero bounding box", boxes)
	}
	if len(d.problems()) == 0 {
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
	d.render(t, path)
	_, bad := d.checkLayout(t, 0)
	for _, want := range []string{"px wide", "outside its plot", "cut at the figure's edge", "the page says"} {
		if !strings.Contains(strings.Join(bad, "\n"), want) {
			t.Errorf("the layout check missed %q on a page made to fail it; it found: %q", want, bad)
		}
	}
}

// render loads the page at path and measures its figures.
func (d *devtools) render(t *testing.T, path string) []figureBox {
	t.Helper()
	d.events = d.events[:0]
	if err := d.call("Page.navigate", map[string]any{"url": (&url.URL{Scheme: "file", Path: path}).String()}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.waitEvent("Page.loadEventFired"); err != nil {
		t.Fatal(err)
	}
	var boxes []figureBox
	d.evalJSON(t, "measuring the figures", measure, &boxes)
	return boxes
}

// evalJSON runs expression, which returns a JSON string, in the page and
// decodes its value into v; what names the step in errors.
func (d *devtools) evalJSON(t *testing.T, what, expression string, v any) {
	t.Helper()
	var eval struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
		ExceptionDetails json.RawMessage `json:"exceptionDetails"`
	}
	if err := d.call("Runtime.evaluate", map[string]any{"expression": expression, "returnByValue": true}, &eval); err != nil {
		t.Fatal(err)
	}
	if eval.ExceptionDetails != nil {
		t.Fatalf("%s: %s", what, eval.ExceptionDetails)
	}
	if err := json.Unmarshal([]byte(eval.Result.Value), v); err != nil {
		t.Fatalf("%s: %v: %s", what, err, eval.Result.Value)
	}
}

// screenshot returns a PNG of the figure's box on the page.
func (d *devtools) screenshot(t *testing.T, b figureBox) []byte {
	t.Helper()
	var shot struct {
		Data string `json:"data"`
	}
	clip := map[string]any{"x": b.X, "y": b.Y, "width": b.W, "height": b.H, "scale": 1}
	if err := d.call("Page.captureScreenshot", map[string]any{"format": "png", "clip": clip, "captureBeyondViewport": true}, &shot); err != nil {
		t.Fatal(err)
	}
	raw, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// inked is the fraction of pixels that are not near-white.
func inked(img image.Image) float64 {
	b := img.Bounds()
	var n, total int
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r < 0xe000 || g < 0xe000 || bl < 0xe000 {
				n++
			}
			total++
		}
	}
	if total == 0 {
		return 0
	}
	return float64(n) / float64(total)
}

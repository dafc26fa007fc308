//go:build linux

package main

import (
	"bufio"
	"bytes"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/browsertest"
	"github.com/fairgrid/fairgrid/opensim/gateway/gatewaytest"
	"github.com/fairgrid/fairgrid/throttle/status"
)

// pageState is what the browser reads of a live page.
type pageState struct {
	Health  string `json:"health"`
	Updated string `json:"updated"`
	Rows    []struct {
		ID   string            `json:"id"`
		Why  string            `json:"why"`
		Nums map[string]string `json:"nums"`
		SVG  int               `json:"svg"`
	} `json:"rows"`
	Routes      int     `json:"routes"`
	Refusals    int     `json:"refusals"`
	Established string  `json:"established"`
	ScrollWidth float64 `json:"scrollWidth"`
}

const readPage = `JSON.stringify({
  health: (document.getElementById('health') || {}).textContent || '',
  updated: (document.getElementById('updated') || {}).textContent || '',
  rows: Array.from(document.querySelectorAll('section.circuit')).map(s => ({
    id: s.dataset.id, why: s.querySelector('p.why').textContent,
    nums: Object.fromEntries(Array.from(s.querySelectorAll('dd[data-k]')).map(d => [d.dataset.k, d.textContent])),
    svg: s.querySelector('figure svg') ? s.querySelector('figure svg').querySelectorAll('path').length : 0})),
  routes: document.querySelectorAll('#routes tbody tr').length,
  refusals: document.querySelectorAll('#refusals tbody tr').length,
  established: (document.getElementById('established') || {}).textContent || '',
  scrollWidth: document.documentElement.scrollWidth})`

// chartChanges resolves when the first circuit's chart is redrawn by the
// page's own script (within 10 s), with how long it took.
const chartChanges = `new Promise(done => {
  const first = document.querySelector('figure svg').outerHTML, t0 = Date.now();
  const iv = setInterval(() => {
    const s = document.querySelector('figure svg');
    if (s && s.outerHTML !== first) { clearInterval(iv); done(JSON.stringify({changed: true, ms: Date.now() - t0})); }
    else if (Date.now() - t0 > 10000) { clearInterval(iv); done(JSON.stringify({changed: false, ms: Date.now() - t0})); }
  }, 100);
})`

// metricValues reads the first series of each metric at addr/metrics:
// the tests' front-ends have one circuit.
func metricValues(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, rest, _ := strings.Cut(line, " ")
		name, _, _ = strings.Cut(name, "{")
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			rest = line[i+1:]
		}
		if _, seen := out[name]; seen {
			continue
		}
		if v, err := strconv.ParseFloat(rest, 64); err == nil {
			out[name] = v
		}
	}
	return out
}

// wantNums is what the page must show for each number, from the metrics,
// formatted as the page formats them.
type wantNums func(m map[string]float64) map[string]string

func orNone(bytesPerSecond float64, ok bool, none string) string {
	if !ok || bytesPerSecond <= 0 {
		return none
	}
	return status.Kbit(bytesPerSecond * 8)
}

func proxyNums(m map[string]float64) map[string]string {
	share, hasShare := m["fairgrid_circuit_share_bytes_per_second"]
	viewer, hasViewer := m["fairgrid_circuit_viewer_request_bytes_per_second"]
	return map[string]string{
		"received_bps":     status.Kbit(m["fairgrid_circuit_receive_rate_bytes_per_second"] * 8),
		"asked_bps":        orNone(m["fairgrid_circuit_target_rate_bytes_per_second"], true, "nothing yet"),
		"share_bps":        orNone(share, hasShare, "no loss yet"),
		"viewer_asked_bps": orNone(viewer, hasViewer, "nothing seen"),
		"loss_event_rate":  status.Percent(m["fairgrid_circuit_loss_event_rate"]),
		"rtt_ms":           status.Millis(m["fairgrid_circuit_rtt_seconds"] * 1000),
		"requests":         strconv.FormatFloat(m["fairgrid_circuit_requests_sent_total"], 'f', 0, 64),
	}
}

func gatewayNums(m map[string]float64) map[string]string {
	return map[string]string{
		"received_bps":     status.Kbit(m["fairgrid_gateway_circuit_received_rate_bytes_per_second"] * 8),
		"asked_bps":        orNone(m["fairgrid_gateway_circuit_rate_bytes_per_second"], true, "nothing yet"),
		"viewer_asked_bps": orNone(m["fairgrid_gateway_circuit_asked_rate_bytes_per_second"], true, "nothing seen"),
		"loss_event_rate":  status.Percent(m["fairgrid_gateway_circuit_loss_event_rate"]),
		"rtt_ms":           status.Millis(m["fairgrid_gateway_circuit_rtt_seconds"] * 1000),
	}
}

// TestStatusPageInBrowser loads the live page of a proxy with a viewer
// and a region behind it, and of a gateway, in headless Chromium: the
// circuit row with its words and numbers (each as /metrics has it), a
// chart the page's script redraws, no console error, no request to any
// other host, nothing wider than a 390 px phone or a 1,300 px laptop
// (screenshots of both kept in the test's artefacts directory), and the
// numbers and the chart with JavaScript off.
func TestStatusPageInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a browser and runs front-ends on loopback")
	}
	chromium := browsertest.Chromium(t)
	t.Parallel()
	proxyAddr, proxyPage := liveProxy(t)
	gatewayAddr, gwPage := liveGateway(t)
	b := browsertest.Start(t, chromium, 60*time.Second)
	for _, m := range []string{"Runtime.enable", "Log.enable", "Page.enable", "Network.enable"} {
		b.MustCall(t, m, nil, nil)
	}
	dir := t.ArtifactDir()
	for _, fe := range []struct {
		name string
		addr string
		page *status.Page
		nums wantNums
	}{
		{"proxy", proxyAddr, proxyPage, proxyNums},
		{"gateway", gatewayAddr, gwPage, gatewayNums},
	} {
		t.Run(fe.name, func(t *testing.T) {
			base := "http://" + fe.addr + "/"
			gatewaytest.WaitUntil(t, "the page has sampled the circuit", func() bool { return fe.page.Histories() > 0 })
			b.MustCall(t, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 1300, "height": 900, "deviceScaleFactor": 1, "mobile": false}, nil)
			b.Navigate(t, base)
			var st pageState
			b.EvalJSON(t, "reading the page", readPage, &st)
			if st.Health != "working" || len(st.Rows) != 1 || st.Rows[0].SVG == 0 || !strings.Contains(st.Rows[0].Why, "asking the region for") {
				t.Fatalf("the page shows %+v; want it working, one circuit with its words and its chart", st)
			}
			if fe.name == "gateway" {
				snap, err := status.Fetch(fe.addr, time.Second)
				if err != nil {
					t.Fatal(err)
				}
				if st.Routes != 1 || st.Refusals != len(snap.Refused()) || st.Established != "1" {
					t.Errorf("the gateway's page: %d routes, %d refusal causes, %q established; want 1, %d (%v), 1", st.Routes, st.Refusals, st.Established, len(snap.Refused()), snap.Refusals)
				}
			}
			// The numbers are the metrics': read both until a moment when
			// no decision fell between the two reads.
			var last string
			gatewaytest.WaitUntil(t, "the page's numbers match /metrics", func() bool {
				b.Navigate(t, base)
				b.EvalJSON(t, "reading the page", readPage, &st)
				want := fe.nums(metricValues(t, fe.addr))
				last = ""
				for k, w := range want {
					if got := st.Rows[0].Nums[k]; got != w {
						last += k + ": page " + got + ", metrics " + w + "; "
					}
				}
				return last == ""
			})
			// The script redraws the chart as the page samples.
			var changed struct {
				Changed bool    `json:"changed"`
				Ms      float64 `json:"ms"`
			}
			b.EvalJSON(t, "waiting for the chart to change", chartChanges, &changed)
			if !changed.Changed {
				t.Errorf("the chart did not change within %.0f ms", changed.Ms)
			}
			for _, width := range []int{1300, 390} {
				b.MustCall(t, "Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600}, nil)
				b.EvalJSON(t, "reading the page", readPage, &st)
				if st.ScrollWidth > float64(width) {
					t.Errorf("at %d px the page is %.0f px wide", width, st.ScrollWidth)
				}
				shot := b.Screenshot(t, 0, 0, float64(width), 0)
				img, err := png.Decode(bytes.NewReader(shot))
				if err != nil {
					t.Fatal(err)
				}
				if f := browsertest.Inked(img); f < 0.01 {
					t.Errorf("the screenshot at %d px is blank (%.2f %% inked)", width, f*100)
				}
				path := filepath.Join(dir, fe.name+"-"+strconv.Itoa(width)+".png")
				if err := os.WriteFile(path, shot, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("screenshot: %s", path)
			}
			for _, p := range b.Problems() {
				t.Errorf("the browser reported: %s", p)
			}
			for _, u := range b.Requests() {
				if !strings.HasPrefix(u, base) && !strings.HasPrefix(u, "data:") {
					t.Errorf("the page requested %s: it must not leave %s", u, base)
				}
			}
			// Without JavaScript: the numbers and the chart as served.
			b.MustCall(t, "Emulation.setScriptExecutionDisabled", map[string]any{"value": true}, nil)
			b.Navigate(t, base)
			b.MustCall(t, "Emulation.setScriptExecutionDisabled", map[string]any{"value": false}, nil)
			b.EvalJSON(t, "reading the page", readPage, &st)
			if len(st.Rows) != 1 || st.Rows[0].SVG == 0 || st.Rows[0].Nums["received_bps"] == "" {
				t.Errorf("without JavaScript the page shows %+v", st)
			}
		})
	}
}

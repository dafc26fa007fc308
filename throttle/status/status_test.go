package status

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

// fixed is a Source that returns a copy of its snapshot.
type fixed struct{ s Snapshot }

func (f *fixed) source(time.Time) Snapshot {
	s := f.s
	s.Circuits = append([]Circuit(nil), f.s.Circuits...)
	return s
}

func circuitNamed(id string, recv float64) Circuit {
	return Circuit{ID: id, Viewer: "10.0.0.2:50000", Region: "10.0.0.1:9000", ReceivedBPS: recv, AskedBPS: 400_000, DecidedBPS: 400_000, ShareBPS: 410_000, Loss: 0.012, RTTms: 180}
}

func TestExplain(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Circuit
		want string
	}{
		{"one share", Circuit{AskedBPS: 412_000, DecidedBPS: 412_000, ShareBPS: 420_000, ViewerAskedBPS: 1_500_000, Loss: 0.012, RTTms: 180, ReceivedBPS: 398_000},
			"asking the region for 412 kbit/s: one TCP share at 1.2 % loss and 180 ms; your viewer asked 1,500; receiving 398 kbit/s"},
		{"the viewer's limit", Circuit{AskedBPS: 1_500_000, DecidedBPS: 5_120_000, ViewerAskedBPS: 1_500_000, ReceivedBPS: 900_000},
			"asking the region for 1,500 kbit/s: your viewer's own request, below what fairgrid would allow (5,120 kbit/s); receiving 900 kbit/s"},
		{"share and controller apart", Circuit{AskedBPS: 800_000, DecidedBPS: 800_000, ShareBPS: 400_000, Loss: 0.02, RTTms: 100},
			"asking the region for 800 kbit/s: what a TCP flow reaches at 2.0 % loss and 100 ms (one share by the equation: 400 kbit/s); receiving 0 kbit/s"},
		{"no loss yet", Circuit{AskedBPS: 5_120_000, DecidedBPS: 5_120_000, RTTms: 40},
			"asking the region for 5,120 kbit/s: no loss seen yet, so the rate a TCP flow would reach at 40 ms; receiving 0 kbit/s"},
		{"no request", Circuit{Waiting: "waiting for the circuit's first decision", ReceivedBPS: 10_000},
			"measuring; no request sent yet (waiting for the circuit's first decision); receiving 10 kbit/s"},
		{"pending", Circuit{Pending: true}, "waiting for the viewer to prove its address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.explain()
			if tc.c.Why != tc.want {
				t.Errorf("got  %q\nwant %q", tc.c.Why, tc.want)
			}
		})
	}
}

func TestFormats(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Kbit(1_536_000), "1,536 kbit/s"}, {Kbit(999), "1 kbit/s"}, {Kbit(12_345_678_000), "12,345,678 kbit/s"},
		{Percent(0), "0 %"}, {Percent(0.0004), "0.040 %"}, {Percent(0.012), "1.2 %"}, {Percent(0.25), "25 %"},
		{Millis(0), "-"}, {Millis(1.23), "1.2 ms"}, {Millis(180.4), "180 ms"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// TestHistoryBounded: a circuit's history holds Window/Every samples
// however long it lives, 28 bytes each; circuits beyond MaxCircuits push
// out the one heard from longest ago; a circuit gone for the window is
// dropped.
func TestHistoryBounded(t *testing.T) {
	f := &fixed{Snapshot{Circuits: []Circuit{circuitNamed("a", 1000)}}}
	p, err := New(Config{Front: "proxy", Source: f.source, MaxCircuits: 3}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if p.HistoryBytes() != 120*28 {
		t.Errorf("a circuit's history takes %d bytes, want 120 samples of 28", p.HistoryBytes())
	}
	for i := range 1000 {
		p.Sample(t0.Add(time.Duration(i) * DefaultEvery))
	}
	if n := len(p.hist["a"].samples(nil)); n != 120 {
		t.Errorf("after 1000 samples the history holds %d, want 120", n)
	}
	now := t0.Add(1000 * DefaultEvery)
	for _, id := range []string{"b", "c", "d"} {
		f.s.Circuits = []Circuit{circuitNamed(id, 1000)}
		p.Sample(now)
		now = now.Add(DefaultEvery)
	}
	if p.Histories() != 3 || p.hist["a"] != nil {
		t.Errorf("%d histories (a kept: %v), want 3, a pushed out", p.Histories(), p.hist["a"] != nil)
	}
	f.s.Circuits = nil
	p.Sample(now.Add(DefaultWindow + time.Second))
	if p.Histories() != 0 {
		t.Errorf("%d histories after their circuits were gone for the window", p.Histories())
	}
	if s := p.Summary(now); s.Circuits != 4 || s.ReceivedBPS != 1000 || s.AskedBPS != 400_000 {
		t.Errorf("summary %+v: want 4 circuits seen, 1 kbit/s received, 400 asked", s)
	}
}

func TestNewRefuses(t *testing.T) {
	for _, cfg := range []Config{{Source: (&fixed{}).source}, {Front: "run"}, {Front: "run", Source: (&fixed{}).source, Every: -time.Second}} {
		if _, err := New(cfg, t0); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}

// TestHandler: the page with its circuit, words and chart; its live part
// alone; the JSON; /healthz's code following Health; /metrics; 404.
func TestHandler(t *testing.T) {
	f := &fixed{Snapshot{Circuits: []Circuit{circuitNamed("a", 398_000)}}}
	healthy := true
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("fairgrid_circuits 1\n")) })
	p, err := New(Config{Front: "proxy", Source: f.source, Metrics: metrics,
		Health: func(time.Time) (bool, []string) { return healthy, []string{"checked"} }}, time.Now().Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		p.Sample(time.Now().Add(time.Duration(i-5) * DefaultEvery))
	}
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec.Code, rec.Body.String()
	}
	code, body := get("/")
	for _, want := range []string{"<!DOCTYPE html>", `data-id="a"`, "asking the region for 400 kbit/s", "<svg", "setInterval"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("/: %d, no %q", code, want)
		}
	}
	// Namespaces (the SVG's xmlns) are names, not fetched; what a browser
	// fetches is a src, an href, a url() or an @import.
	if m := regexp.MustCompile(`(src|href)\s*=\s*["']?(https?:)?//|url\(\s*["']?(https?:)?//|@import`).FindString(body); m != "" {
		t.Errorf("the page fetches from another host (%q): it must fetch nothing from elsewhere", m)
	}
	if code, body := get("/?live=1"); code != 200 || strings.Contains(body, "<html") || !strings.Contains(body, `data-id="a"`) {
		t.Errorf("/?live=1: %d, want the live part alone", code)
	}
	code, body = get("/status.json")
	var s Snapshot
	if err := json.Unmarshal([]byte(body), &s); err != nil || code != 200 || len(s.Circuits) != 1 || s.Front != "proxy" || !s.Flowing() {
		t.Errorf("/status.json: %d %v %+v", code, err, s)
	}
	if code, body := get("/healthz"); code != 200 || body != "checked\n" {
		t.Errorf("/healthz healthy: %d %q", code, body)
	}
	healthy = false
	if code, _ := get("/healthz"); code != http.StatusServiceUnavailable {
		t.Errorf("/healthz unhealthy: %d", code)
	}
	if code, body := get("/metrics"); code != 200 || body != "fairgrid_circuits 1\n" {
		t.Errorf("/metrics: %d %q", code, body)
	}
	if code, _ := get("/nothing"); code != http.StatusNotFound {
		t.Errorf("/nothing: %d", code)
	}
}

func TestWriteText(t *testing.T) {
	c := circuitNamed("a", 398_000)
	c.explain()
	s := Snapshot{Front: "gateway", Healthy: false, Health: []string{"route 0 region 10.0.0.1:9000: not answering for 12s"},
		Routes: []Route{{Listen: "203.0.113.1:9000", Region: "10.0.0.1:9000", Waiting: "12s", Circuits: 1}}, Established: 1,
		Refusals: []Count{{"refused", 3}, {"orphan", 0}}, Circuits: []Circuit{c}, Started: t0, At: t0.Add(time.Hour)}
	var b strings.Builder
	WriteText(&b, s)
	for _, want := range []string{"fairgrid gateway: NOT WORKING (route 0", "no, for 12s", "established 1, pending 0", "refused: refused 3\n", "398 kbit/s", "1.2 %", "180 ms", "asking the region for 400 kbit/s"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "orphan") {
		t.Errorf("a cause that counted nothing is listed:\n%s", b.String())
	}
}

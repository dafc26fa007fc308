package status

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Defaults of Config.
const (
	DefaultEvery       = 5 * time.Second // the default control.interval: a sample a decision
	DefaultWindow      = 10 * time.Minute
	DefaultMaxCircuits = 64
)

// Config sets up a Page. Front and Source are required.
type Config struct {
	Front   string // "run", "proxy", "gateway"
	Version string
	// Source returns the front-end's state now: its circuits and, for
	// the gateway, routes and refusals (FromLoop, FromGateway). The page
	// fills in the health, the words and, but for the gateway (whose
	// scheduler measures its own), the queueing delay.
	Source func(now time.Time) Snapshot
	// Health says whether the front-end does its job, one line per thing
	// checked; nil: healthy while it serves.
	Health func(now time.Time) (ok bool, lines []string)
	// Metrics, if set, is served at /metrics.
	Metrics http.Handler
	// Every is how often circuits are sampled for the charts (default
	// DefaultEvery; the control interval, so that each sample holds a
	// decision and the received rate over its interval), Window how far
	// back the charts go (DefaultWindow),
	// MaxCircuits how many circuits keep a history (DefaultMaxCircuits;
	// the one heard from longest ago makes room).
	Every       time.Duration
	Window      time.Duration
	MaxCircuits int
	Log         *slog.Logger
}

// Page is the live page of one front-end, and the history behind its
// charts.
type Page struct {
	cfg   Config
	start time.Time
	n     int // samples per ring

	mu     sync.Mutex // guards the fields below
	hist   map[string]*ring
	charts map[string]chart
	last   Snapshot
	// For the summary: circuits seen, and the sums of the rates sampled
	// (each over the samples where it was not 0).
	seen                   uint64
	asked, share, received mean
}

// mean is a running mean.
type mean struct {
	sum float64
	n   uint64
}

func (m *mean) add(x float64) {
	if x > 0 {
		m.sum += x
		m.n++
	}
}

func (m mean) value() float64 {
	if m.n == 0 {
		return 0
	}
	return m.sum / float64(m.n)
}

// chart is a circuit's chart, drawn for one generation of its ring.
type chart struct {
	gen uint64
	svg template.HTML
}

// New validates cfg; start is the time the front-end started.
func New(cfg Config, start time.Time) (*Page, error) {
	var errs []error
	if cfg.Front == "" {
		errs = append(errs, errors.New("no front-end name"))
	}
	if cfg.Source == nil {
		errs = append(errs, errors.New("no source"))
	}
	if cfg.Every < 0 || cfg.Window < 0 || cfg.MaxCircuits < 0 {
		errs = append(errs, fmt.Errorf("every %v, window %v, max circuits %d: want positive (or 0 for the default)", cfg.Every, cfg.Window, cfg.MaxCircuits))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("status page: %w", err)
	}
	cfg.Every = cmpOr(cfg.Every, DefaultEvery)
	cfg.Window = cmpOr(cfg.Window, DefaultWindow)
	cfg.MaxCircuits = cmpOr(cfg.MaxCircuits, DefaultMaxCircuits)
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	n := max(2, int(cfg.Window/cfg.Every))
	return &Page{cfg: cfg, start: start, n: n, hist: map[string]*ring{}, charts: map[string]chart{}}, nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// HistoryBytes is the memory one circuit's history takes.
func (p *Page) HistoryBytes() int { return p.n * sampleBytes }

// Run samples every Every until ctx ends.
func (p *Page) Run(ctx context.Context) error {
	t := time.NewTicker(p.cfg.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			p.Sample(now)
		}
	}
}

// Sample takes the snapshot at now into the histories.
func (p *Page) Sample(now time.Time) {
	s := p.snapshot(now)
	p.mu.Lock()
	defer p.mu.Unlock()
	at := int32(now.Sub(p.start) / time.Second)
	for _, c := range s.Circuits {
		r := p.hist[c.ID]
		if r == nil {
			p.makeRoomLocked(now)
			r = newRing(p.n)
			p.hist[c.ID] = r
			p.seen++
		}
		p.asked.add(c.AskedBPS)
		p.share.add(c.ShareBPS)
		p.received.add(c.ReceivedBPS)
		r.add(sample{at: at, recv: float32(c.ReceivedBPS / 1000), share: float32(c.ShareBPS / 1000), viewer: float32(c.ViewerAskedBPS / 1000),
			asked: float32(c.AskedBPS / 1000), loss: float32(c.Loss), rtt: float32(c.RTTms)}, now)
	}
	// A circuit gone for the window has nothing left to chart.
	for id, r := range p.hist {
		if now.Sub(r.seen) > p.cfg.Window {
			delete(p.hist, id)
			delete(p.charts, id)
		}
	}
	p.last = s
}

// makeRoomLocked drops the history heard from longest ago when
// MaxCircuits are kept. p.mu is held.
func (p *Page) makeRoomLocked(now time.Time) {
	if len(p.hist) < p.cfg.MaxCircuits {
		return
	}
	var oldest string
	at := now
	for id, r := range p.hist {
		if !r.seen.After(at) {
			oldest, at = id, r.seen
		}
	}
	delete(p.hist, oldest)
	delete(p.charts, oldest)
}

// Histories is the number of circuits with a history.
func (p *Page) Histories() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.hist)
}

// Snapshot returns the state now, with the health, the queueing delay
// the history gives and the words filled in.
func (p *Page) Snapshot(now time.Time) Snapshot { return p.snapshot(now) }

func (p *Page) snapshot(now time.Time) Snapshot {
	s := p.cfg.Source(now)
	s.Front, s.Version, s.Started, s.At = p.cfg.Front, p.cfg.Version, p.start, now
	s.Healthy, s.Health = true, []string{"serving"}
	if p.cfg.Health != nil {
		s.Healthy, s.Health = p.cfg.Health(now)
	}
	slices.SortFunc(s.Circuits, func(a, b Circuit) int { return strings.Compare(a.ID, b.ID) })
	p.mu.Lock()
	for i := range s.Circuits {
		c := &s.Circuits[i]
		// The gateway measures its scheduler's queues; elsewhere the
		// queueing delay is what the RTT has above its least.
		if r := p.hist[c.ID]; r != nil && s.Front != "gateway" && c.RTTms > 0 {
			if least := r.minRTT(); least > 0 && c.RTTms > least {
				c.QueueMs = c.RTTms - least
			}
		}
	}
	p.mu.Unlock()
	for i := range s.Circuits {
		s.Circuits[i].explain()
	}
	return s
}

// ServeHTTP serves "/" (the page; "/?live=1" its live part alone, which
// the page's script fetches), "/status.json", "/healthz" and "/metrics".
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/":
		p.servePage(w, r)
	case "/status.json":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(p.snapshot(time.Now()))
	case "/healthz":
		s := p.snapshot(time.Now())
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !s.Healthy {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		for _, l := range s.Health {
			fmt.Fprintln(w, l)
		}
	case "/metrics":
		if p.cfg.Metrics == nil {
			http.NotFound(w, r)
			return
		}
		p.cfg.Metrics.ServeHTTP(w, r)
	default:
		http.Error(w, "not found: this is fairgrid's status page at /, its state at /status.json, /healthz and /metrics", http.StatusNotFound)
	}
}

//go:embed page.html
var pageHTML string

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"kbit":    Kbit,
	"percent": Percent,
	"millis":  Millis,
	"millis0": func(ms float64) string {
		if ms <= 0 {
			return "0 ms"
		}
		return Millis(ms)
	},
	"clock": func(t time.Time) string { return t.Format("15:04:05") },
	"since": func(a, b time.Time) string {
		return b.Sub(a).Round(time.Second).String()
	},
}).Parse(pageHTML))

// view is what the template reads.
type view struct {
	Snapshot
	Charts  map[string]template.HTML
	Minutes int
}

func (p *Page) servePage(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	v := view{Snapshot: p.snapshot(now), Charts: map[string]template.HTML{}, Minutes: int(p.cfg.Window / time.Minute)}
	for _, c := range v.Circuits {
		if svg, ok := p.chart(c.ID, now); ok {
			v.Charts[c.ID] = svg
		}
	}
	name := "page"
	if r.URL.Query().Get("live") != "" {
		name = "live"
	}
	var b bytes.Buffer
	if err := pageTemplate.ExecuteTemplate(&b, name, v); err != nil {
		p.cfg.Log.Error("status page", "err", err)
		http.Error(w, "status page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b.Bytes())
}

// chart returns circuit id's chart, drawn again only if the circuit has
// a sample since.
func (p *Page) chart(id string, now time.Time) (template.HTML, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.hist[id]
	if r == nil {
		return "", false
	}
	if c, ok := p.charts[id]; ok && c.gen == r.gen {
		return c.svg, true
	}
	svg, err := drawChart(r.samples(nil), int32(now.Sub(p.start)/time.Second), p.cfg.Window.Seconds())
	if err != nil {
		p.cfg.Log.Warn("status page: chart", "circuit", id, "err", err)
		return "", false
	}
	c := chart{gen: r.gen, svg: template.HTML(svg)} //nolint:gosec // drawn by vgsvg, which escapes its text
	p.charts[id] = c
	return c.svg, true
}

// Summary is what a front-end did while it ran, for its last log line.
type Summary struct {
	Ran time.Duration
	// Circuits is the number seen (a circuit gone for the window and
	// back counts twice).
	Circuits uint64
	// The means over the samples of every circuit, each of those where it
	// was known: fairgrid's request, one share, what was received.
	AskedBPS, ShareBPS, ReceivedBPS float64
	Totals                          []Count // the last sample's
}

// Summary samples once more (a front-end stopped within its first Every
// has circuits too) and returns what the page sampled since start.
func (p *Page) Summary(now time.Time) Summary {
	p.Sample(now)
	p.mu.Lock()
	defer p.mu.Unlock()
	return Summary{Ran: now.Sub(p.start).Round(time.Second), Circuits: p.seen, AskedBPS: p.asked.value(), ShareBPS: p.share.value(),
		ReceivedBPS: p.received.value(), Totals: p.last.Totals}
}

// Attrs are the summary as log attributes: rates in kbit/s, each total
// under its name with spaces as underscores.
func (s Summary) Attrs() []any {
	kbit := func(bps float64) float64 { return math.Round(bps/100) / 10 }
	out := []any{"ran", s.Ran, "circuits_seen", s.Circuits, "asked_kbps_mean", kbit(s.AskedBPS), "share_kbps_mean", kbit(s.ShareBPS), "received_kbps_mean", kbit(s.ReceivedBPS)}
	for _, c := range s.Totals {
		out = append(out, strings.NewReplacer(" ", "_", "-", "_").Replace(c.Name), c.N)
	}
	return out
}

package configs_test

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fairgrid/fairgrid/configs"
	"github.com/fairgrid/fairgrid/opensim/gateway"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/proxy"
	"github.com/fairgrid/fairgrid/throttle/sidecar"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// dashboard is the part of Grafana's dashboard JSON model the checks read.
type dashboard struct {
	Title         string  `json:"title"`
	UID           string  `json:"uid"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"` // a string, or {"query": …} for query variables
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	GridPos struct{ X, Y, W, H int } `json:"gridPos"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	data, err := os.ReadFile("grafana-fairgrid.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(strings.NewReader(string(data)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("grafana-fairgrid.json: %v", err)
	}
	return d
}

// registeredNames are the metric names the daemon's and the proxy's
// exporters describe: throttle's collector and the standard Go, process and
// build-info collectors that `fairgrid run` registers beside it, the
// proxy's collectors (its SOCKS5 server's and its own), and the metrics
// cmd/fairgrid defines itself.
func registeredNames(t *testing.T) map[string]bool {
	t.Helper()
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	names := map[string]bool{}
	loop, err := throttle.New(configs.Default().Throttle(), nil)
	if err != nil {
		t.Fatal(err)
	}
	px, err := proxy.New(proxy.Config{}, sidecar.Config{Loop: loop}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range append([]prometheus.Collector{
		&sidecar.Collector{},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewBuildInfoCollector(),
		gateway.NewCollector(nil, 0), // Describe reads no gateway
	}, px.Collectors()...) {
		ch := make(chan *prometheus.Desc, 256)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := fqName.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("no name in %v", d)
			}
			names[m[1]] = true
		}
	}
	for _, n := range commandMetricNames(t) {
		names[n] = true
	}
	for _, want := range []string{"fairgrid_circuit_rtt_seconds", "fairgrid_proxy_refused_total", "process_cpu_seconds_total"} {
		if !names[want] {
			t.Fatalf("the exporters describe no %s: the name reading is broken (%d names)", want, len(names))
		}
	}
	return names
}

// commandMetricNames are the metrics that cmd/fairgrid defines itself
// (the proxy's rewrite outcomes, say): the Name of every prometheus
// CounterOpts, GaugeOpts, HistogramOpts or SummaryOpts literal in its
// non-test files. Package main cannot be imported, so its source is read.
func commandMetricNames(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("../cmd/fairgrid/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("cmd/fairgrid sources: %v (%d files)", err, len(files))
	}
	var names []string
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			sel, ok := lit.Type.(*ast.SelectorExpr)
			if !ok || !strings.HasSuffix(sel.Sel.Name, "Opts") {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "prometheus" {
				return true
			}
			for _, e := range lit.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if key, isIdent := kv.Key.(*ast.Ident); !ok || !isIdent || key.Name != "Name" {
					continue
				}
				if v, ok := kv.Value.(*ast.BasicLit); ok && v.Kind == token.STRING {
					name, err := strconv.Unquote(v.Value)
					if err != nil {
						t.Fatalf("%s: %v", fset.Position(v.Pos()), err)
					}
					names = append(names, name)
				}
			}
			return true
		})
	}
	return names
}

// promQLWords are the words of PromQL that are not metric names when not
// followed by a parenthesis: aggregations take their modifier first
// ("sum by (x) (…)"), the rest are operators and constants.
var promQLWords = map[string]bool{
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true, "limitk": true, "limit_ratio": true,
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true,
}

// labelLists are the modifiers followed by a list of label names.
var labelLists = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

var grafanaVariable = regexp.MustCompile(`\$\{?\w+\}?`)

// metricNames returns the metric names a PromQL expression (or a Grafana
// label_values query) selects: every identifier outside strings, label
// matchers, ranges and label lists that is neither a function nor a
// keyword.
func metricNames(expr string) ([]string, error) {
	s := grafanaVariable.ReplaceAllString(expr, "")
	var names []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			end, err := skipString(s, i)
			if err != nil {
				return nil, err
			}
			i = end
		case c == '{' || c == '[':
			end, err := skipBracket(s, i)
			if err != nil {
				return nil, err
			}
			i = end
		case c >= '0' && c <= '9' || c == '.':
			for i < len(s) && (isIdent(s[i]) || s[i] == '.') {
				i++
			}
		case isIdentStart(c):
			start := i
			for i < len(s) && isIdent(s[i]) {
				i++
			}
			word := s[start:i]
			next := strings.TrimLeft(s[i:], " \t\n")
			switch {
			case labelLists[word] && strings.HasPrefix(next, "("):
				end, err := skipBracket(s, len(s)-len(next))
				if err != nil {
					return nil, err
				}
				i = end
			case word == "label_values" && strings.HasPrefix(next, "("):
				// label_values(selector, label): only the selector names
				// a metric.
				open := len(s) - len(next)
				end, err := skipBracket(s, open)
				if err != nil {
					return nil, err
				}
				inner := s[open+1 : end-1]
				if comma := topLevelComma(inner); comma >= 0 {
					inner = inner[:comma]
				}
				more, err := metricNames(inner)
				if err != nil {
					return nil, err
				}
				names = append(names, more...)
				i = end
			case strings.HasPrefix(next, "(") || promQLWords[word]:
			default:
				names = append(names, word)
			}
		default:
			i++
		}
	}
	return names, nil
}

func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdent(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

// skipString returns the index after the string literal starting at s[i].
func skipString(s string, i int) (int, error) {
	quote := s[i]
	for j := i + 1; j < len(s); j++ {
		if s[j] == '\\' && quote != '`' {
			j++
			continue
		}
		if s[j] == quote {
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("unterminated string at %d in %q", i, s)
}

// skipBracket returns the index after the bracket that closes s[i],
// skipping strings inside.
func skipBracket(s string, i int) (int, error) {
	closing := map[byte]byte{'{': '}', '[': ']', '(': ')'}
	var stack []byte
	for j := i; j < len(s); j++ {
		switch c := s[j]; {
		case c == '"' || c == '\'' || c == '`':
			end, err := skipString(s, j)
			if err != nil {
				return 0, err
			}
			j = end - 1
		case closing[c] != 0:
			stack = append(stack, closing[c])
		case c == '}' || c == ']' || c == ')':
			if len(stack) == 0 || stack[len(stack)-1] != c {
				return 0, fmt.Errorf("unbalanced %q at %d in %q", c, j, s)
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return j + 1, nil
			}
		}
	}
	return 0, fmt.Errorf("unclosed %q at %d in %q", s[i], i, s)
}

func topLevelComma(s string) int {
	depth := 0
	for j := 0; j < len(s); j++ {
		switch s[j] {
		case '(', '{', '[':
			depth++
		case ')', '}', ']':
			depth--
		case '"', '\'', '`':
			if end, err := skipString(s, j); err == nil {
				j = end - 1
			}
		case ',':
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// unregistered returns each query (with where it is) naming a metric that
// no exporter registers. Counters and summaries also answer to their
// _sum, _count and _bucket series.
func unregistered(queries map[string]string, names map[string]bool) []string {
	var bad []string
	for where, q := range queries {
		used, err := metricNames(q)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", where, err))
			continue
		}
		if len(used) == 0 {
			bad = append(bad, fmt.Sprintf("%s: %q names no metric", where, q))
		}
		for _, n := range used {
			base := n
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				base = strings.TrimSuffix(base, suffix)
			}
			if !names[n] && !names[base] {
				bad = append(bad, fmt.Sprintf("%s: %s is registered by no exporter", where, n))
			}
		}
	}
	slices.Sort(bad)
	return bad
}

// queries returns every PromQL expression of the dashboard, panels and
// query variables, keyed by where it is.
func (d dashboard) queries(t *testing.T) map[string]string {
	t.Helper()
	q := map[string]string{}
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			q[fmt.Sprintf("panel %d %q target %s", p.ID, p.Title, tg.RefID)] = tg.Expr
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var query struct{ Query string }
		if err := json.Unmarshal(v.Query, &query); err != nil {
			t.Fatalf("variable %s: query: %v", v.Name, err)
		}
		q["variable "+v.Name] = query.Query
	}
	return q
}

func (d dashboard) allPanels() []panel {
	var all []panel
	for _, p := range d.Panels {
		all = append(all, p)
		all = append(all, p.Panels...)
	}
	return all
}

// TestGrafanaDashboard: the dashboard is a Grafana dashboard that imports
// on its own (title, uid, a Prometheus data-source variable every panel
// uses, unique panel ids, panels with targets on the 24-column grid,
// none overlapping), and every metric its queries name is one the daemon's
// or the proxy's exporter registers.
func TestGrafanaDashboard(t *testing.T) {
	d := loadDashboard(t)
	if d.Title == "" || d.UID == "" || d.SchemaVersion < 30 || len(d.Panels) == 0 {
		t.Errorf("title %q, uid %q, schemaVersion %d, %d panels: not a dashboard Grafana imports", d.Title, d.UID, d.SchemaVersion, len(d.Panels))
	}
	datasourceVar := ""
	for _, v := range d.Templating.List {
		var q string
		if v.Type == "datasource" && json.Unmarshal(v.Query, &q) == nil && q == "prometheus" {
			datasourceVar = v.Name
		}
	}
	if datasourceVar == "" {
		t.Fatal("no Prometheus data-source variable: the dashboard would be bound to one installation's data source")
	}
	ids := map[int]string{}
	occupied := map[[2]int]string{}
	queries := 0
	for _, p := range d.allPanels() {
		if other, dup := ids[p.ID]; dup || p.ID <= 0 {
			t.Errorf("panel %q has id %d, as %q", p.Title, p.ID, other)
		}
		ids[p.ID] = p.Title
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 || g.Y < 0 {
			t.Errorf("panel %q: gridPos %+v off Grafana's 24-column grid", p.Title, g)
		}
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other, taken := occupied[[2]int{x, y}]; taken {
					t.Fatalf("panel %q overlaps %q at column %d, row %d", p.Title, other, x, y)
				}
				occupied[[2]int{x, y}] = p.Title
			}
		}
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no targets", p.Title)
		}
		if p.Datasource == nil || p.Datasource.UID != "${"+datasourceVar+"}" {
			t.Errorf("panel %q does not use the data-source variable ${%s}", p.Title, datasourceVar)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("panel %q: target %q with expression %q (empty, or refId repeated)", p.Title, tg.RefID, tg.Expr)
			}
			refs[tg.RefID] = true
			queries++
		}
	}
	if queries == 0 {
		t.Fatal("no queries")
	}
	for _, problem := range unregistered(d.queries(t), registeredNames(t)) {
		t.Error(problem)
	}
}

// TestDashboardCheckFindsUnknownNames: the check above fails for a query
// naming a metric no exporter registers (a renamed metric, a typo) and
// accepts the PromQL forms the dashboard uses.
func TestDashboardCheckFindsUnknownNames(t *testing.T) {
	names := map[string]bool{"fairgrid_circuit_rtt_seconds": true, "fairgrid_decode_errors_total": true, "go_gc_duration_seconds": true}
	for _, tc := range []struct {
		query string
		want  []string // metric names found
		bad   bool
	}{
		{`fairgrid_circuit_rtt_seconds{instance=~"$instance", circuit=~"$circuit"}`, []string{"fairgrid_circuit_rtt_seconds"}, false},
		{`sum by (reason) (rate(fairgrid_decode_errors_total{instance=~"$instance"}[$__rate_interval])) * 60`, []string{"fairgrid_decode_errors_total"}, false},
		{`label_values(fairgrid_circuit_rtt_seconds{instance=~"$instance"}, circuit)`, []string{"fairgrid_circuit_rtt_seconds"}, false},
		{`rate(go_gc_duration_seconds_count[5m]) / on (instance) group_left (version) fairgrid_circuit_rtt_seconds > 0.5e-3`, []string{"go_gc_duration_seconds_count", "fairgrid_circuit_rtt_seconds"}, false},
		{`fairgrid_circuit_rtt_seconds{circuit="a}b"} offset 5m`, []string{"fairgrid_circuit_rtt_seconds"}, false},
		{`fairgrid_circuit_rtt_second`, []string{"fairgrid_circuit_rtt_second"}, true},
		{`sum(rate(fairgrid_circuit_rtt_seconds[5m])) / sum(fairgrid_throttle_requests_sent)`, []string{"fairgrid_circuit_rtt_seconds", "fairgrid_throttle_requests_sent"}, true},
		{`label_values(fairgrid_circuit, circuit)`, []string{"fairgrid_circuit"}, true},
		{`vector(1)`, nil, true},
		{`fairgrid_circuit_rtt_seconds{circuit="a`, nil, true},
	} {
		got, _ := metricNames(tc.query)
		if !slices.Equal(got, tc.want) {
			t.Errorf("metricNames(%q) = %q, want %q", tc.query, got, tc.want)
		}
		if bad := unregistered(map[string]string{"q": tc.query}, names); (len(bad) > 0) != tc.bad {
			t.Errorf("%q: problems %q, want some: %v", tc.query, bad, tc.bad)
		}
	}
}

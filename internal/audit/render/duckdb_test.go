package render

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/audit"
	"github.com/fairgrid/fairgrid/internal/browsertest"
)

// duckdbPackage is DuckDB's Node client, pinned so that every machine
// queries with the same engine. It carries DuckDB itself as a prebuilt
// binding in a registry package (@duckdb/node-bindings-<os>-<arch>).
const duckdbPackage = "@duckdb/node-api@1.5.6-r.1"

// rankQuery is the README's query: circuits ranked by received/fair, over
// any number of audits (the path may be a glob). Circuits whose fair rate
// is unknown or unbounded have a null ratio and are left out rather than
// ranked as 0.
const rankQuery = `SELECT file, circuit, direction, verdict, received_over_fair,
       mean_bit_per_s, fair_mean_s_bit_per_s, fair_nominal_s_bit_per_s,
       loss_event_rate, rtt_ms
FROM read_parquet('%s')
WHERE received_over_fair IS NOT NULL
ORDER BY received_over_fair DESC
LIMIT 20`

// duckdbScript runs each query given as JSON on argv and prints every
// result's rows as JSON.
const duckdbScript = `
const path = require('path');
const [prefix, queriesJSON] = process.argv.slice(2);
const duckdb = require(path.join(prefix, 'node_modules', '@duckdb', 'node-api'));
(async () => {
  const instance = await duckdb.DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  const out = {};
  for (const [name, sql] of Object.entries(JSON.parse(queriesJSON))) {
    const reader = await conn.runAndReadAll(sql);
    out[name] = reader.getRowObjectsJson();
  }
  process.stdout.write(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
`

// duckdbPrefix returns the npm prefix holding DuckDB's Node client,
// installing it into the user's cache directory (outside the repository)
// when missing. It skips the test, naming the reason, where node or npm
// is missing or the install fails (no registry).
func duckdbPrefix(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("skipped: node is not installed (DuckDB runs from its Node client)")
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Skipf("skipped: no cache directory for DuckDB's Node client: %v", err)
	}
	prefix := filepath.Join(cache, "fairgrid", "duckdb")
	if _, err := os.Stat(filepath.Join(prefix, "node_modules", "@duckdb", "node-api", "package.json")); err == nil {
		return prefix
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("skipped: npm is not installed, so DuckDB's Node client cannot be installed")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--prefix", prefix, duckdbPackage)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("skipped: npm install %s into %s failed (%v): %s", duckdbPackage, prefix, err, browsertest.Tail(out, 400))
	}
	t.Logf("installed %s into %s with %s (node %s)", duckdbPackage, prefix, npm, node)
	return prefix
}

// runDuckDB runs the named queries in DuckDB and returns their rows.
func runDuckDB(t *testing.T, prefix string, queries map[string]string) map[string][]map[string]any {
	t.Helper()
	script := filepath.Join(t.TempDir(), "query.cjs")
	if err := os.WriteFile(script, []byte(duckdbScript), 0o644); err != nil {
		t.Fatal(err)
	}
	q, err := json.Marshal(queries)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script, prefix, string(q))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("duckdb: %v: %s", err, stderr.String())
	}
	var res map[string][]map[string]any
	dec := json.NewDecoder(strings.NewReader(string(out)))
	dec.UseNumber()
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("duckdb output: %v: %s", err, browsertest.Tail(out, 400))
	}
	return res
}

// duckNumber reads a DuckDB JSON value: doubles come as numbers, BIGINT as
// strings (they may exceed 2^53), NULL as null.
func duckNumber(v any) (float64, bool, error) {
	switch v := v.(type) {
	case nil:
		return 0, false, nil
	case json.Number:
		f, err := v.Float64()
		return f, true, err
	case string:
		var f float64
		_, err := fmt.Sscan(v, &f)
		return f, true, err
	}
	return 0, false, fmt.Errorf("not a number: %T %v", v, v)
}

func one(t *testing.T, rows []map[string]any, column string) float64 {
	t.Helper()
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1", len(rows))
	}
	f, ok, err := duckNumber(rows[0][column])
	if err != nil || !ok {
		t.Fatalf("%s = %v: %v", column, rows[0][column], err)
	}
	return f
}

// TestDuckDB reads the three tables of a two-file stream with real DuckDB
// and compares its counts, nulls, sums of flattened columns, row groups
// and the README's ranking query with the report's own values.
func TestDuckDB(t *testing.T) {
	prefix := duckdbPrefix(t)
	reports := []*audit.Report{makeReport(11, 10, 200), makeReport(12, 6, 90)}
	root := t.TempDir()
	dir := filepath.Join(root, "day-1")
	w, err := NewParquetWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		if err := w.WriteFile(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// a second audit beside it, as a grid operator's glob would find
	if err := WriteParquet(filepath.Join(root, "day-2"), makeReport(13, 4, 30)); err != nil {
		t.Fatal(err)
	}
	all := append(reports, makeReport(13, 4, 30))

	file := func(name string) string { return filepath.ToSlash(filepath.Join(dir, name)) }
	queries := map[string]string{
		"circuits":     fmt.Sprintf("SELECT count(*) AS n FROM read_parquet('%s')", file(CircuitsFile)),
		"seconds":      fmt.Sprintf("SELECT count(*) AS n FROM read_parquet('%s')", file(SecondsFile)),
		"requests":     fmt.Sprintf("SELECT count(*) AS n FROM read_parquet('%s')", file(RequestsFile)),
		"no_rtt":       fmt.Sprintf("SELECT count(*) AS n FROM read_parquet('%s') WHERE rtt_ms IS NULL", file(CircuitsFile)),
		"unknown_fair": fmt.Sprintf("SELECT count(*) AS n FROM read_parquet('%s') WHERE fair_bit_per_s IS NULL", file(SecondsFile)),
		"texture":      fmt.Sprintf("SELECT sum(channel_texture_bit_per_s) AS s FROM read_parquet('%s')", file(SecondsFile)),
		"replayed":     fmt.Sprintf("SELECT sum(category_task_bit_per_s) AS s FROM read_parquet('%s') WHERE source = 'replay-tfrc'", file(RequestsFile)),
		"row_groups":   fmt.Sprintf("SELECT count(DISTINCT row_group_id) AS n FROM parquet_metadata('%s')", file(SecondsFile)),
		"rank":         fmt.Sprintf(rankQuery, filepath.ToSlash(filepath.Join(root, "*", CircuitsFile))),
	}
	res := runDuckDB(t, prefix, queries)

	var want struct {
		circuits, seconds, requests, noRTT, unknownFair int
		texture, replayed                               float64
	}
	for _, r := range reports {
		want.circuits += len(r.Circuits)
		want.seconds += len(r.Seconds)
		want.requests += len(r.Requests)
		for _, c := range r.Circuits {
			if c.RTTMs == nil {
				want.noRTT++
			}
		}
		for _, s := range r.Seconds {
			if s.FairBitPerS == nil {
				want.unknownFair++
			}
			want.texture += s.ChannelBitPerS[2]
		}
		for _, q := range r.Requests {
			if q.Source == audit.SourceReplayTFRC {
				want.replayed += q.CategoryBitPerS[4]
			}
		}
	}
	counts := []struct {
		query string
		want  int
	}{
		{"circuits", want.circuits}, {"seconds", want.seconds}, {"requests", want.requests},
		{"no_rtt", want.noRTT}, {"unknown_fair", want.unknownFair}, {"row_groups", len(reports)},
	}
	for _, c := range counts {
		if got := one(t, res[c.query], "n"); got != float64(c.want) {
			t.Errorf("%s: DuckDB counts %v, want %d", c.query, got, c.want)
		}
	}
	if want.noRTT == 0 || want.unknownFair == 0 {
		t.Fatal("the test reports have no nulls to count")
	}
	sums := []struct {
		query string
		want  float64
	}{{"texture", want.texture}, {"replayed", want.replayed}}
	for _, s := range sums {
		if got := one(t, res[s.query], "s"); math.Abs(got-s.want) > 1e-9*s.want {
			t.Errorf("%s: DuckDB sums %v, want %v", s.query, got, s.want)
		}
	}

	// The ranking, computed from the reports.
	var ranked []audit.Circuit
	for _, r := range all {
		for _, c := range r.Circuits {
			if c.ReceivedOverFair != nil {
				ranked = append(ranked, c)
			}
		}
	}
	slices.SortFunc(ranked, func(a, b audit.Circuit) int { return cmp.Compare(*b.ReceivedOverFair, *a.ReceivedOverFair) })
	ranked = ranked[:min(20, len(ranked))]
	rows := res["rank"]
	if len(rows) != len(ranked) {
		t.Fatalf("rank: %d rows, want %d", len(rows), len(ranked))
	}
	for i, row := range rows {
		c := ranked[i]
		ratio, ok, err := duckNumber(row["received_over_fair"])
		if err != nil || !ok {
			t.Fatalf("rank row %d: received_over_fair %v (%v)", i, row["received_over_fair"], err)
		}
		rtt, hasRTT, err := duckNumber(row["rtt_ms"])
		if err != nil {
			t.Fatal(err)
		}
		if row["circuit"] != c.Circuit || row["direction"] != c.Direction || row["file"] != c.File ||
			row["verdict"] != c.Verdict || ratio != *c.ReceivedOverFair || !hasRTT || rtt != *c.RTTMs {
			t.Errorf("rank %d: DuckDB %v, want %s %s %s %q %v rtt %v", i, row, c.File, c.Circuit, c.Direction, c.Verdict, *c.ReceivedOverFair, *c.RTTMs)
		}
	}
	if t.Failed() {
		return
	}
	t.Logf("DuckDB ranked %d circuits; first %v at %v× fair", len(rows), rows[0]["circuit"], rows[0]["received_over_fair"])
}

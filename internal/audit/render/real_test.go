package render

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/internal/audit"
	"github.com/fairgrid/fairgrid/lludp"
)

// realCapturePath is the OpenSim 0.9.2.2 capture of two TestClients on
// loopback (../shared/testdata/real/SOURCES.md, beside the repository):
// nothing lost, every resend spurious, RTT from pings, so the fair rate
// is unbounded.
var realCapturePath, _ = filepath.Abs("../../../../shared/testdata/real/opensim-0922-captures/testclient-2x-10min.pcap")

// realReport audits the real capture with the engine, as `fairgrid audit
// --seconds` does, or skips when the capture is not there.
func realReport(t testing.TB) *audit.Report {
	t.Helper()
	f, err := os.Open(realCapturePath)
	if err != nil {
		t.Skipf("skipped: the real capture is not beside the repository: %v", err)
	}
	defer f.Close()
	a, err := audit.New(audit.Config{Series: true})
	if err != nil {
		t.Fatal(err)
	}
	cr := &audit.CountingReader{R: f}
	rd, err := capture.NewReader(cr, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.Read([]audit.Input{{Name: filepath.Base(realCapturePath), Reader: rd, Counter: cr}}, nil)
	r := a.Report()
	if len(r.Circuits) == 0 || len(r.Seconds) == 0 {
		t.Fatalf("the engine found %d circuits and %d seconds in the real capture", len(r.Circuits), len(r.Seconds))
	}
	return r
}

// TestRealCapture renders the engine's report of the real capture: the
// Parquet tables read back equal with the unbounded fair rate as nulls,
// and the page passes the validator, says "unbounded" in words and
// draws no fair-rate figure from numbers it does not have.
func TestRealCapture(t *testing.T) {
	r := realReport(t)
	dir := artifacts(t)

	pq := filepath.Join(dir, "parquet")
	if err := WriteParquet(pq, r); err != nil {
		t.Fatal(err)
	}
	rows, _ := readTable[circuitRow](t, filepath.Join(pq, CircuitsFile))
	if len(rows) != len(r.Circuits) {
		t.Fatalf("%d circuit rows, want %d", len(rows), len(r.Circuits))
	}
	for i, row := range rows {
		got := row.Circuit
		got.CategoryBitPerS, got.ChannelBitPerS = row.categoryColumns.array(), row.channelColumns.array()
		if !reflect.DeepEqual(got, r.Circuits[i]) {
			t.Errorf("circuit %d:\n got %+v\nwant %+v", i, got, r.Circuits[i])
		}
		if got.FairMeanS != nil || got.ReceivedOverFair != nil || got.FairState != audit.FairUnbounded {
			t.Errorf("circuit %d: fair %v, ratio %v, state %q: loopback loses nothing, so unbounded and null", i, got.FairMeanS, got.ReceivedOverFair, got.FairState)
		}
	}
	seconds, _ := readTable[secondRow](t, filepath.Join(pq, SecondsFile))
	if len(seconds) != len(r.Seconds) {
		t.Errorf("%d second rows, want %d", len(seconds), len(r.Seconds))
	}

	path := writePage(t, dir, "real.html", r)
	page := readFile(t, path)
	figs, err := checkPage(page)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	ids := map[string]bool{}
	for _, f := range figs {
		ids[strings.TrimPrefix(f.id, "fig-")] = true
	}
	for _, id := range []string{"per-second", "per-connection", "loss"} {
		if ids[id] {
			t.Errorf("figure %q drawn, but no fair rate or loss is known", id)
		}
	}
	downs := 0
	for _, c := range r.Circuits {
		if c.Direction == "down" {
			downs++
		}
	}
	for k := range min(downs, busiestCircuits) {
		for _, id := range []string{"rate", "channels", "rtt", "loss-rate"} {
			if !ids[fmt.Sprintf("%s-%d", id, k)] {
				t.Errorf("no figure %s-%d for busy circuit %d (figures %v)", id, k, k, ids)
			}
		}
	}
	text := string(page)
	for _, want := range []string{"no loss: fair rate unbounded", "unbounded: no loss", "no second has a known TCP-fair rate",
		"The TCP-fair rate is not drawn: unbounded: no loss.", r.Circuits[0].AgentID, "read to the end"} {
		if !strings.Contains(text, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	t.Logf("real capture: %d circuits, %d seconds, %d requests; page %d KB with %d figures (%s)", len(r.Circuits), len(r.Seconds), len(r.Requests), len(page)/1024, len(figs), path)
}

// TestRealCaptureDuckDB queries the real capture's tables with DuckDB:
// every circuit's fair rate is a null with its state in words, and the
// README's ranking has nothing to rank.
func TestRealCaptureDuckDB(t *testing.T) {
	r := realReport(t)
	prefix := duckdbPrefix(t)
	dir := filepath.Join(t.TempDir(), "real")
	if err := WriteParquet(dir, r); err != nil {
		t.Fatal(err)
	}
	circuits := filepath.ToSlash(filepath.Join(dir, CircuitsFile))
	res := runDuckDB(t, prefix, map[string]string{
		"unbounded": fmt.Sprintf("SELECT count(*) AS n FROM read_parquet('%s') WHERE fair_state = '%s' AND fair_mean_s_bit_per_s IS NULL AND fair_nominal_s_bit_per_s IS NULL AND received_over_fair IS NULL", circuits, audit.FairUnbounded),
		"pinged":    fmt.Sprintf("SELECT count(*) AS n FROM read_parquet('%s') WHERE rtt_ms > 0", circuits),
		"seconds":   fmt.Sprintf("SELECT count(*) AS n FROM read_parquet('%s')", filepath.ToSlash(filepath.Join(dir, SecondsFile))),
		"rank":      fmt.Sprintf(rankQuery, circuits),
	})
	var pinged int
	for _, c := range r.Circuits {
		if c.RTTMs != nil && *c.RTTMs > 0 {
			pinged++
		}
	}
	if got := one(t, res["unbounded"], "n"); got != float64(len(r.Circuits)) {
		t.Errorf("%v circuits unbounded with null fair rates, want all %d", got, len(r.Circuits))
	}
	if got := one(t, res["pinged"], "n"); got != float64(pinged) {
		t.Errorf("%v circuits with an RTT, want %d", got, pinged)
	}
	if got := one(t, res["seconds"], "n"); got != float64(len(r.Seconds)) {
		t.Errorf("%v seconds, want %d", got, len(r.Seconds))
	}
	if len(res["rank"]) != 0 {
		t.Errorf("the ranking ranks %d circuits with no known fair rate: %v", len(res["rank"]), res["rank"])
	}
}

// observedReport is the real capture audited as the lab audits its
// viewer's datagrams (audit.Datagrams, the lab's report), with every 40th
// downstream datagram dropped, as a lossy bottleneck would, so the
// figures of a lossy circuit are drawn.
func observedReport(t testing.TB) *audit.Report {
	t.Helper()
	ds, err := capture.ReadFile(realCapturePath, nil)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skipf("skipped: the real capture is not beside the repository: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	var kept []lludp.Datagram
	var down int
	for _, d := range ds {
		if d.Src.Port() == 9000 {
			if down++; down%40 == 0 {
				continue
			}
		}
		kept = append(kept, d)
	}
	r, err := audit.Datagrams(audit.Config{Series: true}, "viewer", kept)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

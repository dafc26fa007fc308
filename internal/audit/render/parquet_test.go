package render

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/fairgrid/fairgrid/internal/audit"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim"
)

// readTable reads a whole Parquet file back with the library that wrote
// it, and its row groups' sizes.
func readTable[T any](t *testing.T, path string) ([]T, []int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var groups []int64
	for _, g := range f.RowGroups() {
		groups = append(groups, g.NumRows())
	}
	rows, err := parquet.Read[T](bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rows, groups
}

// TestParquetRoundTrip writes reports of different sizes, alone and in
// a stream, reads every table back and compares every row and null with
// the report, and counts one row group per report.
func TestParquetRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		reports []*audit.Report
	}{
		{"one report", []*audit.Report{makeReport(1, 9, 120)}},
		{"three files", []*audit.Report{makeReport(2, 3, 40), makeReport(3, 14, 300), makeReport(4, 1, 5)}},
		{"empty report", []*audit.Report{{}}},
		{"a file without seconds", []*audit.Report{{Circuits: makeReport(5, 2, 3).Circuits}, makeReport(6, 2, 10)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			if len(tt.reports) == 1 {
				if err := WriteParquet(dir, tt.reports[0]); err != nil {
					t.Fatal(err)
				}
			} else {
				w, err := NewParquetWriter(dir)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range tt.reports {
					if err := w.WriteFile(r); err != nil {
						t.Fatal(err)
					}
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
			}
			var circuits []audit.Circuit
			var seconds []audit.Second
			var requests []audit.Request
			var wantGroups [3][]int64
			for _, r := range tt.reports {
				circuits = append(circuits, r.Circuits...)
				seconds = append(seconds, r.Seconds...)
				requests = append(requests, r.Requests...)
				for k, n := range []int{len(r.Circuits), len(r.Seconds), len(r.Requests)} {
					if n > 0 {
						wantGroups[k] = append(wantGroups[k], int64(n))
					}
				}
			}

			gotC, groups := readTable[circuitRow](t, filepath.Join(dir, CircuitsFile))
			checkGroups(t, CircuitsFile, groups, wantGroups[0])
			if len(gotC) != len(circuits) {
				t.Fatalf("circuits: %d rows, want %d", len(gotC), len(circuits))
			}
			for i, row := range gotC {
				got := row.Circuit
				got.CategoryBitPerS, got.ChannelBitPerS = row.categoryColumns.array(), row.channelColumns.array()
				if !reflect.DeepEqual(got, circuits[i]) {
					t.Fatalf("circuit row %d:\n got %+v\nwant %+v", i, got, circuits[i])
				}
			}
			gotS, groups := readTable[secondRow](t, filepath.Join(dir, SecondsFile))
			checkGroups(t, SecondsFile, groups, wantGroups[1])
			if len(gotS) != len(seconds) {
				t.Fatalf("seconds: %d rows, want %d", len(gotS), len(seconds))
			}
			for i, row := range gotS {
				got := row.Second
				got.CategoryBitPerS, got.ChannelBitPerS = row.categoryColumns.array(), row.channelColumns.array()
				if !reflect.DeepEqual(got, seconds[i]) {
					t.Fatalf("second row %d:\n got %+v\nwant %+v", i, got, seconds[i])
				}
			}
			gotR, groups := readTable[requestRow](t, filepath.Join(dir, RequestsFile))
			checkGroups(t, RequestsFile, groups, wantGroups[2])
			if len(gotR) != len(requests) {
				t.Fatalf("requests: %d rows, want %d", len(gotR), len(requests))
			}
			for i, row := range gotR {
				got := row.Request
				got.CategoryBitPerS = row.categoryColumns.array()
				if !reflect.DeepEqual(got, requests[i]) {
					t.Fatalf("request row %d:\n got %+v\nwant %+v", i, got, requests[i])
				}
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), partialSuffix) {
					t.Errorf("%s left behind", e.Name())
				}
			}
		})
	}
}

func checkGroups(t *testing.T, name string, got, want []int64) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s: row groups of %v rows, want %v (one per report)", name, got, want)
	}
}

func (c categoryColumns) array() [7]float64 {
	return [7]float64{c.Resend, c.Land, c.Wind, c.Cloud, c.Task, c.Texture, c.Asset}
}

func (c channelColumns) array() [5]float64 {
	return [5]float64{c.Avatar, c.Task, c.Texture, c.Layer, c.Asset}
}

// TestParquetNulls checks the physical schema: a pointer field is an
// optional column and nil is a null, so "unknown" never reads as 0.
func TestParquetNulls(t *testing.T) {
	r := makeReport(7, 14, 20)
	dir := t.TempDir()
	if err := WriteParquet(dir, r); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, CircuitsFile))
	if err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var wantNulls int64
	for _, c := range r.Circuits {
		if c.RTTMs == nil {
			wantNulls++
		}
	}
	if wantNulls == 0 {
		t.Fatal("the test report has no circuit without RTT")
	}
	leaf, ok := f.Schema().Lookup("rtt_ms")
	if !ok {
		t.Fatal("no rtt_ms column")
	}
	if !leaf.Node.Optional() {
		t.Error("rtt_ms is not optional")
	}
	var nulls int64
	// the footer's statistics, which DuckDB uses to skip row groups
	for _, g := range f.Metadata().RowGroups {
		nulls += g.Columns[leaf.ColumnIndex].MetaData.Statistics.NullCount
	}
	if nulls != wantNulls {
		t.Errorf("rtt_ms: %d nulls, want %d", nulls, wantNulls)
	}
}

// TestColumnNames holds the flattened columns to lludp's and opensim's
// names, and fails when report.go gains an array the Parquet writer would
// silently drop.
func TestColumnNames(t *testing.T) {
	var cats, chans []string
	for i := range lludp.NumCategories {
		cats = append(cats, "category_"+strings.ToLower(lludp.Category(i).String())+"_bit_per_s")
	}
	for i := range opensim.NumChannels {
		chans = append(chans, "channel_"+strings.ToLower(opensim.Channel(i).String())+"_bit_per_s")
	}
	tests := []struct {
		name string
		row  any
		base reflect.Type
		want []string
	}{
		{"circuits", circuitRow{}, reflect.TypeFor[audit.Circuit](), append(slices.Clone(cats), chans...)},
		{"seconds", secondRow{}, reflect.TypeFor[audit.Second](), append(slices.Clone(cats), chans...)},
		{"requests", requestRow{}, reflect.TypeFor[audit.Request](), cats},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var columns []string
			for _, path := range parquet.SchemaOf(tt.row).Columns() {
				columns = append(columns, strings.Join(path, "."))
			}
			if got := columns[len(columns)-len(tt.want):]; !slices.Equal(got, tt.want) {
				t.Errorf("flattened columns %v, want %v", got, tt.want)
			}
			for i := range tt.base.NumField() {
				f := tt.base.Field(i)
				if tag, _, _ := strings.Cut(f.Tag.Get("parquet"), ","); tag == "-" && f.Name != "CategoryBitPerS" && f.Name != "ChannelBitPerS" {
					t.Errorf("audit.%s.%s is not written to Parquet: flatten it in parquet.go", tt.base.Name(), f.Name)
				}
			}
		})
	}
}

// TestParquetErrors covers the ways writing can fail: each returns an
// error and leaves no file that a glob could pick up half-written.
func TestParquetErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteParquet(file, makeReport(1, 1, 1)); err == nil {
		t.Error("WriteParquet into a regular file: no error")
	}
	if err := WriteParquet(t.TempDir(), nil); err == nil {
		t.Error("WriteParquet(nil report): no error")
	}

	dir := t.TempDir()
	w, err := NewParquetWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(nil); err == nil {
		t.Error("WriteFile(nil): no error")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(makeReport(1, 1, 1)); err == nil {
		t.Error("WriteFile after Close: no error")
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestParquetWriterConcurrent hands the writer reports from several
// goroutines at once, as a multi-file audit may: each report must still
// be one row group of its own rows, whatever the order (run with -race).
func TestParquetWriterConcurrent(t *testing.T) {
	dir := t.TempDir()
	w, err := NewParquetWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	reports := make([]*audit.Report, 6)
	for i := range reports {
		reports[i] = makeReport(uint64(100+i), i+1, 10*(i+1))
	}
	errs := make(chan error, len(reports))
	for _, r := range reports {
		go func() { errs <- w.WriteFile(r) }()
	}
	for range reports {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// Row groups come in any order; each must be exactly one report's
	// seconds, which their circuit names and counts identify.
	b := readFile(t, filepath.Join(dir, SecondsFile))
	f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := readTable[secondRow](t, filepath.Join(dir, SecondsFile))
	seen := map[int]bool{}
	var at int64
	for _, g := range f.RowGroups() {
		n := g.NumRows()
		got := rows[at : at+n]
		at += n
		match := -1
		for i, r := range reports {
			if int64(len(r.Seconds)) == n && got[0].Second.UnixS == r.Seconds[0].UnixS && got[0].Second.BitPerS == r.Seconds[0].BitPerS {
				match = i
			}
		}
		if match < 0 || seen[match] {
			t.Fatalf("row group of %d rows is no single report's seconds", n)
		}
		seen[match] = true
		for k, row := range got {
			if row.Second.BitPerS != reports[match].Seconds[k].BitPerS || row.Second.Circuit != reports[match].Seconds[k].Circuit {
				t.Fatalf("report %d's row group: row %d is %+v, want %+v", match, k, row.Second, reports[match].Seconds[k])
			}
		}
	}
	if len(seen) != len(reports) {
		t.Errorf("%d row groups matched, want %d", len(seen), len(reports))
	}
}

// TestCSVAndParquetShareColumns: --csv and --parquet write the same column
// names, so one query reads either.
func TestCSVAndParquetShareColumns(t *testing.T) {
	tests := []struct {
		name    string
		row     any
		csvHead func() []string
	}{
		{"circuits", circuitRow{}, func() []string { return csvHeader[audit.Circuit](t) }},
		{"seconds", secondRow{}, func() []string { return csvHeader[audit.Second](t) }},
		{"requests", requestRow{}, func() []string { return csvHeader[audit.Request](t) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var columns []string
			for _, path := range parquet.SchemaOf(tt.row).Columns() {
				columns = append(columns, strings.Join(path, "."))
			}
			csvCols := tt.csvHead()
			slices.Sort(columns)
			slices.Sort(csvCols)
			if !slices.Equal(columns, csvCols) {
				t.Errorf("Parquet columns %v\nCSV columns     %v", columns, csvCols)
			}
		})
	}
}

func csvHeader[T any](t *testing.T) []string {
	t.Helper()
	var b strings.Builder
	if err := audit.WriteCSVRows[T](&b, nil); err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(b.String()), ",")
}

package render

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/fairgrid/fairgrid/internal/audit"
)

// The three tables' file names in the Parquet directory.
const (
	CircuitsFile = "circuits.parquet"
	SecondsFile  = "seconds.parquet"
	RequestsFile = "requests.parquet"
)

// zstdFastest compresses the tables: Zstd is pure Go (klauspost/compress)
// and read by DuckDB, Spark and Trino. Its fastest level took 0.75–1.0×
// the default level's time in the same noisy run, for 0.4 % more bytes
// (100 circuits × 600 s; random-looking floats compress little anyway).
var zstdFastest = zstd.Codec{Level: zstd.SpeedFastest}

// partialSuffix marks a table still being written: a reader listing the
// directory (a DuckDB glob over many audits) never sees a file without its
// footer, which it could not open.
const partialSuffix = ".partial"

// categoryColumns flattens a [lludp.NumCategories] array into one plain
// column per category, in lludp's order (TestColumnNames holds the names
// to lludp.Category.String), so a query needs no list functions.
type categoryColumns struct {
	Resend  float64 `parquet:"category_resend_bit_per_s"`
	Land    float64 `parquet:"category_land_bit_per_s"`
	Wind    float64 `parquet:"category_wind_bit_per_s"`
	Cloud   float64 `parquet:"category_cloud_bit_per_s"`
	Task    float64 `parquet:"category_task_bit_per_s"`
	Texture float64 `parquet:"category_texture_bit_per_s"`
	Asset   float64 `parquet:"category_asset_bit_per_s"`
}

func categoriesOf(a [7]float64) categoryColumns {
	return categoryColumns{a[0], a[1], a[2], a[3], a[4], a[5], a[6]}
}

// channelColumns does the same for opensim's five scheduler channels.
type channelColumns struct {
	Avatar  float64 `parquet:"channel_avatar_bit_per_s"`
	Task    float64 `parquet:"channel_task_bit_per_s"`
	Texture float64 `parquet:"channel_texture_bit_per_s"`
	Layer   float64 `parquet:"channel_layer_bit_per_s"`
	Asset   float64 `parquet:"channel_asset_bit_per_s"`
}

func channelsOf(a [5]float64) channelColumns {
	return channelColumns{a[0], a[1], a[2], a[3], a[4]}
}

// The row types embed the report's rows, so a field the engine adds to
// report.go with a parquet tag becomes a column without a change here;
// parquet-go flattens embedded structs like encoding/json does.
type circuitRow struct {
	audit.Circuit
	categoryColumns
	channelColumns
}

type secondRow struct {
	audit.Second
	categoryColumns
	channelColumns
}

type requestRow struct {
	audit.Request
	categoryColumns
}

// ParquetWriter writes the three tables of many reports, each report's
// rows as one row group per table: the multi-file audit hands it one
// report per capture file, so a reader can skip whole files by the row
// groups' statistics. It is safe for concurrent use; rows of different
// reports never interleave.
type ParquetWriter struct {
	mu       sync.Mutex
	dir      string
	circuits *table[circuitRow]
	seconds  *table[secondRow]
	requests *table[requestRow]
	err      error // the first failure; every later call returns it
	closed   bool
	// scratch rows, reused from one report to the next
	circuitRows []circuitRow
	secondRows  []secondRow
	requestRows []requestRow
}

// table is one Parquet file being written.
type table[T any] struct {
	name string // final path
	file *os.File
	buf  *bufio.Writer
	w    *parquet.GenericWriter[T]
}

func openTable[T any](dir, name string) (*table[T], error) {
	path := filepath.Join(dir, name)
	f, err := os.Create(path + partialSuffix)
	if err != nil {
		return nil, fmt.Errorf("parquet: %w", err)
	}
	buf := bufio.NewWriterSize(f, 1<<16)
	w := parquet.NewGenericWriter[T](buf, parquet.Compression(&zstdFastest), parquet.CreatedBy("fairgrid audit", "", ""))
	return &table[T]{name: path, file: f, buf: buf, w: w}, nil
}

// write appends rows as one row group.
func (t *table[T]) write(rows []T) error {
	if len(rows) == 0 {
		return nil
	}
	if _, err := t.w.Write(rows); err != nil {
		return fmt.Errorf("parquet %s: %w", filepath.Base(t.name), err)
	}
	if err := t.w.Flush(); err != nil {
		return fmt.Errorf("parquet %s: %w", filepath.Base(t.name), err)
	}
	return nil
}

// finish writes the footer and renames the file into place; with a
// previous error it only removes the partial file.
func (t *table[T]) finish(failed bool) error {
	if t == nil {
		return nil
	}
	var err error
	if !failed {
		err = t.w.Close()
		if err == nil {
			err = t.buf.Flush()
		}
	}
	if cerr := t.file.Close(); err == nil {
		err = cerr
	}
	if err == nil && !failed {
		err = os.Rename(t.name+partialSuffix, t.name)
	}
	if err != nil || failed {
		os.Remove(t.name + partialSuffix)
	}
	if err != nil {
		return fmt.Errorf("parquet %s: %w", filepath.Base(t.name), err)
	}
	return nil
}

// NewParquetWriter starts circuits.parquet, seconds.parquet and
// requests.parquet in dir, creating dir if needed. The files appear under
// their names only when Close succeeds.
func NewParquetWriter(dir string) (*ParquetWriter, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("parquet: %w", err)
	}
	p := &ParquetWriter{dir: dir}
	var err error
	if p.circuits, err = openTable[circuitRow](dir, CircuitsFile); err == nil {
		if p.seconds, err = openTable[secondRow](dir, SecondsFile); err == nil {
			p.requests, err = openTable[requestRow](dir, RequestsFile)
		}
	}
	if err != nil {
		p.abort()
		return nil, err
	}
	return p, nil
}

// WriteFile appends r's circuits, seconds and requests, each table's rows
// as one row group (none for a table with no rows).
func (p *ParquetWriter) WriteFile(r *audit.Report) error {
	if r == nil {
		return errors.New("parquet: nil report")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("parquet: write after close")
	}
	if p.err != nil {
		return p.err
	}
	p.circuitRows = p.circuitRows[:0]
	for i := range r.Circuits {
		c := &r.Circuits[i]
		p.circuitRows = append(p.circuitRows, circuitRow{*c, categoriesOf(c.CategoryBitPerS), channelsOf(c.ChannelBitPerS)})
	}
	p.secondRows = p.secondRows[:0]
	for i := range r.Seconds {
		s := &r.Seconds[i]
		p.secondRows = append(p.secondRows, secondRow{*s, categoriesOf(s.CategoryBitPerS), channelsOf(s.ChannelBitPerS)})
	}
	p.requestRows = p.requestRows[:0]
	for i := range r.Requests {
		q := &r.Requests[i]
		p.requestRows = append(p.requestRows, requestRow{*q, categoriesOf(q.CategoryBitPerS)})
	}
	err := p.circuits.write(p.circuitRows)
	if err == nil {
		err = p.seconds.write(p.secondRows)
	}
	if err == nil {
		err = p.requests.write(p.requestRows)
	}
	p.err = err
	return err
}

// Close writes the footers and moves the three files into place. After a
// failed WriteFile it removes them instead and returns that failure.
func (p *ParquetWriter) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return p.err
	}
	p.closed = true
	if p.err != nil {
		p.abort()
		return p.err
	}
	p.err = errors.Join(p.circuits.finish(false), p.seconds.finish(false), p.requests.finish(false))
	return p.err
}

func (p *ParquetWriter) abort() {
	p.circuits.finish(true)
	p.seconds.finish(true)
	p.requests.finish(true)
}

// WriteParquet writes r's three tables to circuits.parquet,
// seconds.parquet and requests.parquet in dir, one row group each.
func WriteParquet(dir string, r *audit.Report) error {
	p, err := NewParquetWriter(dir)
	if err != nil {
		return err
	}
	if err := p.WriteFile(r); err != nil {
		p.Close()
		return err
	}
	return p.Close()
}

var _ io.Closer = (*ParquetWriter)(nil)

package audit

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteText writes the terminal table: one line per circuit and
// direction, the verdict first, then the inputs, the warnings and Jain's
// index.
func WriteText(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "verdict (vs a TCP flow, est.)\tcircuit\tdir\tagent\tduration s\tkbit/s\tpeak kbit/s\tloss\tp\tRTT ms\tTCP est. kbit/s\tfair kbit/s (s=mean)\tfair (s=1460)\tmedian/fair (s=%s)\trequests\n", r.Segment)
	for _, c := range r.Circuits {
		agent := c.AgentID
		if agent == "" {
			agent = "?"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.0f\t%.1f\t%.1f\t%.4f\t%.4f\t%s\t%s\t%s\t%s\t%s\t%d\n",
			c.Verdict, c.Circuit, c.Direction, agent, c.DurationS, c.MeanBitPerS/1000, c.PeakBitPerS/1000,
			c.LossRate, c.LossEventRate, optFloat(c.RTTMs, "%.2f"), fairText(c.FairState, c.FairTCP), fairText(c.FairState, c.FairMeanS),
			fairText(c.FairState, c.FairNominal), optFloat(c.RatioMedian, "%.2f"), c.Requests)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Circuits) == 0 {
		fmt.Fprintln(w, "no LLUDP circuits")
	}
	if r.JainIndex != nil {
		fmt.Fprintf(w, "Jain's fairness index of received/fair over %d circuits: %.3f\n", knownDown(r), *r.JainIndex)
	}
	for _, f := range r.Files {
		fmt.Fprintf(w, "%s: %d bytes, %d UDP datagrams, %d not LLUDP, %d undecoded", f.Name, f.Bytes, f.Datagrams, f.NotLLUDP, f.Undecoded)
		if other := f.UndecodedBy["other_port"]; other > 0 {
			fmt.Fprintf(w, " (%d of the not LLUDP on ports --ports leaves out)", other)
		}
		if f.StoppedAt != nil {
			fmt.Fprintf(w, "; stopped at byte %d: %s", *f.StoppedAt, f.StopReason)
		}
		fmt.Fprintln(w)
	}
	for _, s := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", s)
	}
	_, err := fmt.Fprint(w)
	return err
}

func knownDown(r *Report) int {
	n := 0
	for _, c := range r.Circuits {
		if c.Direction == "down" && c.ReceivedOverFair != nil {
			n++
		}
	}
	return n
}

func fairText(state string, v *float64) string {
	if state != FairKnown || v == nil {
		return state
	}
	return strconv.FormatFloat(*v/1000, 'f', 1, 64)
}

func optFloat(v *float64, format string) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf(format, *v)
}

// WriteJSON writes the report as one JSON document, each row of its
// tables on a line of its own. It streams: the rows are encoded one at a
// time, so a long capture's seconds never sit in memory twice. Without
// Series the seconds and requests are absent (empty, so omitted).
func WriteJSON(w io.Writer, r *Report) error {
	jw := &jsonWriter{w: bufio.NewWriterSize(w, 64<<10)}
	jw.enc = json.NewEncoder(&jw.buf)
	jw.enc.SetEscapeHTML(false) // "viewer > sim" stays readable
	jw.w.WriteString("{\n")
	writeArray(jw, "files", r.Files)
	writeArray(jw, "circuits", r.Circuits)
	if len(r.Seconds) > 0 {
		writeArray(jw, "seconds", r.Seconds)
	}
	if len(r.Requests) > 0 {
		writeArray(jw, "requests", r.Requests)
	}
	writeArray(jw, "messages", r.Messages)
	jw.member("jain_index", r.JainIndex)
	if len(r.Warnings) > 0 {
		jw.member("warnings", r.Warnings)
	}
	jw.w.WriteString("  \"segment\": ")
	jw.value(r.Segment)
	jw.w.WriteString("\n}\n")
	if jw.err != nil {
		return jw.err
	}
	return jw.w.Flush()
}

// jsonWriter encodes one value at a time and keeps the first error.
type jsonWriter struct {
	w   *bufio.Writer
	buf bytes.Buffer
	enc *json.Encoder
	err error
}

func (j *jsonWriter) value(v any) {
	j.buf.Reset()
	if err := j.enc.Encode(v); err != nil && j.err == nil {
		j.err = err
	}
	j.w.Write(bytes.TrimSuffix(j.buf.Bytes(), []byte("\n")))
}

func (j *jsonWriter) member(name string, v any) {
	fmt.Fprintf(j.w, "  %q: ", name)
	j.value(v)
	j.w.WriteString(",\n")
}

// writeArray writes a member holding rows, one per line.
func writeArray[T any](j *jsonWriter, name string, rows []T) {
	fmt.Fprintf(j.w, "  %q: [", name)
	for i := range rows {
		if i > 0 {
			j.w.WriteByte(',')
		}
		j.w.WriteString("\n    ")
		j.value(&rows[i])
	}
	if len(rows) > 0 {
		j.w.WriteString("\n  ")
	}
	j.w.WriteString("],\n")
}

// CSV file names in the --csv directory.
const (
	CircuitsCSV = "circuits.csv"
	SecondsCSV  = "seconds.csv"
	RequestsCSV = "requests.csv"
)

// WriteCSV writes circuits.csv, seconds.csv and requests.csv into dir,
// which it creates. Columns are the JSON names; the per-category and
// per-channel arrays become one column each (category_texture_bit_per_s,
// as in the Parquet tables).
// An unknown value is an empty cell.
func WriteCSV(dir string, r *Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("csv: %w", err)
	}
	if err := writeCSVFile(filepath.Join(dir, CircuitsCSV), r.Circuits); err != nil {
		return err
	}
	if err := writeCSVFile(filepath.Join(dir, SecondsCSV), r.Seconds); err != nil {
		return err
	}
	return writeCSVFile(filepath.Join(dir, RequestsCSV), r.Requests)
}

func writeCSVFile[T any](path string, rows []T) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("csv: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("csv: %w", cerr)
		}
	}()
	if err := WriteCSVRows(f, rows); err != nil {
		return fmt.Errorf("csv %s: %w", path, err)
	}
	return nil
}

// WriteCSVRows writes a header and one record per row of a report table.
func WriteCSVRows[T any](w io.Writer, rows []T) error {
	cw := csv.NewWriter(w)
	typ := reflect.TypeFor[T]()
	if err := cw.Write(csvHeader(typ)); err != nil {
		return err
	}
	var rec []string
	for i := range rows {
		rec = csvRecord(rec[:0], reflect.ValueOf(&rows[i]).Elem())
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// arrayLabels names the elements of the report's fixed arrays.
func arrayLabels(n int) []string {
	switch n {
	case len(categoryNames()):
		return categoryNames()
	case len(channelNames()):
		return channelNames()
	}
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

func csvHeader(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type.Kind() == reflect.Array {
			// category_bit_per_s → category_texture_bit_per_s, the
			// Parquet tables' names, so one query reads either.
			kind, unit, _ := strings.Cut(jsonName(f), "_")
			for _, l := range arrayLabels(f.Type.Len()) {
				out = append(out, kind+"_"+strings.ToLower(l)+"_"+unit)
			}
			continue
		}
		out = append(out, jsonName(f))
	}
	return out
}

func csvRecord(rec []string, v reflect.Value) []string {
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() == reflect.Array {
			for k := range f.Len() {
				rec = append(rec, csvValue(f.Index(k)))
			}
			continue
		}
		rec = append(rec, csvValue(f))
	}
	return rec
}

func csvValue(v reflect.Value) string {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Float64, reflect.Float32:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Int, reflect.Int64, reflect.Int32:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.String:
		return v.String()
	}
	return fmt.Sprint(v.Interface())
}

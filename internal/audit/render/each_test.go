package render

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/capture/capturetest"
	"github.com/fairgrid/fairgrid/capture/input"
	"github.com/fairgrid/fairgrid/internal/audit"
)

// TestEachFile: three captures give one row group each, holding exactly
// the rows the file gives audited alone, and a table each on the output;
// a file that cannot be opened is noted and fails the run.
func TestEachFile(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for seed := range uint64(3) {
		ds, err := capturetest.Session{Circuits: 2, Datagrams: 4000, Loss: 0.01 * float64(seed+1), Seed: seed}.Generate()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := capturetest.Write(&b, capturetest.Pcap, ds); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, fmt.Sprintf("c%d.pcap", seed))
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	cfg := audit.Config{Ports: capture.SimPorts, Series: true}
	each := func(out string, args ...string) (bool, string, []string) {
		var b strings.Builder
		var notes []string
		ok := EachFile(cfg, args, input.NewStdin(nil), out, false, &b, func(n string) { notes = append(notes, n) })
		return ok, b.String(), notes
	}
	all := filepath.Join(dir, "all")
	ok, out, notes := each(all, paths...)
	if !ok || len(notes) != 0 || strings.Count(out, "# ") != 3 {
		t.Fatalf("ok %v, notes %q, stdout:\n%s", ok, notes, out)
	}
	rows, groups := readTable[audit.Circuit](t, filepath.Join(all, "circuits.parquet"))
	if len(groups) != len(paths) {
		t.Fatalf("%d row groups, want one per file (%d)", len(groups), len(paths))
	}
	for i, p := range paths {
		group := rows[:groups[i]]
		rows = rows[groups[i]:]
		one := filepath.Join(dir, fmt.Sprint("one", i))
		if ok, _, notes := each(one, p); !ok {
			t.Fatalf("%s alone: %q", p, notes)
		}
		alone, _ := readTable[audit.Circuit](t, filepath.Join(one, "circuits.parquet"))
		if len(alone) == 0 || alone[0].Packets == 0 || alone[0].Verdict == "" || !reflect.DeepEqual(group, alone) {
			t.Errorf("file %d: row group %v, alone %v", i, group, alone)
		}
	}
	if ok, _, notes := each(filepath.Join(dir, "missing"), filepath.Join(dir, "nosuch.pcap")); ok || len(notes) == 0 || !strings.Contains(notes[0], "nosuch.pcap: no such file") {
		t.Errorf("a missing file: ok %v, notes %q", ok, notes)
	}
}

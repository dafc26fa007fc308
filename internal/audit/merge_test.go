package audit

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/capture/capturetest"
)

// TestMergeFiles: a session split into files (by time, and interleaved
// as two hosts' captures would be) audits as the whole, whatever order the
// files are named in: circuits keep their identity across files.
func TestMergeFiles(t *testing.T) {
	ds, err := capturetest.Session{Circuits: 3, Datagrams: 6000, Loss: 0.02, Seed: 11}.Generate()
	if err != nil {
		t.Fatal(err)
	}
	// In time order, every timestamp its own (the generator's are not
	// sorted): a merge by time has one right answer then.
	slices.SortStableFunc(ds, func(a, b capturetest.Datagram) int { return a.At.Compare(b.At) })
	for i := range ds {
		ds[i].At = ds[i].At.Add(time.Duration(i))
	}
	dir := t.TempDir()
	write := func(name string, part []capturetest.Datagram) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pcapOf(t, part), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var even, odd []capturetest.Datagram
	for i, d := range ds {
		if i%2 == 0 {
			even = append(even, d)
		} else {
			odd = append(odd, d)
		}
	}
	whole := write("whole.pcap", ds)
	first, second := write("first.pcap", ds[:len(ds)/3]), write("second.pcap", ds[len(ds)/3:])
	evenP, oddP := write("even.pcap", even), write("odd.pcap", odd)
	cfg := Config{Series: true}
	want := auditFiles(t, cfg, whole)
	for _, tc := range []struct {
		name  string
		files []string
		file  string // where every circuit is first seen
	}{
		{"split in time", []string{first, second}, "first.pcap"},
		{"split, named backwards", []string{second, first}, "first.pcap"},
		{"interleaved", []string{evenP, oddP}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := auditFiles(t, cfg, tc.files...)
			if len(got.Circuits) != len(want.Circuits) {
				t.Fatalf("%d circuit rows, the whole capture %d", len(got.Circuits), len(want.Circuits))
			}
			for i := range got.Circuits {
				g, w := got.Circuits[i], want.Circuits[i]
				if tc.file != "" && g.File != tc.file {
					t.Errorf("%s first seen in %q, want %q", g.Circuit, g.File, tc.file)
				}
				g.File, w.File = "", ""
				if !reflect.DeepEqual(g, w) {
					t.Errorf("circuit %d differs from the whole capture's:\n%+v\n%+v", i, g, w)
				}
			}
			if !reflect.DeepEqual(got.Seconds, want.Seconds) || !reflect.DeepEqual(got.Messages, want.Messages) {
				t.Errorf("seconds or messages differ from the whole capture's")
			}
			var n int64
			for _, f := range got.Files {
				n += f.Datagrams
			}
			if n != want.Files[0].Datagrams || len(got.Files) != len(tc.files) {
				t.Errorf("files %+v", got.Files)
			}
		})
	}
}

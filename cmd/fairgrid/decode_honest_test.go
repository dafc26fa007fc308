package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fairgrid/fairgrid/capture/capturetest"
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func gzipped(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestDecodeNoSilentSuccess: every input decode cannot read as asked is an
// error on stderr with exit 1, --summary included; a capture on stdin is
// read as a capture; hex on stdin still decodes.
func TestDecodeNoSilentSuccess(t *testing.T) {
	dir := t.TempDir()
	pcap := writeTestCapture(t, capturetest.Pcap, 0)
	pcapng := writeTestCapture(t, capturetest.Pcapng, 0)
	hexFile := filepath.Join(dir, "datagrams.txt")
	os.WriteFile(hexFile, []byte("000000000100010304000000\n"), 0o644)
	empty := filepath.Join(dir, "empty.pcap")
	os.WriteFile(empty, nil, 0o644)
	prose := filepath.Join(dir, "README.md")
	os.WriteFile(prose, []byte("# fairgrid\n\nTCP-fair congestion control.\nSecond Life and OpenSim stream the world.\n"), 0o644)
	badFirst := filepath.Join(dir, "bad-first.txt")
	os.WriteFile(badFirst, []byte("zz\n000000000100010304000000\n"), 0o644)
	comments := filepath.Join(dir, "comments.txt")
	os.WriteFile(comments, []byte("# nothing here\n\n"), 0o644)
	const hex = "000000000100010304000000\n"
	tests := []struct {
		name   string
		stdin  string
		args   []string
		code   int
		stdout string // "" means stdout must be empty
		stderr string
	}{
		{"summary missing absolute path", "", []string{"--summary", "/no/such/dir/real.pcap"}, exitFail, "", "/no/such/dir/real.pcap: no such file"},
		{"summary missing relative capture", "", []string{"--summary", "real.pcap"}, exitFail, "", "real.pcap: no such file"},
		{"missing path is not tried as hex", "", []string{"captures/x.bin"}, exitFail, "", "captures/x.bin: no such file"},
		{"summary missing word", "", []string{"--summary", "nosuch"}, exitFail, "", "nosuch: no such file"},
		{"summary directory", "", []string{"--summary", dir}, exitFail, "", "is a directory"},
		{"directory", "", []string{dir}, exitFail, "", "is a directory"},
		{"summary text file", "", []string{"--summary", hexFile}, exitFail, "", "datagrams.txt: not a capture"},
		{"summary empty file", "", []string{"--summary", empty}, exitFail, "", "empty.pcap: not a capture"},
		{"summary hex on stdin", hex, []string{"--summary"}, exitFail, "", "stdin: not a capture"},
		{"summary samples", "", []string{"--summary", "--samples"}, exitUsage, "", "--samples"},
		{"summary pcap on stdin", readFile(t, pcap), []string{"--summary"}, exitOK, "loss events", "1 circuits"},
		{"summary pcapng on stdin as -", readFile(t, pcapng), []string{"--summary", "-"}, exitOK, "loss events", "1 circuits"},
		{"summary gzip pcap on stdin", gzipped(t, readFile(t, pcap)), []string{"--summary", "--format", "json", "-"}, exitOK, `"rtt_samples":1`, "1 circuits"},
		{"summary gzip of text on stdin", gzipped(t, hex), []string{"--summary"}, exitFail, "", "stdin: not a pcap or pcapng capture"},
		{"datagrams of a pcap on stdin", readFile(t, pcap), []string{"--filter", "StartPingCheck"}, exitFail, "StartPingCheck", "1 of 23 datagrams failed"},
		{"hex on stdin", hex, nil, exitOK, "StartPingCheck", ""},
		{"hex on stdin as -", hex, []string{"-", "--format", "json"}, exitOK, `"message":"StartPingCheck"`, ""},
		{"empty stdin", "", nil, exitFail, "", "stdin: no datagrams"},
		{"only comments", "", []string{comments}, exitFail, "", "comments.txt: no datagrams"},
		{"prose is one error, not one per line", "", []string{prose}, exitFail, "", "README.md: neither a capture nor hex datagrams (" + prose + ":3 and the next line are not hex)"},
		{"stdin twice", hex, []string{"-", "-"}, exitFail, "StartPingCheck", "stdin: read already"},
		{"summary empty stdin", "", []string{"--summary"}, exitFail, "", "stdin: not a capture"},
	}
	// A hex file whose first line is bad is still a hex file: that line is
	// reported and the rest decoded.
	if code, out, errOut := runCmd(t, "", "decode", badFirst); code != exitFail || !strings.Contains(out, "bad-first.txt:1: error: not a hex datagram") ||
		!strings.Contains(out, "StartPingCheck") || !strings.Contains(errOut, "1 of 2 datagrams failed") {
		t.Errorf("bad first line: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCmd(t, tt.stdin, append([]string{"decode"}, tt.args...)...)
			if code != tt.code || !strings.Contains(errOut, tt.stderr) || tt.stdout == "" && out != "" || !strings.Contains(out, tt.stdout) {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out, errOut)
			}
			if strings.Contains(out+errOut, "invalid byte") && tt.code != exitOK {
				t.Errorf("an input reported as bad hex: %s%s", out, errOut)
			}
		})
	}
}

// TestDecodeBrokenCaptureMessages: a broken capture names the record and
// its byte offset, and an impossible pcapng length says so.
func TestDecodeBrokenCaptureMessages(t *testing.T) {
	cut := writeTestCapture(t, capturetest.Pcap, 10)
	ng := readFile(t, writeTestCapture(t, capturetest.Pcapng, 0))
	// A block of an impossible length after the capture: 5 is below the
	// 12 bytes any block has.
	bad := filepath.Join(t.TempDir(), "bad.pcapng")
	os.WriteFile(bad, binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32([]byte(ng), 6), 5), 0o644)
	for _, tc := range []struct {
		path string
		want *regexp.Regexp
	}{
		{cut, regexp.MustCompile(`test\.pcap: record 23 at byte [0-9]{1,3}(,[0-9]{3})*: the record needs \d+ bytes, the capture ends \d+ bytes into it: unexpected EOF \(the 22 packets before it are measured\)`)},
		{bad, regexp.MustCompile(`bad\.pcapng: record 24 at byte [0-9,]+: enhanced packet block length 5 is impossible: the least is 32 \(the 23 packets`)},
	} {
		code, out, errOut := runCmd(t, "", "decode", "--summary", "--format", "json", tc.path)
		if code != exitFail || !tc.want.MatchString(errOut) || strings.Contains(errOut, "unexpected EOF") && strings.Contains(tc.path, "pcapng") ||
			!strings.Contains(out, `"rtt_samples":1`) {
			t.Errorf("%s: exit %d\nstdout %s\nstderr %s\nwant stderr matching %s", tc.path, code, out, errOut, tc.want)
		}
	}
}

// brokenOutput fails every write after the first limit bytes, as a full
// disk or a closed pipe does.
type brokenOutput struct {
	limit, written int
	writes         int
}

func (w *brokenOutput) Write(p []byte) (int, error) {
	w.writes++
	if w.written+len(p) > w.limit {
		n := w.limit - w.written
		w.written = w.limit
		return n, errors.New("no space left on device")
	}
	w.written += len(p)
	return len(p), nil
}

// TestDecodeWriteError: output that cannot be written is an error, never
// exit 0 with the output lost, and decoding stops instead of going on into
// nothing.
func TestDecodeWriteError(t *testing.T) {
	pcap := writeTestCapture(t, capturetest.Pcap, 0)
	for _, tc := range []struct {
		name  string
		limit int
		args  []string
	}{
		{"summary", 0, []string{"--summary", pcap}},
		{"summary json", 10, []string{"--summary", "--format", "json", pcap}},
		{"datagrams", 0, []string{"--format", "json", pcap}},
		{"samples", 100, []string{"--samples"}},
		{"hex", 0, []string{"000000000100010304000000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &brokenOutput{limit: tc.limit}
			var errOut bytes.Buffer
			code := run(append([]string{"decode"}, tc.args...), stdio{strings.NewReader(""), w, &errOut})
			if code != exitFail || !strings.Contains(errOut.String(), "write output: no space left on device") {
				t.Errorf("exit %d, stderr %q", code, errOut.String())
			}
		})
	}
	// Stopping: 1,000 datagrams of JSON through a writer that fails at
	// once are not all decoded and written.
	var many strings.Builder
	for range 2000 {
		many.WriteString("000000000100010304000000\n")
	}
	w := &brokenOutput{}
	var errOut bytes.Buffer
	if code := run([]string{"decode", "--format", "json"}, stdio{strings.NewReader(many.String()), w, &errOut}); code != exitFail || w.writes != 1 {
		t.Errorf("exit %d after %d writes to a failed output; stderr %q", code, w.writes, errOut.String())
	}
}

// TestHelpCommand: `fairgrid help COMMAND` is COMMAND's help for every
// command; an unknown one is an error.
func TestHelpCommand(t *testing.T) {
	for _, c := range commands() {
		code, out, errOut := runCmd(t, "", "help", c.name)
		_, want, _ := runCmd(t, "", c.name, "--help")
		if code != exitOK || !strings.HasPrefix(out, "Usage: fairgrid "+c.name+" ") || out != want || errOut != "" {
			t.Errorf("help %s: exit %d\nstdout %q\nstderr %q", c.name, code, out, errOut)
		}
	}
	for _, tc := range []struct {
		args []string
		code int
		out  string
		err  string
	}{
		{[]string{"help"}, exitOK, "Commands:", ""},
		{[]string{"help", "nosuch"}, exitUsage, "", `unknown command "nosuch"`},
		{[]string{"help", "decode", "extra"}, exitUsage, "", `unexpected argument "extra"`},
		{nil, exitUsage, "", "Commands:"},
	} {
		code, out, errOut := runCmd(t, "", tc.args...)
		if code != tc.code || !strings.Contains(out, tc.out) || tc.out == "" && out != "" || !strings.Contains(errOut, tc.err) {
			t.Errorf("%v: exit %d\nstdout %q\nstderr %q", tc.args, code, out, errOut)
		}
	}
}

// BenchmarkDecodeSummaryReal runs decode --summary on the real OpenSim
// capture repeated as one session (ten copies, 241,530 datagrams): the
// whole command, for profiles of the split between reading and tracking.
func BenchmarkDecodeSummaryReal(b *testing.B) {
	in, err := os.Open(filepath.Join("..", "..", "..", "shared", "testdata", "real", "opensim-0922-captures", "testclient-2x-10min.pcap"))
	if err != nil {
		b.Skipf("real capture not available: %v", err)
	}
	defer in.Close()
	path := filepath.Join(b.TempDir(), "real.pcap")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	st, err := capturetest.Repeat(w, bufio.NewReader(in), 10*24153)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if code := run([]string{"decode", "--summary", path}, stdio{nil, io.Discard, io.Discard}); code != exitOK {
			b.Fatalf("exit %d", code)
		}
	}
	b.ReportMetric(float64(st.Datagrams)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mdatagrams/s")
}

// TestRepeatedRealCapture: gencapture -real's repetition of the real
// OpenSim capture reads as one long session: three copies measure three
// times the packets, pings and resends of one, and still nothing lost.
func TestRepeatedRealCapture(t *testing.T) {
	real := filepath.Join("..", "..", "..", "shared", "testdata", "real", "opensim-0922-captures", "testclient-2x-10min.pcap")
	in, err := os.Open(real)
	if err != nil {
		t.Skipf("real capture not available: %v", err)
	}
	defer in.Close()
	// Written to a file, not held: the test process stays small (a child's
	// peak RSS, which other tests measure, starts from its parent's).
	three := filepath.Join(t.TempDir(), "three.pcap")
	f, err := os.Create(three)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	if _, err := capturetest.Repeat(w, bufio.NewReader(in), 3*24153); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		t.Fatal(err)
	}
	type dir struct {
		Packets, Lost, LossEvents, Resent, Spurious, Reordered, Duplicates float64
	}
	summaries := func(path string) map[string][3]dir {
		t.Helper()
		code, out, errOut := runCmd(t, "", "decode", "--summary", "--format", "json", path)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		got := map[string][3]dir{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var s map[string]any
			if err := json.Unmarshal([]byte(line), &s); err != nil {
				t.Fatal(err)
			}
			var ds [3]dir
			for i, name := range []string{"down", "up"} {
				m := s[name].(map[string]any)
				ds[i] = dir{m["packets"].(float64), m["lost"].(float64), m["loss_events"].(float64), m["resent"].(float64),
					m["spurious_resends"].(float64), m["reordered"].(float64), m["duplicates"].(float64)}
			}
			ds[2].Packets = s["rtt_samples"].(float64)
			got[s["viewer"].(string)] = ds
		}
		return got
	}
	one, many := summaries(real), summaries(three)
	if len(one) != 2 || len(many) != 2 {
		t.Fatalf("circuits: %d in the capture, %d repeated", len(one), len(many))
	}
	for viewer, o := range one {
		m := many[viewer]
		for i := range o {
			want := dir{3 * o[i].Packets, 0, 0, 3 * o[i].Resent, 3 * o[i].Spurious, 3 * o[i].Reordered, 3 * o[i].Duplicates}
			if o[i].Lost != 0 || m[i] != want {
				t.Errorf("%s [%d]: one copy %+v, three %+v, want %+v", viewer, i, o[i], m[i], want)
			}
		}
	}
}

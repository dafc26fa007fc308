package decode

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/capture/capturetest"
	"github.com/fairgrid/fairgrid/capture/input"
	"github.com/fairgrid/fairgrid/lludp"
)

// The outcomes of a run, as fairgrid decode's exit codes.
const (
	exitOK    = 0
	exitFail  = 1 // Finish failed
	exitUsage = 2 // New or Samples refused
)

// decodeTo runs a Decoder over args as fairgrid decode does: options
// (--summary, --samples, --format F, --filter NAMES, --template,
// --ports, --sim) set the Config, the rest are inputs, and none is stdin.
func decodeTo(args []string, stdin io.Reader, out, errOut io.Writer) int {
	fs := flag.NewFlagSet("decode", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	summary, samples := fs.Bool("summary", false, ""), fs.Bool("samples", false, "")
	format, filter := fs.String("format", "text", ""), fs.String("filter", "", "")
	capFlags := input.BindFlags(fs)
	// Options may follow the inputs, as users type them.
	var opts, inputs []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--summary" || a == "--samples":
			opts = append(opts, a)
		case strings.HasPrefix(a, "--") && i+1 < len(args):
			opts = append(opts, a, args[i+1])
			i++
		default:
			inputs = append(inputs, a)
		}
	}
	if err := fs.Parse(opts); err != nil {
		return exitUsage
	}
	cfg := Config{JSON: *format == "json", Summary: *summary, Stdin: stdin, Out: out, Err: errOut}
	if *filter != "" {
		cfg.Filter = strings.Split(*filter, ",")
	}
	ports, sims, tmpl, err := capFlags.Parse()
	cfg.Ports, cfg.Sims, cfg.Template = ports, sims, tmpl
	var d *Decoder
	if err == nil {
		d, err = New(cfg)
	}
	if err == nil && *samples {
		err = d.Samples()
	}
	if err != nil {
		io.WriteString(errOut, err.Error()+"\n")
		return exitUsage
	}
	if len(inputs) == 0 && !*samples {
		d.Stdin()
	}
	for _, a := range inputs {
		d.Argument(a)
	}
	if err := d.Finish(); err != nil {
		if !errors.Is(err, ErrInput) {
			io.WriteString(errOut, "fairgrid decode: "+err.Error()+"\n")
		}
		return exitFail
	}
	return exitOK
}

// decodeCmd is decodeTo with stdin given and the output returned.
func decodeCmd(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = decodeTo(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

var (
	viewerEP = netip.MustParseAddrPort("10.1.2.3:50000")
	simEP    = netip.MustParseAddrPort("10.1.2.4:9000")
	start    = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
)

// writeTestCapture writes a small login and stream: sim numbers 1..20
// with 7 lost, a ping pair 30 ms apart, and a garbage datagram on 9000.
func writeTestCapture(t *testing.T, format capturetest.Format, cut int) string {
	t.Helper()
	agent := lludp.AgentData{AgentID: lludp.UUID{0xAA}, SessionID: lludp.UUID{0xBB}}
	var ds []capturetest.Datagram
	add := func(at time.Duration, up bool, h lludp.Header, m lludp.Typed) {
		b, err := lludp.AppendMessage(nil, h, m, nil)
		if err != nil {
			t.Fatal(err)
		}
		src, dst := simEP, viewerEP
		if up {
			src, dst = viewerEP, simEP
		}
		ds = append(ds, capturetest.Datagram{At: start.Add(at), Src: src, Dst: dst, Payload: b})
	}
	ms := time.Millisecond
	add(0, true, lludp.Header{Flags: lludp.FlagReliable, Sequence: 1}, &lludp.UseCircuitCode{Code: 42, SessionID: agent.SessionID, AgentID: agent.AgentID})
	add(ms, true, lludp.Header{Sequence: 2}, &lludp.StartPingCheck{PingID: 1})
	for seq := uint32(1); seq <= 20; seq++ {
		if seq != 7 {
			add(time.Duration(seq)*10*ms, false, lludp.Header{Flags: lludp.FlagReliable, Sequence: seq}, &lludp.LayerData{Type: lludp.LayerLand, Data: make([]byte, 100)})
		}
	}
	add(31*ms, false, lludp.Header{Sequence: 21}, &lludp.CompletePingCheck{PingID: 1})
	ds = append(ds, capturetest.Datagram{At: start.Add(300 * ms), Src: viewerEP, Dst: simEP, Payload: []byte("GET / HTTP/1.0")})
	var buf bytes.Buffer
	if err := capturetest.Write(&buf, format, ds); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	if cut > 0 {
		data = data[:len(data)-cut]
	}
	path := filepath.Join(t.TempDir(), "test."+format.String())
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDecodeCaptureSummary(t *testing.T) {
	var outs []string
	for _, format := range []capturetest.Format{capturetest.Pcap, capturetest.Pcapng} {
		path := writeTestCapture(t, format, 0)
		code, out, errOut := decodeCmd(t, "", "--summary", "--format", "json", path)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", format, code, errOut)
		}
		if !strings.Contains(errOut, "1 not LLUDP (unknown_message 1)") {
			t.Errorf("garbage on a game port not reported by reason: %q", errOut)
		}
		var s map[string]any
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		for _, key := range []string{"viewer", "sim", "agent_id", "session_id", "circuit_code", "first", "last", "down", "up", "rtt_ms", "rtt_samples", "ack_rtt_ms", "by_category"} {
			if _, ok := s[key]; !ok {
				t.Errorf("summary lacks %q", key)
			}
		}
		down := s["down"].(map[string]any)
		for _, key := range []string{"packets", "bytes", "reliable", "resent", "spurious_resends", "duplicates", "reordered", "lost", "loss_events", "loss_event_rate", "rate_bps"} {
			if _, ok := down[key]; !ok {
				t.Errorf("down lacks %q", key)
			}
		}
		if s["viewer"] != viewerEP.String() || s["sim"] != simEP.String() || s["circuit_code"] != 42.0 || down["lost"] != 1.0 || down["packets"] != 20.0 ||
			s["rtt_ms"] != 30.0 || s["rtt_samples"] != 1.0 || s["ack_rtt_ms"] != nil || s["by_category"].(map[string]any)["Land"] == 0.0 {
			t.Errorf("%v summary: %s", format, out)
		}
		outs = append(outs, out)
	}
	if outs[0] != outs[1] {
		t.Errorf("pcap and pcapng summaries differ:\n%s\n%s", outs[0], outs[1])
	}
	if code, out, _ := decodeCmd(t, "", "--summary", writeTestCapture(t, capturetest.Pcap, 0)); code != exitOK || !strings.Contains(out, "loss events") {
		t.Errorf("table: %d\n%s", code, out)
	}
}

func TestDecodeCaptureDatagrams(t *testing.T) {
	path := writeTestCapture(t, capturetest.Pcap, 0)
	code, out, _ := decodeCmd(t, "", "--format", "json", "--filter", "CompletePingCheck,StartPingCheck", path)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitFail || len(lines) != 3 { // 2 pings and the garbage datagram's error
		t.Fatalf("exit %d, %d lines:\n%s", code, len(lines), out)
	}
	if !strings.HasPrefix(lines[0], `{"time":"2026-12-02T12:00:00.001Z","direction":"up","viewer":"10.1.2.3:50000","sim":"10.1.2.4:9000","flags":`) {
		t.Errorf("first line %s", lines[0])
	}
	if !strings.Contains(lines[2], `"error":"message number High 72: unknown message number"`) || !strings.Contains(lines[2], `"direction":null`) {
		t.Errorf("error line %s", lines[2])
	}
	if code, _, errOut := decodeCmd(t, "", "--filter", "NoSuchMessage", path); code != exitUsage || !strings.Contains(errOut, "NoSuchMessage") {
		t.Errorf("unknown filter: %d %s", code, errOut)
	}
}

// TestDecodeBrokenCapture: a capture cut short says how far it got and
// keeps the measurements up to the break.
func TestDecodeBrokenCapture(t *testing.T) {
	path := writeTestCapture(t, capturetest.Pcap, 10)
	code, out, errOut := decodeCmd(t, "", "--summary", "--format", "json", path)
	if code != exitFail || !strings.Contains(errOut, "record 23 at byte ") || !strings.Contains(out, `"rtt_samples":1`) {
		t.Errorf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
}

func TestDecodeNoLLUDP(t *testing.T) {
	var buf bytes.Buffer
	err := capturetest.Write(&buf, capturetest.Pcap, []capturetest.Datagram{
		{At: start, Src: netip.MustParseAddrPort("10.0.0.1:53"), Dst: netip.MustParseAddrPort("10.0.0.2:53"), Payload: []byte("dns")},
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dns.pcap")
	os.WriteFile(path, buf.Bytes(), 0o644)
	code, _, errOut := decodeCmd(t, "", "--summary", path)
	if code != exitFail || !strings.Contains(errOut, "no UDP datagrams on the simulator ports") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	bad := filepath.Join(t.TempDir(), "bad.pcap")
	os.WriteFile(bad, []byte{0xD4, 0xC3, 0xB2, 0xA1, 1, 2}, 0o644)
	if code, _, errOut := decodeCmd(t, "", bad); code != exitFail || !strings.Contains(errOut, "bad.pcap") {
		t.Errorf("corrupt header: exit %d: %s", code, errOut)
	}
}

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
	if code, out, errOut := decodeCmd(t, "", badFirst); code != exitFail || !strings.Contains(out, "bad-first.txt:1: error: not a hex datagram") ||
		!strings.Contains(out, "StartPingCheck") || !strings.Contains(errOut, "1 of 2 datagrams failed") {
		t.Errorf("bad first line: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := decodeCmd(t, tt.stdin, tt.args...)
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
		code, out, errOut := decodeCmd(t, "", "--summary", "--format", "json", tc.path)
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
			code := decodeTo(tc.args, strings.NewReader(""), w, &errOut)
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
	if code := decodeTo([]string{"--format", "json"}, strings.NewReader(many.String()), w, &errOut); code != exitFail || w.writes != 1 {
		t.Errorf("exit %d after %d writes to a failed output; stderr %q", code, w.writes, errOut.String())
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
		if code := decodeTo([]string{"--summary", path}, nil, io.Discard, io.Discard); code != exitOK {
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
		code, out, errOut := decodeCmd(t, "", "--summary", "--format", "json", path)
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

// TestDecodeSamples: the demo's samples all decode, in both formats, and
// the JSON follows the documented schema.
func TestDecodeSamples(t *testing.T) {
	code, out, errOut := decodeCmd(t, "", "--samples", "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 13 {
		t.Errorf("%d datagrams, want 13", len(lines))
	}
	for _, line := range lines {
		var d struct {
			Flags     map[string]bool             `json:"flags"`
			Sequence  *uint32                     `json:"sequence"`
			Acks      []uint32                    `json:"acks"`
			Message   string                      `json:"message"`
			Number    uint32                      `json:"number"`
			Frequency string                      `json:"frequency"`
			Blocks    map[string][]map[string]any `json:"blocks"`
		}
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&d); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if len(d.Flags) != 4 || d.Sequence == nil || d.Acks == nil || d.Message == "" || d.Frequency == "" {
			t.Errorf("incomplete object: %s", line)
		}
		if d.Message == "AgentThrottle" && (len(d.Acks) != 2 || d.Blocks["AgentData"][0]["AgentID"] != "0f6c6b8e-3c2a-4d1e-9b7a-5e4f3d2c1b0a") {
			t.Errorf("AgentThrottle: %s", line)
		}
	}
	code, out, _ = decodeCmd(t, "", "--samples")
	if code != exitOK || !strings.Contains(out, "SimName: \"fairgrid\"") {
		t.Errorf("text: %d\n%s", code, out)
	}
}

// TestDecodeBadInput: a bad datagram is reported with its offset, the
// others still decode, and the exit code is 1.
func TestDecodeBadInput(t *testing.T) {
	stdin := "0000000001000103 04000000 # a StartPingCheck\n\nzz\n000000000100c8\n0000000001\n"
	code, out, errOut := decodeCmd(t, stdin, "--format", "json")
	if code != exitFail || !strings.Contains(errOut, "3 of 4 datagrams failed") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	want := []string{
		`"message":"StartPingCheck"`,
		`{"error":"not a hex datagram: encoding/hex: invalid byte: U+007A 'z'","offset":0}`,
		`{"error":"decode message number at offset 6: unknown message number","offset":6}`,
		`{"error":"decode header at offset 5: truncated","offset":5}`,
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(want) {
		t.Fatalf("got %d lines:\n%s", len(lines), out)
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d: %s, want %s", i, lines[i], w)
		}
	}
}

// TestDecodeRealFiles decodes real OpenSim .bin files, and a 2007 template
// given at run time.
func TestDecodeRealFiles(t *testing.T) {
	dir, _ := filepath.Abs("../../../shared/testdata/real")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("real test material not found at %s: %v", dir, err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "opensim-networking-2017", "*.bin"))
	code, out, errOut := decodeCmd(t, "", append([]string{"--format", "json", "--template", filepath.Join(dir, "templates/message_template.2007-1.18.1.2.msg")}, files...)...)
	if code != exitOK || strings.Count(out, "\n") != len(files) || !strings.Contains(out, `"SimName":"746573746c616e6400"`) {
		t.Errorf("exit %d (%s):\n%s", code, errOut, out)
	}
}

package main

import (
	"bufio"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/throttle/circuit"
)

// samples are datagrams built by fairgrid's own encoder, one of each
// message a viewer and a simulator exchange at login, for `make demo`.
//
//go:embed samples.hex
var samples string

const decodeSynopsis = `[options] [HEX|FILE|- ...]

Decodes LLUDP datagrams. Each argument is a datagram in hex, a .bin file
holding one raw datagram, a pcap or pcapng capture (gzip-compressed too),
or a text file with one hex datagram per line. With no arguments, or the
argument -, stdin is read: a capture if it starts like one, else hex
datagrams one per line ('#' starts a comment). Datagrams from captures
carry their time, direction and circuit; --summary prints only each
circuit's measurements, and takes captures only. A datagram that fails to
decode is reported and the rest go on. The exit code is 1 if any failed,
if an input could not be read (a missing file, a broken capture, one with
no LLUDP) or held no datagram, or if the output could not be written.`

func runDecode(args []string, s stdio) int {
	fs := newFlagSet("decode", decodeSynopsis, s)
	format := formatFlag(fs, "output format: `text` or json (one object per line)")
	useSamples := fs.Bool("samples", false, "decode the built-in sample datagrams")
	filter := fs.String("filter", "", "print only these messages (comma-separated names)")
	summary := fs.Bool("summary", false, "print only the per-circuit measurements at the end")
	live := fs.String("live", "", "capture live on this interface (needs CAP_NET_RAW) until interrupted")
	duration := fs.Duration("duration", 0, "with --live: stop after this long")
	capOpts := addCaptureFlags(fs)
	if code, ok := parseFlagsArgs(fs, decodeSynopsis, args, s); !ok {
		return code
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(s.err, "fairgrid decode: "+format+"\n", a...)
		return exitUsage
	}
	ports, sims, tmpl, err := capOpts.parse()
	if err != nil {
		return usageErr("%v", err)
	}
	d := &decoder{in: s.in, sink: &stickyWriter{w: s.out}, errOut: s.err, json: *format == "json", summary: *summary, ports: ports}
	d.out = bufio.NewWriterSize(d.sink, 64<<10)
	if *filter != "" {
		d.filter = map[string]bool{}
		for _, name := range strings.Split(*filter, ",") {
			d.filter[strings.TrimSpace(name)] = true
		}
	}
	if tmpl != nil {
		d.packet.Template = tmpl
	}
	if d.filter != nil {
		t := tmpl
		if t == nil {
			t = lludp.Builtin()
		}
		for name := range d.filter {
			if t.ByName(name) == nil {
				return usageErr("--filter: no message %q in the template", name)
			}
		}
	}
	d.tracker = circuit.NewTracker(circuit.Config{Sims: sims, SimPorts: ports, Template: tmpl})

	switch {
	case *live != "":
		if fs.NArg() > 0 || *useSamples {
			return usageErr("--live takes no other input")
		}
		d.liveCapture(*live, *duration)
	case *useSamples:
		if *summary {
			return usageErr("--summary measures the circuits of captures; --samples are single datagrams")
		}
		d.hexLines("samples", strings.NewReader(samples))
	case fs.NArg() == 0:
		d.stdin()
	}
	for _, arg := range fs.Args() {
		if d.sink.err != nil {
			break // the output is gone: reading on would only lose more
		}
		d.argument(arg)
	}
	if d.captures > 0 && d.sink.err == nil {
		d.reportCircuits()
	}
	if err := d.out.Flush(); err != nil {
		fmt.Fprintf(s.err, "fairgrid decode: write output: %v\n", err)
		return exitFail
	}
	if d.failed > 0 {
		fmt.Fprintf(s.err, "fairgrid decode: %d of %d datagrams failed\n", d.failed, d.count)
	}
	if d.failed > 0 || d.broken {
		return exitFail
	}
	return exitOK
}

type decoder struct {
	in      io.Reader // stdin, read once
	out     *bufio.Writer
	sink    *stickyWriter // under out: its first error ends the run
	errOut  io.Writer
	json    bool
	summary bool
	filter  map[string]bool
	ports   capture.Ports
	packet  lludp.Packet
	tracker *circuit.Tracker
	buf     []byte
	line    []byte // a datagram's capture context, reused

	count, failed uint64
	captures      int
	broken        bool // a capture could not be read to its end
	stats         capture.Stats
}

// stickyWriter keeps the first write error, so that the loops can stop
// at once when stdout is gone (a full disk, a closed pipe) instead of
// decoding the rest of a capture into nothing.
type stickyWriter struct {
	w   io.Writer
	err error
}

func (w *stickyWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.w.Write(p)
	w.err = err
	return n, err
}

// inputError reports an input that could not be read as asked, in every
// mode (--summary too), and fails the run.
func (d *decoder) inputError(format string, a ...any) {
	fmt.Fprintf(d.errOut, "fairgrid decode: "+format+"\n", a...)
	d.broken = true
}

// notCapture is --summary's refusal of an input that is not a capture.
func (d *decoder) notCapture(name string) {
	d.inputError("%s: not a capture (pcap, pcapng or gzip): --summary measures the circuits of captures", name)
}

// looksLikePath says whether a command-line argument was meant as a file:
// a hex datagram has no path separator and no dot.
func looksLikePath(arg string) bool {
	return strings.ContainsAny(arg, "/."+string(os.PathSeparator))
}

// argument decodes one command-line argument: a file, - for stdin, or a
// hex datagram.
func (d *decoder) argument(arg string) {
	if arg == "-" {
		d.stdin()
		return
	}
	st, err := os.Stat(arg)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !looksLikePath(arg):
		if d.summary {
			d.inputError("%s: no such file (and --summary takes no hex datagrams)", arg)
			return
		}
		raw, herr := parseHex(arg)
		if herr != nil {
			d.count++
			d.fail(arg, "neither a file nor a hex datagram: "+herr.Error(), 0, "")
			return
		}
		d.datagram(arg, raw, "")
		return
	case errors.Is(err, fs.ErrNotExist):
		d.inputError("%s: no such file", arg)
		return
	case err != nil:
		d.inputError("%v", err)
		return
	case st.IsDir():
		d.inputError("%s: is a directory, not a capture or datagram file", arg)
		return
	}
	f, err := os.Open(arg)
	if err != nil {
		d.inputError("%v", err)
		return
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	if isCapture(br) {
		d.captureStream(arg, br)
		return
	}
	if d.summary {
		d.notCapture(arg)
		return
	}
	if strings.HasSuffix(arg, ".bin") {
		raw, err := io.ReadAll(br)
		if err != nil {
			d.inputError("read %s: %v", arg, err)
			return
		}
		d.datagram(arg, raw, "")
		return
	}
	d.hexLines(arg, br)
}

// stdin reads standard input: a capture if it starts like one, else hex
// lines. It can be read once.
func (d *decoder) stdin() {
	if d.in == nil {
		d.inputError("stdin: read already")
		return
	}
	br := bufio.NewReaderSize(d.in, 64<<10)
	d.in = nil
	if isCapture(br) {
		d.captureStream("stdin", br)
		return
	}
	if d.summary {
		d.notCapture("stdin")
		return
	}
	d.hexLines("stdin", br)
}

// isCapture sniffs the magic at the start of br: pcap, pcapng or gzip.
// Hex text never starts with those bytes. It waits for more than one read
// only when the first byte could begin a magic number, so that a line typed
// on a terminal is not held up.
func isCapture(br *bufio.Reader) bool {
	first, err := br.Peek(1)
	if err != nil {
		return false
	}
	switch first[0] {
	case 0x1F, 0xD4, 0xA1, 0x4D, 0x0A:
	default:
		return false
	}
	m, _ := br.Peek(4)
	return capture.IsCaptureMagic(m)
}

// hexLines decodes one hex datagram per line; blank lines and text after
// '#' are ignored, and spaces inside a datagram are allowed. A named file
// whose first two datagram lines are both not hex is no hex file (a
// README, a log): one error says so, instead of one per line. Standard
// input reports each line at once, for a person typing.
func (d *decoder) hexLines(name string, r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	before := d.count
	judgeFile := name != "stdin"
	var held []struct{ where, err string } // failures before the first datagram, in a named file
	decoded := 0
	for line := 1; sc.Scan() && d.sink.err == nil; line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		if strings.TrimSpace(text) == "" {
			continue
		}
		where := fmt.Sprintf("%s:%d", name, line)
		raw, err := parseHex(text)
		if err != nil {
			if judgeFile && decoded == 0 {
				held = append(held, struct{ where, err string }{where, err.Error()})
				if len(held) == 2 {
					d.inputError("%s: neither a capture nor hex datagrams (%s and the next line are not hex)", name, held[0].where)
					return
				}
				continue
			}
			d.count++
			d.fail(where, err.Error(), 0, "")
			continue
		}
		for _, h := range held { // a bad first line in a hex file is still reported
			d.count++
			d.fail(h.where, h.err, 0, "")
		}
		held = nil
		decoded++
		d.datagram(where, raw, "")
	}
	for _, h := range held {
		d.count++
		d.fail(h.where, h.err, 0, "")
	}
	if err := sc.Err(); err != nil {
		d.inputError("read %s: %v", name, err)
		return
	}
	if d.count == before && d.sink.err == nil {
		d.inputError("%s: no datagrams (want one hex datagram per line)", name)
	}
}

func parseHex(s string) ([]byte, error) {
	s = strings.Join(strings.Fields(s), "")
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	raw, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("not a hex datagram: %w", err)
	}
	return raw, nil
}

// datagram decodes and prints one datagram; context, if not empty, is the
// JSON members of its capture context ("time", "direction", …).
func (d *decoder) datagram(where string, raw []byte, context string) {
	d.count++
	if err := d.packet.DecodeFromBytes(raw); err != nil {
		d.fail(where, err.Error(), errorOffset(err), context)
		return
	}
	if d.summary || d.filter != nil && !d.filter[d.packet.Message().Name] {
		return
	}
	// Rendered straight from the packet's bytes into the reused buffer: no
	// value is boxed and nothing is allocated per datagram.
	if d.json {
		d.buf = d.buf[:0]
		if context != "" {
			// The object's opening brace becomes the comma after the context.
			d.buf = append(append(d.buf, '{'), context...)
			n := len(d.buf)
			d.buf = d.packet.AppendJSON(d.buf)
			d.buf[n] = ','
		} else {
			d.buf = d.packet.AppendJSON(d.buf)
		}
		d.buf = append(d.buf, '\n')
	} else {
		d.buf = append(append(d.buf[:0], where...), ": "...)
		d.buf = append(d.packet.AppendText(d.buf), '\n')
	}
	d.out.Write(d.buf)
}

// errorOffset is where a decode error happened, 0 if it does not say.
func errorOffset(err error) int {
	var de *lludp.DecodeError
	if errors.As(err, &de) {
		return de.Offset
	}
	return 0
}

func (d *decoder) fail(where, msg string, offset int, context string) {
	if d.summary {
		return // counted by reason in the summary; the run does not fail
	}
	d.failed++
	if d.json {
		line, _ := json.Marshal(struct {
			Error  string `json:"error"`
			Offset int    `json:"offset"`
		}{msg, offset})
		if context != "" {
			line = append([]byte("{"+context+","), line[1:]...)
		}
		d.out.Write(append(line, '\n'))
		return
	}
	fmt.Fprintf(d.out, "%s: error: %s\n\n", where, msg)
}

// captureStream decodes every datagram of a pcap or pcapng capture.
func (d *decoder) captureStream(name string, in io.Reader) {
	r, err := capture.NewReader(in, d.ports)
	if err != nil {
		d.inputError("%s: %v", name, err)
		return
	}
	d.readCapture(name, r)
}

// liveCapture decodes a live interface until interrupted or for duration.
func (d *decoder) liveCapture(iface string, duration time.Duration) {
	r, err := capture.OpenLive(iface, d.ports)
	if err != nil {
		fmt.Fprintf(d.errOut, "fairgrid decode: %v\n", err)
		d.broken = true
		return
	}
	ctx, stop := runContext(duration, plainNotice(d.errOut, "fairgrid decode"))
	defer stop()
	// A blocked read returns once the socket is closed.
	go func() { <-ctx.Done(); r.Close() }()
	d.readCapture(iface, r)
	if ctx.Err() != nil {
		d.broken = false // stopped as asked
	}
}

func (d *decoder) readCapture(name string, r *capture.Reader) {
	d.captures++
	for d.sink.err == nil {
		dg, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			var be *capture.BrokenError
			if errors.As(err, &be) {
				d.inputError("%s: %v (the %d packets before it are measured)", name, err, be.Frames)
			} else {
				d.inputError("%s: %v", name, err)
			}
			break
		}
		c, dir, terr := d.tracker.Observe(dg)
		if d.summary {
			continue // the tracker counts everything the summary reports
		}
		// Only the form the output uses is built, appended into one reused
		// buffer: formatting both with string concatenation cost more than
		// decoding and rendering the datagram.
		var context, where string
		b := d.line[:0]
		at := dg.At.UTC()
		if d.json {
			b = at.AppendFormat(append(b, `"time":"`...), time.RFC3339Nano)
			if c != nil {
				b = append(append(b, `","direction":"`...), dir.String()...)
				b = c.Key.Viewer.AppendTo(append(b, `","viewer":"`...))
				b = append(c.Key.Sim.AppendTo(append(b, `","sim":"`...)), '"')
			} else {
				b = append(b, `","direction":null,"viewer":null,"sim":null`...)
			}
			context = string(b)
		} else {
			b = dg.Src.AppendTo(append(at.AppendFormat(b, "15:04:05.000000"), ' '))
			b = dg.Dst.AppendTo(append(b, " > "...))
			if c != nil {
				b = append(append(b, ' '), dir.String()...)
			}
			where = string(b)
		}
		d.line = b
		if terr != nil && !errors.Is(terr, circuit.ErrNotCircuit) {
			d.count++
			d.fail(where, terr.Error(), errorOffset(terr), context)
			continue
		}
		d.datagram(where, dg.Payload, context)
	}
	st := r.Stats()
	d.stats.Frames += st.Frames
	d.stats.Datagrams += st.Datagrams
	d.stats.KernelDrops += st.KernelDrops
	for i := range st.Skipped {
		d.stats.Skipped[i] += st.Skipped[i]
	}
	if st.Datagrams == 0 && d.sink.err == nil {
		d.inputError("%s: no UDP datagrams on the simulator ports (%d frames read)", name, st.Frames)
	}
}

// reportCircuits prints the per-circuit measurements (with --summary) and
// what the captures held besides.
func (d *decoder) reportCircuits() {
	cs := d.tracker.Circuits()
	if d.summary {
		if d.json {
			enc := json.NewEncoder(d.out)
			for _, c := range cs {
				enc.Encode(c.Summary())
			}
		} else {
			writeSummaryTable(d.out, cs)
		}
	}
	d.out.Flush()
	st := d.stats
	fmt.Fprintf(d.errOut, "fairgrid decode: %d frames, %d UDP datagrams, %d circuits", st.Frames, st.Datagrams, len(cs))
	if n := d.tracker.InvalidTotal(); n > 0 {
		var parts []string
		for r := circuit.InvalidReason(0); r.String() != "unknown"; r++ {
			if k := d.tracker.Invalid(r); k > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", r, k))
			}
		}
		fmt.Fprintf(d.errOut, "; %d not LLUDP (%s)", n, strings.Join(parts, ", "))
	}
	if n := d.tracker.NotCircuit(); n > 0 {
		fmt.Fprintf(d.errOut, "; %d outside any circuit", n)
	}
	// Endpoints whose LLUDP never showed a conversation (a spoofed-source
	// flood, say) are counted, not reported one by one.
	waiting, held := d.tracker.Candidates()
	folded, foldedDatagrams := d.tracker.Folded()+uint64(waiting), d.tracker.FoldedDatagrams()+held
	if folded > 0 {
		fmt.Fprintf(d.errOut, "; %d endpoints folded (%d datagrams too few to make a circuit)", folded, foldedDatagrams)
	}
	if st.KernelDrops > 0 {
		fmt.Fprintf(d.errOut, "; the kernel dropped %d (gaps they leave are not network loss)", st.KernelDrops)
	}
	fmt.Fprintln(d.errOut)
	if st.Datagrams > 0 && len(cs) == 0 {
		fmt.Fprintln(d.errOut, "fairgrid decode: no LLUDP circuits in the capture")
		d.broken = true
	}
}

// parseSims reads comma-separated ip:port endpoints.
func parseSims(v string) ([]netip.AddrPort, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var sims []netip.AddrPort
	for _, part := range strings.Split(v, ",") {
		ap, err := netip.ParseAddrPort(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("%q: want ip:port", part)
		}
		sims = append(sims, ap)
	}
	return sims, nil
}

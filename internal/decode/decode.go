package decode

import (
	"bufio"
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/capture/input"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/throttle/circuit"
)

// samples are datagrams built by fairgrid's own encoder, one of each
// message a viewer and a simulator exchange at login, for `make demo`.
//
//go:embed samples.hex
var samples string

// Config configures a Decoder.
type Config struct {
	// JSON prints a JSON object a line instead of text.
	JSON bool
	// Summary prints only each circuit's measurements, at the end; it
	// takes captures only.
	Summary bool
	// Filter, if not empty, prints only these messages (names in the
	// template).
	Filter []string
	// Ports are the simulators' UDP ports in captures (nil: all), Sims the
	// known simulator endpoints.
	Ports capture.Ports
	Sims  []netip.AddrPort
	// Template decodes the datagrams (nil: the built-in one).
	Template *lludp.Template
	// Stdin is read for "-" and by Stdin; Out gets the datagrams, Err
	// what went wrong and the closing counts.
	Stdin    io.Reader
	Out, Err io.Writer
}

// New checks cfg (every filtered message must be in the template) and
// returns a decoder.
func New(cfg Config) (*Decoder, error) {
	d := &Decoder{stdin: input.NewStdin(cfg.Stdin), sink: &stickyWriter{w: cfg.Out}, errOut: cfg.Err, json: cfg.JSON, summary: cfg.Summary, ports: cfg.Ports}
	d.out = bufio.NewWriterSize(d.sink, 64<<10)
	if cfg.Template != nil {
		d.packet.Template = cfg.Template
	}
	if len(cfg.Filter) > 0 {
		d.filter = map[string]bool{}
		t := cmp.Or(cfg.Template, lludp.Builtin())
		for _, name := range cfg.Filter {
			name = strings.TrimSpace(name)
			if t.ByName(name) == nil {
				return nil, fmt.Errorf("no message %q in the template", name)
			}
			d.filter[name] = true
		}
	}
	d.tracker = circuit.NewTracker(circuit.Config{Sims: cfg.Sims, SimPorts: cfg.Ports, Template: cfg.Template})
	return d, nil
}

// Samples decodes the built-in sample datagrams.
func (d *Decoder) Samples() error {
	if d.summary {
		return errors.New("--summary measures the circuits of captures; --samples are single datagrams")
	}
	d.hexLines("samples", strings.NewReader(samples))
	return nil
}

// Stdin decodes standard input: a capture if it starts like one, else
// hex lines.
func (d *Decoder) Stdin() { d.Argument("-") }

// Argument decodes one command-line argument: a file, - for stdin, or a
// hex datagram. Once the output has failed it does nothing.
func (d *Decoder) Argument(arg string) {
	if d.sink.err != nil {
		return // the output is gone: reading on would only lose more
	}
	src, err := input.Open(arg, d.stdin, d.ports)
	if err != nil {
		d.inputError("%v", err)
		return
	}
	defer src.Close()
	switch {
	case src.Kind == input.Word && d.summary:
		d.inputError("%s: no such file (and --summary takes no hex datagrams)", arg)
	case src.Kind == input.Word:
		raw, herr := input.ParseHex(arg)
		if herr != nil {
			d.count++
			d.fail(arg, "neither a file nor a hex datagram: "+herr.Error(), 0, "")
			return
		}
		d.datagram(arg, raw, "")
	case src.Kind == input.Capture:
		d.readCapture(src.Name, src.Capture)
	case d.summary:
		d.notCapture(src.Name)
	case src.Kind == input.Raw:
		d.datagram(arg, src.Raw, "")
	default:
		d.hexLines(src.Name, src.Lines)
	}
}

// Live decodes a live interface until ctx ends.
func (d *Decoder) Live(ctx context.Context, iface string) {
	r, err := capture.OpenLive(iface, d.ports)
	if err != nil {
		d.inputError("%v", err)
		return
	}
	// A blocked read returns once the socket is closed.
	stop := context.AfterFunc(ctx, func() { r.Close() })
	defer stop()
	d.readCapture(iface, r)
	if ctx.Err() != nil {
		d.broken = false // stopped as asked
	}
}

// Finish reports the circuits of the captures read (with Summary, their
// measurements) and flushes the output. It returns an error if a
// datagram failed to decode, an input could not be read (a missing file,
// a broken capture, one with no LLUDP) or held no datagram, or the
// output could not be written.
func (d *Decoder) Finish() error {
	if d.captures > 0 && d.sink.err == nil {
		d.reportCircuits()
	}
	if err := d.out.Flush(); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	if d.failed > 0 {
		return fmt.Errorf("%d of %d datagrams failed", d.failed, d.count)
	}
	if d.broken {
		return ErrInput
	}
	return nil
}

// ErrInput is Finish's error when an input could not be read; what went
// wrong was written to Config.Err.
var ErrInput = errors.New("an input could not be read")

type Decoder struct {
	stdin   *input.Stdin
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
func (d *Decoder) inputError(format string, a ...any) {
	fmt.Fprintf(d.errOut, "fairgrid decode: "+format+"\n", a...)
	d.broken = true
}

// notCapture is --summary's refusal of an input that is not a capture.
func (d *Decoder) notCapture(name string) {
	d.inputError("%s: not a capture (pcap, pcapng or gzip): --summary measures the circuits of captures", name)
}

// hexLines decodes one hex datagram per line; blank lines and text after
// '#' are ignored, and spaces inside a datagram are allowed. A named file
// whose first two datagram lines are both not hex is no hex file (a
// README, a log): one error says so, instead of one per line. Standard
// input reports each line at once, for a person typing.
func (d *Decoder) hexLines(name string, r io.Reader) {
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
		raw, err := input.ParseHex(text)
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

// datagram decodes and prints one datagram; context, if not empty, is the
// JSON members of its capture context ("time", "direction", …).
func (d *Decoder) datagram(where string, raw []byte, context string) {
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

func (d *Decoder) fail(where, msg string, offset int, context string) {
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

func (d *Decoder) readCapture(name string, r *capture.Reader) {
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
func (d *Decoder) reportCircuits() {
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

// writeSummaryTable prints one row per circuit: the down direction (the
// throttled one) in full, and the RTT signals.
func writeSummaryTable(w io.Writer, cs []*circuit.Circuit) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "viewer\tsim\tagent\tpackets\tkbit/s\tlost\tloss events\tp\tresent\tspurious\tdup\treordered\tRTT ms\tack RTT ms\t")
	for _, c := range cs {
		s := c.Summary()
		agent := s.AgentID
		if agent == "" {
			agent = "?"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.1f\t%d\t%d\t%.4f\t%d\t%d\t%d\t%d\t%s\t%s\t\n",
			s.Viewer, s.Sim, agent, s.Down.Packets, s.Down.RateBPS/1000, s.Down.Lost, s.Down.LossEvents, s.Down.LossEventRate,
			s.Down.Resent, s.Down.SpuriousResends, s.Down.Duplicates, s.Down.Reordered, optMillis(s.RTTms), optMillis(s.AckRTTms))
	}
	tw.Flush()
}

func optMillis(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", *v)
}

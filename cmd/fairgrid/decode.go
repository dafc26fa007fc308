package main

import (
	"bufio"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/fairgrid/fairgrid/lludp"
)

// samples are datagrams built by fairgrid's own encoder, one of each
// message a viewer and a simulator exchange at login, for `make demo`.
//
//go:embed samples.hex
var samples string

const decodeSynopsis = `[--format text|json] [--template FILE] [--samples] [HEX|FILE ...]

Decodes LLUDP datagrams. Each argument is a datagram in hex, a .bin file
holding one raw datagram, or a text file with one hex datagram per line.
With no arguments, hex datagrams are read from stdin, one per line ('#'
starts a comment). A datagram that fails to decode is reported and the rest
go on; the exit code is 1 if any failed.`

func runDecode(args []string, s stdio) int {
	fs := newFlagSet("decode", decodeSynopsis, s)
	format := fs.String("format", "text", "output format: text (a readable tree) or json (one object per line)")
	templatePath := fs.String("template", "", "message_template.msg to use instead of the built-in one (for example the 2007 template for old captures)")
	useSamples := fs.Bool("samples", false, "decode the built-in sample datagrams")
	if code, ok := parseFlags(fs, decodeSynopsis, args, s); !ok {
		return code
	}
	if *format != "text" && *format != "json" {
		fmt.Fprintf(s.err, "fairgrid decode: --format %q: want text or json\n", *format)
		return exitUsage
	}
	d := decoder{out: bufio.NewWriter(s.out), json: *format == "json"}
	defer d.out.Flush()
	if *templatePath != "" {
		f, err := os.Open(*templatePath)
		if err != nil {
			fmt.Fprintf(s.err, "fairgrid decode: %v\n", err)
			return exitUsage
		}
		t, err := lludp.ParseTemplate(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(s.err, "fairgrid decode: template %s: %v\n", *templatePath, err)
			return exitUsage
		}
		d.packet.Template = t
	}
	switch {
	case *useSamples:
		d.hexLines("samples", strings.NewReader(samples))
	case fs.NArg() == 0:
		d.hexLines("stdin", s.in)
	}
	for _, arg := range fs.Args() {
		if err := d.argument(arg); err != nil {
			fmt.Fprintf(s.err, "fairgrid decode: %v\n", err)
			d.failed++
		}
	}
	if d.failed > 0 {
		d.out.Flush()
		fmt.Fprintf(s.err, "fairgrid decode: %d of %d datagrams failed\n", d.failed, d.count)
		return exitFail
	}
	return exitOK
}

type decoder struct {
	out    *bufio.Writer
	json   bool
	packet lludp.Packet
	buf    []byte
	count  int
	failed int
}

// argument decodes one command-line argument: a file or a hex datagram.
func (d *decoder) argument(arg string) error {
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		if strings.HasSuffix(arg, ".bin") {
			raw, err := os.ReadFile(arg)
			if err != nil {
				return err
			}
			d.datagram(arg, raw)
			return nil
		}
		f, err := os.Open(arg)
		if err != nil {
			return err
		}
		defer f.Close()
		return d.hexLines(arg, f)
	}
	raw, err := parseHex(arg)
	if err != nil {
		d.count++
		d.fail(arg, err.Error(), 0)
		return nil
	}
	d.datagram(arg, raw)
	return nil
}

// hexLines decodes one hex datagram per line; blank lines and text after
// '#' are ignored, and spaces inside a datagram are allowed.
func (d *decoder) hexLines(name string, r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		if strings.TrimSpace(text) == "" {
			continue
		}
		where := fmt.Sprintf("%s:%d", name, line)
		raw, err := parseHex(text)
		if err != nil {
			d.count++
			d.fail(where, err.Error(), 0)
			continue
		}
		d.datagram(where, raw)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	return nil
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

func (d *decoder) datagram(where string, raw []byte) {
	d.count++
	if err := d.packet.DecodeFromBytes(raw); err != nil {
		off := 0
		var de *lludp.DecodeError
		if errors.As(err, &de) {
			off = de.Offset
		}
		d.fail(where, err.Error(), off)
		return
	}
	dec := d.packet.Decode()
	if d.json {
		d.buf = append(dec.AppendJSON(d.buf[:0]), '\n')
	} else {
		d.buf = append(dec.AppendText(append(d.buf[:0], where+": "...)), '\n')
	}
	d.out.Write(d.buf)
}

func (d *decoder) fail(where, msg string, offset int) {
	d.failed++
	if d.json {
		line, _ := json.Marshal(struct {
			Error  string `json:"error"`
			Offset int    `json:"offset"`
		}{msg, offset})
		d.out.Write(append(line, '\n'))
		return
	}
	fmt.Fprintf(d.out, "%s: error: %s\n\n", where, msg)
}

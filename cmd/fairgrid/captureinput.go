package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/internal/audit"
	"github.com/fairgrid/fairgrid/lludp"
)

// captureOptions are the capture flags decode and audit share: which ports
// are a simulator's, which endpoints are known simulators, and the
// message template.
type captureOptions struct {
	ports, sims, template *string
}

func addCaptureFlags(fs *flag.FlagSet) captureOptions {
	return captureOptions{
		template: fs.String("template", "", "message_template.msg to use instead of the built-in one (the 2007 template decodes old captures)"),
		ports:    fs.String("ports", "9000-13100", "UDP ports of simulators in captures: ranges like 9000-13100,12035 (empty: all)"),
		sims:     fs.String("sim", "", "known simulator endpoints, comma-separated ip:port (port 0: any); they decide which side is the simulator"),
	}
}

// parse reads the flags; its errors name the flag.
func (o captureOptions) parse() (ports capture.Ports, sims []netip.AddrPort, tmpl *lludp.Template, err error) {
	if ports, err = capture.ParsePorts(*o.ports); err != nil {
		return nil, nil, nil, fmt.Errorf("--ports: %w", err)
	}
	if sims, err = parseSims(*o.sims); err != nil {
		return nil, nil, nil, fmt.Errorf("--sim: %w", err)
	}
	if tmpl, err = loadTemplate(*o.template); err != nil {
		return nil, nil, nil, err
	}
	return ports, sims, tmpl, nil
}

// loadTemplate reads a message template file for --template; "" is the
// built-in one (nil).
func loadTemplate(path string) (*lludp.Template, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := lludp.ParseTemplate(f)
	if err != nil {
		return nil, fmt.Errorf("template %s: %w", path, err)
	}
	return t, nil
}

// openedCapture is one capture named on the command line, open.
type openedCapture struct {
	name    string
	reader  *capture.Reader
	counter *audit.CountingReader
	size    int64 // of the file; 0 for a stream
	closer  io.Closer
}

func (c *openedCapture) Close() error {
	if c.closer == nil {
		return nil
	}
	return c.closer.Close()
}

// openCaptureArg opens a capture argument: a pcap, pcapng or gzip file, or
// "-" for stdin (which *stdin then gives up: it can be read once). Its
// errors name the argument.
func openCaptureArg(arg string, stdin *io.Reader, ports capture.Ports) (*openedCapture, error) {
	var r io.Reader
	oc := &openedCapture{name: arg}
	if arg == "-" {
		if *stdin == nil {
			return nil, errors.New("stdin: read already")
		}
		r, *stdin, oc.name = *stdin, nil, "stdin"
	} else {
		st, err := os.Stat(arg)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("%s: no such file", arg)
		case err != nil:
			return nil, err
		case st.IsDir():
			return nil, fmt.Errorf("%s: is a directory, not a capture", arg)
		}
		f, err := os.Open(arg)
		if err != nil {
			return nil, err
		}
		r, oc.size, oc.closer = f, st.Size(), f
	}
	oc.counter = &audit.CountingReader{R: r}
	br := bufio.NewReaderSize(oc.counter, 64<<10)
	if !isCapture(br) {
		oc.Close()
		return nil, fmt.Errorf("%s: not a capture (pcap, pcapng or gzip)", oc.name)
	}
	cr, err := capture.NewReader(br, ports)
	if err != nil {
		oc.Close()
		return nil, fmt.Errorf("%s: %w", oc.name, err)
	}
	oc.reader = cr
	return oc, nil
}

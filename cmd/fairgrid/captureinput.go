package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/internal/audit"
	"github.com/fairgrid/fairgrid/lludp"
)

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

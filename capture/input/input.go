package input

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/fairgrid/fairgrid/capture"
)

// Kind is what an argument turned out to be.
type Kind uint8

const (
	// Capture: Source.Capture reads its datagrams.
	Capture Kind = iota
	// Hex: Source.Lines holds hex datagrams, one per line.
	Hex
	// Raw: Source.Raw is one datagram, a .bin file's bytes.
	Raw
	// Word: the argument names no file and does not look like a path;
	// it may be a datagram in hex (ParseHex).
	Word
)

// Source is one argument, open.
type Source struct {
	Name    string // the argument, or "stdin"
	Kind    Kind
	Capture *capture.Reader // Kind Capture
	Lines   io.Reader       // Kind Hex
	Raw     []byte          // Kind Raw
	// Size is the file's size; 0 for standard input and a word.
	Size int64
	// Counter counts the bytes read of the file or stream (compressed, as
	// stored), for a progress bar; nil for a word.
	Counter *CountingReader
	closer  io.Closer
}

// Close closes the file, if any; it may be called more than once, and
// from another goroutine to end a read blocked on a slow file (a FIFO).
func (s *Source) Close() error {
	if s.closer == nil {
		return nil
	}
	err := s.closer.Close()
	if errors.Is(err, os.ErrClosed) {
		return nil
	}
	return err
}

// CountingReader counts the bytes read through it.
type CountingReader struct {
	R io.Reader
	N int64
}

func (c *CountingReader) Read(p []byte) (int, error) {
	n, err := c.R.Read(p)
	c.N += int64(n)
	return n, err
}

// Stdin is standard input, which can be read once: the first "-" gets it.
type Stdin struct{ r io.Reader }

// NewStdin wraps r (os.Stdin, or a test's reader).
func NewStdin(r io.Reader) *Stdin { return &Stdin{r} }

func (s *Stdin) take() (io.Reader, error) {
	if s == nil || s.r == nil {
		return nil, errors.New("stdin: read already")
	}
	r := s.r
	s.r = nil
	return r, nil
}

// looksLikePath says whether an argument was meant as a file: a hex
// datagram has no path separator and no dot.
func looksLikePath(arg string) bool {
	return strings.ContainsAny(arg, "/."+string(os.PathSeparator))
}

// Open opens arg: "-" is standard input (a capture or hex lines), a file
// is a capture, a .bin datagram or hex lines by its content, and a word
// that names no file and has no dot or slash is a Word. Captures are read
// keeping datagrams on ports. Its errors name the argument.
func Open(arg string, stdin *Stdin, ports capture.Ports) (*Source, error) {
	src := &Source{Name: arg}
	var r io.Reader
	if arg == "-" {
		var err error
		if r, err = stdin.take(); err != nil {
			return nil, err
		}
		src.Name = "stdin"
	} else {
		st, err := os.Stat(arg)
		switch {
		case errors.Is(err, fs.ErrNotExist) && !looksLikePath(arg):
			src.Kind = Word
			return src, nil
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("%s: no such file", arg)
		case err != nil:
			return nil, err
		case st.IsDir():
			return nil, fmt.Errorf("%s: is a directory, not a capture or datagram file", arg)
		}
		f, err := os.Open(arg)
		if err != nil {
			return nil, err
		}
		r, src.Size, src.closer = f, st.Size(), f
	}
	src.Counter = &CountingReader{R: r}
	br := bufio.NewReaderSize(src.Counter, 64<<10)
	switch {
	case IsCapture(br):
		cr, err := capture.NewReader(br, ports)
		if err != nil {
			src.Close()
			return nil, fmt.Errorf("%s: %w", src.Name, err)
		}
		src.Kind, src.Capture = Capture, cr
	case arg != "-" && strings.HasSuffix(arg, ".bin"):
		raw, err := io.ReadAll(br)
		src.Close()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", arg, err)
		}
		src.Kind, src.Raw = Raw, raw
	default:
		src.Kind, src.Lines = Hex, br
	}
	return src, nil
}

// OpenCapture opens arg as Open does, and refuses anything but a capture.
func OpenCapture(arg string, stdin *Stdin, ports capture.Ports) (*Source, error) {
	src, err := Open(arg, stdin, ports)
	switch {
	case err != nil:
		return nil, err
	case src.Kind == Word:
		return nil, fmt.Errorf("%s: no such file", arg)
	case src.Kind != Capture:
		src.Close()
		return nil, NotCaptureError(src.Name)
	}
	return src, nil
}

// NotCaptureError is the error for an input that is not a capture.
func NotCaptureError(name string) error {
	return fmt.Errorf("%s: not a capture (pcap, pcapng or gzip)", name)
}

// IsCapture sniffs the magic at the start of br: pcap, pcapng or gzip.
// Hex text never starts with those bytes. It waits for more than one read
// only when the first byte could begin a magic number, so that a line
// typed on a terminal is not held up.
func IsCapture(br *bufio.Reader) bool {
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

// ParseHex reads a datagram in hex: spaces anywhere, an optional 0x.
func ParseHex(s string) ([]byte, error) {
	s = strings.Join(strings.Fields(s), "")
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	raw, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("not a hex datagram: %w", err)
	}
	return raw, nil
}

package input

import (
	"bytes"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/capture/capturetest"
)

// dgram is a capture's one datagram.
var dgram = []capturetest.Datagram{{At: time.Unix(1, 0), Src: netip.MustParseAddrPort("10.0.0.1:50000"), Dst: netip.MustParseAddrPort("10.0.0.2:9000"), Payload: []byte{0}}}

// TestOpen: each kind is told by its content (a capture named .txt is a
// capture), a word that names no file is a Word, and stdin is read once.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	var pcap bytes.Buffer
	if err := capturetest.Write(&pcap, capturetest.Pcap, dgram); err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		path := dir + "/" + name
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	stdin := NewStdin(strings.NewReader("00 01\n"))
	for _, tc := range []struct {
		arg  string
		kind Kind
	}{
		{write("capture.txt", pcap.Bytes()), Capture},
		{write("one.bin", []byte{0, 1, 2}), Raw},
		{write("lines.txt", []byte("0001\n")), Hex},
		{"00010203", Word},
		{"-", Hex},
	} {
		src, err := Open(tc.arg, stdin, nil)
		if err != nil || src.Kind != tc.kind {
			t.Errorf("Open(%q): %+v, %v; want kind %d", tc.arg, src, err, tc.kind)
			continue
		}
		if tc.kind == Raw && string(src.Raw) != "\x00\x01\x02" {
			t.Errorf("Open(%q).Raw = %q", tc.arg, src.Raw)
		}
		if err := src.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
	for _, tc := range []struct{ arg, want string }{
		{"-", "stdin: read already"},
		{dir + "/nosuch.pcap", "nosuch.pcap: no such file"},
		{dir, "is a directory"},
	} {
		if _, err := Open(tc.arg, stdin, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q): %v; want %q", tc.arg, err, tc.want)
		}
	}
}

// TestOpenCapture: only a capture opens; the rest say why, and the
// capture's bytes are counted as they are read.
func TestOpenCapture(t *testing.T) {
	var pcap bytes.Buffer
	capturetest.Write(&pcap, capturetest.Pcap, dgram)
	src, err := OpenCapture("-", NewStdin(bytes.NewReader(pcap.Bytes())), nil)
	if err != nil || src.Name != "stdin" {
		t.Fatalf("%+v, %v", src, err)
	}
	for {
		if _, err := src.Capture.Next(); err != nil {
			break
		}
	}
	if src.Counter.N != int64(pcap.Len()) {
		t.Errorf("counted %d bytes of %d", src.Counter.N, pcap.Len())
	}
	for _, tc := range []struct{ arg, want string }{
		{"word", "word: no such file"},
		{"-", "stdin: not a capture (pcap, pcapng or gzip)"},
	} {
		if _, err := OpenCapture(tc.arg, NewStdin(strings.NewReader("0001\n")), nil); err == nil || err.Error() != tc.want {
			t.Errorf("OpenCapture(%q): %v; want %q", tc.arg, err, tc.want)
		}
	}
}

// TestParseHex: spaces and a 0x prefix are allowed.
func TestParseHex(t *testing.T) {
	if b, err := ParseHex(" 0x00 01\tff "); err != nil || !bytes.Equal(b, []byte{0, 1, 0xff}) {
		t.Errorf("%x, %v", b, err)
	}
	if _, err := ParseHex("zz"); err == nil || !strings.Contains(err.Error(), "not a hex datagram") {
		t.Errorf("zz: %v", err)
	}
}

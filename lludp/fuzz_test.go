package lludp

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// fuzzSeeds are the real datagrams (when ../shared is present) and one
// encoder output per typed message shape.
func fuzzSeeds(f *testing.F) {
	if dir, err := filepath.Abs("../../shared/testdata/real"); err == nil {
		paths, _ := filepath.Glob(filepath.Join(dir, "opensim-networking-2017", "*.bin"))
		more, _ := filepath.Glob(filepath.Join(dir, "opensim-networking-2017", "*", "*.bin"))
		for _, p := range append(paths, more[:min(len(more), 8)]...) {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	for _, m := range []Typed{
		&AgentThrottle{AgentData: testAgent, Throttles: viewerSplit},
		&PacketAck{IDs: []uint32{1, 2}},
		&CoarseLocationUpdate{Locations: []CoarseLocation{{1, 2, 3}}, You: -1, Prey: -1},
		&ObjectUpdate{Objects: []ObjectData{{ID: 1, Text: []byte("x")}}},
		&StartPingCheck{PingID: 1},
	} {
		b, _ := AppendMessage(nil, Header{Flags: FlagZeroCoded | FlagReliable, Sequence: 9}, m, []uint32{1})
		f.Add(b)
	}
}

// FuzzDecode: no input panics; whatever decodes re-encodes to a datagram
// that decodes to the same values; the fast paths (DecodeValues, the
// packet's own JSON and text) agree with Decode, and after a failed decode
// give nothing.
func FuzzDecode(f *testing.F) {
	fuzzSeeds(f)
	var p, q Packet
	var vals Values
	f.Fuzz(func(t *testing.T, b []byte) {
		h, _, _, err := ParseHeader(b)
		if err != nil {
			if p.DecodeFromBytes(b) == nil {
				t.Fatalf("ParseHeader failed (%v) but DecodeFromBytes succeeded", err)
			}
			return
		}
		if err := p.DecodeFromBytes(b); err != nil {
			p.DecodeValues(&vals)
			if vals.Message != nil || len(p.AppendJSON(nil)) > 0 || len(p.AppendText(nil)) > 0 {
				t.Fatalf("a failed decode (%v) renders or gives values", err)
			}
			return
		}
		checkFastPaths(t, &p, &vals)
		if h.ID != p.ID {
			t.Fatalf("ParseHeader read %v, the expanded datagram holds %v", h.ID, p.ID)
		}
		d := p.Decode()
		again, err := d.AppendTo(nil)
		if err != nil {
			t.Fatalf("re-encode of a decoded datagram: %v", err)
		}
		if err := q.DecodeFromBytes(again); err != nil {
			t.Fatalf("re-encoded datagram does not decode: %v\n%x", err, again)
		}
		d2 := q.Decode()
		d.Flags, d2.Flags = 0, 0 // coding may differ: kept only when shorter
		if j1, j2 := d.AppendJSON(nil), d2.AppendJSON(nil); !bytes.Equal(j1, j2) {
			t.Fatalf("values changed through encode:\n%s\n%s", j1, j2)
		}
	})
}

// FuzzZeroCode: decoding the encoder's output gives the input back, and
// decoding anything stays within its bound.
func FuzzZeroCode(f *testing.F) {
	f.Add([]byte{1, 0, 2})
	f.Add(make([]byte, 600))
	f.Add([]byte{0, 0, 0, 2})
	dst := make([]byte, MaxPacketSize)
	f.Fuzz(func(t *testing.T, x []byte) {
		if n, err := ZeroDecode(dst[:64], x); n > 64 || err == nil && n > 64 {
			t.Fatalf("wrote %d bytes into 64", n)
		}
		if len(x) > MaxPacketSize {
			return
		}
		enc := AppendZeroEncode(nil, x)
		n, err := ZeroDecode(dst, enc)
		if err != nil || !bytes.Equal(dst[:n], x) {
			t.Fatalf("decode(encode(%x)) = %x, %v", x, dst[:n], err)
		}
	})
}

// FuzzPeekZeroCoded: the header's message-number peek agrees with the full
// zero decoder on the first four bytes.
func FuzzPeekZeroCoded(f *testing.F) {
	for _, s := range [][]byte{{0xFF, 0xFF, 0, 1, 0x51}, {0, 0, 3}, {0xFF, 0}, {0}} {
		f.Add(s)
	}
	full := make([]byte, MaxPacketSize*2)
	f.Fuzz(func(t *testing.T, src []byte) {
		var peek [4]byte
		n := peekZeroCoded(&peek, src)
		m, err := ZeroDecode(full, src)
		if err == nil && (n != min(m, 4) || !bytes.Equal(peek[:n], full[:n])) {
			t.Fatalf("peek %x, decode %x", peek[:n], full[:min(m, 4)])
		}
	})
}

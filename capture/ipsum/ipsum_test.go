package ipsum

import (
	"encoding/hex"
	"testing"
)

// TestHeader: RFC 1071's worked example and a real IPv4 header.
func TestHeader(t *testing.T) {
	for _, tc := range []struct {
		name string
		hex  string
		want uint16
	}{
		// RFC 1071 §3: the words 0001 f203 f4f5 f6f7 sum to ddf2 (one's
		// complement), so the checksum is its complement, 220d.
		{"rfc1071", "0001f203f4f5f6f7", 0x220d},
		// A header from a capture (Wikipedia's IPv4 checksum example),
		// checksum field zeroed: b861.
		{"ipv4", "450000730000400040110000c0a80001c0a800c7", 0xb861},
	} {
		h, err := hex.DecodeString(tc.hex)
		if err != nil {
			t.Fatal(err)
		}
		if got := Header(h); got != tc.want {
			t.Errorf("%s: %04x, want %04x", tc.name, got, tc.want)
		}
	}
}

// TestSum: an odd last byte counts as a word's high byte (RFC 1071
// §4.1), a sum carries on across parts, and a packet with its checksum
// in place sums to 0xFFFF.
func TestSum(t *testing.T) {
	if got := Sum(0, []byte{0x01, 0x02, 0x03}); got != 0x0402 {
		t.Errorf("odd length: %04x, want 0402", got)
	}
	whole, _ := hex.DecodeString("0001f203f4f5f6f7")
	if a, b := Sum(0, whole), Sum(uint32(Sum(0, whole[:4])), whole[4:]); a != b || a != 0xddf2 {
		t.Errorf("in parts %04x, whole %04x, want ddf2", b, a)
	}
	h, _ := hex.DecodeString("450000730000400040110000c0a80001c0a800c7")
	h[10], h[11] = 0xb8, 0x61
	if got := Sum(0, h); got != 0xffff {
		t.Errorf("a header with its checksum sums to %04x, want ffff", got)
	}
}

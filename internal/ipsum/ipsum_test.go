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

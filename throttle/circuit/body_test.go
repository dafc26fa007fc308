package circuit

import (
	"bytes"
	"testing"

	"github.com/fairgrid/fairgrid/lludp"
)

// TestExpandPrefix: the expansion agrees with lludp.ZeroDecode on length,
// content and overflow, at the limit and past it.
func TestExpandPrefix(t *testing.T) {
	const limit = lludp.MaxPacketSize - lludp.HeaderSize
	for _, tc := range []struct {
		name string
		src  []byte
	}{
		{"plain", []byte{1, 2, 3}},
		{"a run", []byte{1, 0, 5, 2}},
		{"a trailing zero", []byte{1, 0}},
		{"long runs", []byte{0, 0, 0, 7, 9}},
		{"zeros up to the limit", append(bytes.Repeat([]byte{0}, 32), 250)}, // 256·32 − 256 + 250 = 8186
		{"one zero past the limit", append(bytes.Repeat([]byte{0}, 32), 251)},
		{"zeros past the limit", bytes.Repeat([]byte{0}, 40)},
		{"bytes past the limit", bytes.Repeat([]byte{1}, limit+1)},
		{"bytes up to the limit", bytes.Repeat([]byte{1}, limit)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := make([]byte, limit)
			n, err := lludp.ZeroDecode(want, tc.src)
			for _, size := range []int{0, 2, 64} {
				dst := make([]byte, size)
				total, ok := expandPrefix(dst, tc.src, limit)
				if ok != (err == nil) || ok && (total != n || !bytes.Equal(dst[:min(n, size)], want[:min(n, size)])) {
					t.Errorf("dst of %d: %d bytes, ok %v; ZeroDecode: %d, %v", size, total, ok, n, err)
				}
			}
		})
	}
}

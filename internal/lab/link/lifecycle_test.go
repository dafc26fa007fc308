package link

import (
	"io"
	"net/netip"
	"testing"

	"github.com/fairgrid/fairgrid/internal/lifecycletest"
)

// TestRelayCloseWithoutRun: the relay's listening socket, and a viewer's
// upstream socket that InjectUp opened, are released by Close alone; a
// second Close is harmless, and an InjectUp after it opens nothing.
func TestRelayCloseWithoutRun(t *testing.T) {
	cfg := Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Upstream: netip.MustParseAddrPort("127.0.0.1:9")}
	var last *Relay
	lifecycletest.Released(t, 2, func() io.Closer {
		r, err := New(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		r.InjectUp(netip.MustParseAddrPort("127.0.0.1:40000"), []byte("hello"))
		last = r
		return r
	})
	before := lifecycletest.Open(t)
	last.InjectUp(netip.MustParseAddrPort("127.0.0.1:40001"), []byte("hello"))
	if n := lifecycletest.Open(t); n != before {
		t.Errorf("InjectUp after Close opened %d files", n-before)
	}
}

// TestRelayCloseEndsRun: Close during Run ends it with nil, and Run's own
// release after it closes nothing twice.
func TestRelayCloseEndsRun(t *testing.T) {
	r, err := New(Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Upstream: netip.MustParseAddrPort("127.0.0.1:9")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	lifecycletest.EndsRun(t, r, r.Run, func() { r.InjectUp(netip.MustParseAddrPort("127.0.0.1:40000"), []byte("hello")) })
}

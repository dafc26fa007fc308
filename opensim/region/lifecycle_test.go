package region_test

import (
	"io"
	"net/netip"
	"testing"

	"github.com/fairgrid/fairgrid/internal/lifecycletest"
	"github.com/fairgrid/fairgrid/opensim/region"
)

func newRegion(t *testing.T) *region.Server {
	t.Helper()
	s, err := region.New(region.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCloseWithoutRun: New's socket is released by Close alone, and a
// second Close is harmless.
func TestCloseWithoutRun(t *testing.T) {
	lifecycletest.Released(t, 1, func() io.Closer { return newRegion(t) })
}

// TestCloseEndsRun: Close during Run ends it, and Run's own release
// after it closes nothing twice.
func TestCloseEndsRun(t *testing.T) {
	s := newRegion(t)
	lifecycletest.EndsRun(t, s, s.Run, nil)
}

//go:build unix

package gateway

import (
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFitFilesReal: the process's own RLIMIT_NOFILE, its soft limit
// lowered to 300 for the test, is raised at New to fit max_viewers 4,096
// when the hard limit allows it (the package's tests run one at a time:
// none is parallel). The soft limit is restored after.
func TestFitFilesReal(t *testing.T) {
	var was unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &was); err != nil {
		t.Skip(err)
	}
	if was.Max < 4096+1+fdReserve {
		t.Skipf("the hard limit %d is below what 4,096 circuits need: the raise cannot be shown here", was.Max)
	}
	t.Cleanup(func() { unix.Setrlimit(unix.RLIMIT_NOFILE, &was) })
	low := was
	low.Cur = 300
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Skip(err)
	}
	g, err := New(Config{Routes: []Route{{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Region: testRegion}}, MaxViewers: 4096}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.closePublic()
	var now unix.Rlimit
	unix.Getrlimit(unix.RLIMIT_NOFILE, &now)
	if now.Cur != 4096+1+fdReserve || g.core.cfg.MaxViewers != 4096 {
		t.Errorf("soft limit %d, max_viewers %d; want %d and 4096", now.Cur, g.core.cfg.MaxViewers, 4096+1+fdReserve)
	}
}

package main

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/fairgrid/fairgrid/opensim/region"
)

// TestViewerChildRegionsFlag: --child-regions is the viewer's flag, so a
// bad count exits 2 naming it (internal/lab/viewer tests each value).
func TestViewerChildRegionsFlag(t *testing.T) {
	code, _, errOut := runCmd(t, "", "viewer", "--duration", "1ms", "--child-regions", "9")
	if code != exitUsage || !strings.Contains(errOut, "fairgrid viewer: --child-regions 9: want 0 to 8") {
		t.Errorf("exit %d, stderr %q; want %d naming --child-regions", code, errOut, exitUsage)
	}
}

// TestViewerChildRegionsRun: against a region with two neighbours on the
// next two ports, fairgrid viewer --child-regions 2 reports a child
// circuit to each and the total of all three; without the flag it opens
// none.
func TestViewerChildRegionsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: an end-to-end run in real time")
	}
	root := startNeighbours(t, 2)
	for _, k := range []int{0, 2} {
		args := []string{"viewer", "--sim", root.String(), "--duration", "1500ms", "--circuit-code", strconv.Itoa(50 + k)}
		if k > 0 {
			args = append(args, "--child-regions", strconv.Itoa(k))
		}
		code, out, errOut := runCmd(t, "", args...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		if n := strings.Count(out, "child circuit to"); n != k {
			t.Errorf("--child-regions %d: %d child circuits reported:\n%s", k, n, out)
		}
		if n := strings.Count(out, "(complete): received"); n != k {
			t.Errorf("--child-regions %d: %d complete child circuits:\n%s", k, n, out)
		}
		if k > 0 && !strings.Contains(out, fmt.Sprintf("all %d circuits: received", k+1)) {
			t.Errorf("no total over the circuits:\n%s", out)
		}
	}
}

// startNeighbours runs a region and n neighbours on the n ports after its
// own, trying a few ports until all are free, until the test ends.
func startNeighbours(t *testing.T, n int) netip.AddrPort {
	t.Helper()
	for range 20 {
		probe, err := region.New(region.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		addr := probe.Addr()
		probe.Close()
		if int(addr.Port())+n > 65535 {
			continue
		}
		cfg := region.Config{Listen: addr, Activity: region.Terrain}
		var regions []*region.Server
		root, err := region.New(cfg, nil)
		if err == nil {
			regions = append(regions, root)
		}
		for i := 0; err == nil && i < n; i++ {
			c := cfg
			c.Listen = netip.AddrPortFrom(addr.Addr(), addr.Port()+uint16(i+1))
			c.Child = &region.ChildConfig{OffsetX: region.NeighbourOffsets[i][0], OffsetY: region.NeighbourOffsets[i][1]}
			var child *region.Server
			if child, err = region.New(c, nil); err == nil {
				regions = append(regions, child)
				err = root.AddChild(child)
			}
		}
		if err != nil {
			for _, r := range regions {
				r.Close()
			}
			continue // a port was taken: another run
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for _, r := range regions {
			wg.Add(1)
			go func() { defer wg.Done(); r.Run(ctx) }()
		}
		t.Cleanup(func() { cancel(); wg.Wait() })
		return addr
	}
	t.Fatal("no free run of ports")
	return netip.AddrPort{}
}

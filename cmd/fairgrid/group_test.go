package main

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"testing"
	"testing/synctest"

	"github.com/fairgrid/fairgrid/internal/fakenet"
	"github.com/fairgrid/fairgrid/internal/lab/viewer"
	"github.com/fairgrid/fairgrid/internal/lifecycletest"
	"github.com/fairgrid/fairgrid/opensim/gateway"
	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/fairgrid/fairgrid/throttle/group"
	"github.com/fairgrid/fairgrid/throttle/sidecar"
)

// Each front-end is one group.Group (sim, viewer, link and gateway here;
// run's in throttle/sidecar, TestLiveGroupMemberFailure; proxy's in
// throttle/proxy). The tests below give a front-end's
// group one failing member and check that its error is what Run returns,
// at once, with every other member stopped. They run in synctest's
// bubble, which fails a test that leaves a goroutine behind. The regions,
// viewers and gateways are real and bind real loopback sockets: a
// goroutine reading one is not durably blocked, so the bubble's clock
// stands still while they run — which these tests need it to (the failure
// comes at the start, and "at once" is no virtual time at all); a group
// that dropped the failure would then hang until go test's -timeout
// rather than fail at once. Only the failing part is a fake
// (internal/fakenet's listener; for viewer and link,
// whose Run fails in no way a test can cause, a member that fails).

var errBroken = errors.New("broken")

// failingRunner is a part whose Run fails at once.
type failingRunner struct{}

func (failingRunner) Run(context.Context) error { return errBroken }

// runFailing runs g inside the bubble and checks that it returns the
// failure, naming it with want, at once.
func runFailing(t *testing.T, g *group.Group, want string) {
	t.Helper()
	lifecycletest.FailsAtOnce(t, g.Run, errBroken, want)
}

// TestSimGroupMemberFailure: sim's group is the region and its metrics'
// server; the server's failure stops the region.
func TestSimGroupMemberFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, err := region.New(region.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		runFailing(t, simGroup(srv, fakenet.NewListener(errBroken)), "metrics: broken")
	})
}

// TestViewerGroupMemberFailure: viewer's group is its viewers; one that
// fails stops the others (a viewer's Run fails in no way a test can
// cause, so the failing one is a fake beside two real ones).
func TestViewerGroupMemberFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sim := freeUDP(t)
		var vs []runner
		for i := range 2 {
			v, err := viewer.New(viewer.Config{Sim: sim, CircuitCode: uint32(i + 1)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			vs = append(vs, v)
		}
		vs = append(vs[:1], failingRunner{}, vs[1])
		runFailing(t, viewerGroup(vs), "broken")
	})
}

// TestLinkGroupMemberFailure: link's group is its relay, whose failure is
// what runLink reports (the relay's Run fails in no way a test can cause:
// the failing relay is a fake).
func TestLinkGroupMemberFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		runFailing(t, linkGroup(failingRunner{}), "broken")
	})
}

// TestGatewayGroupMemberFailure: gateway's group is the gateway, its
// metrics' server and the reloads; the server's failure stops the others.
func TestGatewayGroupMemberFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gw, err := gateway.New(gateway.Config{Routes: []gateway.Route{{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Region: freeUDP(t)}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		reloads := sidecar.NewReloads(make(chan struct{}), sidecar.ReloadFunc(func() ([]string, []string, error) { return nil, nil, nil }), nil)
		runFailing(t, gatewayGroup(gw, fakenet.NewListener(errBroken), http.NotFoundHandler(), reloads), "metrics: broken")
	})
}

package proxy

import (
	"errors"
	"net"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fairgrid/fairgrid/internal/fakenet"
	"github.com/fairgrid/fairgrid/internal/lifecycletest"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/group"
	"github.com/fairgrid/fairgrid/throttle/sidecar"
)

// TestMemberFailureReachesCaller: the proxy is one group with the
// sidecar; whichever member fails — the SOCKS 5 server or the sidecar's
// metrics server — the group stops every other member and the caller
// gets the failure (virtual time: nothing waits on the clock).
func TestMemberFailureReachesCaller(t *testing.T) {
	broken := errors.New("listener broken")
	for _, tc := range []struct {
		name    string
		socks   func() net.Listener
		metrics func() net.Listener
		want    string
	}{
		{"socks5 server", func() net.Listener { return fakenet.NewListener(broken) }, nil, "socks5: socks5: accept: listener broken"},
		{"sidecar's metrics", func() net.Listener { return fakenet.NewListener(nil) },
			func() net.Listener { return fakenet.NewListener(broken) }, "metrics: listener broken"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				loop, err := throttle.New(throttle.Config{Interval: time.Second, SimPorts: lludp.SimPorts}, nil)
				if err != nil {
					t.Fatal(err)
				}
				sc := sidecar.Config{Loop: loop}
				if tc.metrics != nil {
					sc.MetricsListener, sc.Metrics = tc.metrics(), http.NotFoundHandler()
				}
				p, err := New(Config{}, sc, nil)
				if err != nil {
					t.Fatal(err)
				}
				var g group.Group
				p.AddTo(&g, tc.socks())
				lifecycletest.FailsAtOnce(t, g.Run, broken, tc.want)
			})
		})
	}
}

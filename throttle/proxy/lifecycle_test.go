package proxy

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/fairgrid/fairgrid/internal/lifecycletest"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/group"
	"github.com/fairgrid/fairgrid/throttle/sidecar"
)

// TestCloseWithoutRun: a proxy whose group never runs releases the
// listener AddTo was given, and its source, by Close alone; a second
// Close is harmless, and so is Close after the group ran.
func TestCloseWithoutRun(t *testing.T) {
	loop, err := throttle.New(throttle.Config{SimPorts: lludp.SimPorts}, nil)
	if err != nil {
		t.Fatal(err)
	}
	open := func() (*Proxy, *group.Group) {
		p, err := New(Config{}, sidecar.Config{Loop: loop}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var g group.Group
		p.AddTo(&g, ln)
		return p, &g
	}
	lifecycletest.Released(t, 1, func() io.Closer { p, _ := open(); return p })

	p, g := open()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.Run(ctx); err != nil {
		t.Fatalf("the group: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close after the group ran: %v", err)
	}
}

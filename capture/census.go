package capture

import (
	"context"
	"sync"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
)

// Census finds which interfaces carry LLUDP: a live capture on each, on
// the simulator ports, counting the datagrams that read as an LLUDP
// header. The daemon takes one when its own interface has seen nothing, to
// tell the user where the viewer's traffic is.
type Census struct {
	ifaces  []string
	readers []*Reader
}

// OpenCensus opens a live capture on each of ifaces, filtered to ports.
// An interface that cannot be opened (down, gone, no CAP_NET_RAW) is left
// out: a census names where traffic is, not where it cannot look.
func OpenCensus(ifaces []string, ports Ports) *Census {
	c := &Census{}
	for _, name := range ifaces {
		r, err := OpenLive(name, ports)
		if err != nil {
			continue
		}
		c.ifaces = append(c.ifaces, name)
		c.readers = append(c.readers, r)
	}
	return c
}

// Carrying reads every capture for d (or until ctx ends), closes them, and
// returns the interfaces on which at least one LLUDP datagram arrived, in
// the order they were given.
func (c *Census) Carrying(ctx context.Context, d time.Duration) []string {
	seen := make([]bool, len(c.readers))
	var wg sync.WaitGroup
	for i, r := range c.readers {
		wg.Go(func() {
			for {
				dg, err := r.Next()
				if err != nil {
					return
				}
				if _, _, _, err := lludp.ParseHeader(dg.Payload); err == nil {
					seen[i] = true
				}
			}
		})
	}
	t := time.NewTimer(d)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
	}
	c.Close() // ends each reader's Next
	wg.Wait()
	var out []string
	for i, ok := range seen {
		if ok {
			out = append(out, c.ifaces[i])
		}
	}
	return out
}

// Close closes the captures.
func (c *Census) Close() {
	for _, r := range c.readers {
		r.Close()
	}
}

package tcpflow

import (
	"errors"
	"fmt"

	"github.com/fairgrid/fairgrid/internal/lab/link"
)

// AddFlowVia adds a flow as AddFlow does, except that the packets the
// net's bottleneck delivers for it go to via instead of the far stack:
// something on the path after that link takes them (the multiplexing
// scenario's multiplexer, which holds the packets of several flows for a
// round and carries them across the shared bottleneck in bundles) and
// hands each on with Receive. The net's own bottleneck is then the hosts'
// access link to that something, not the shared one.
func (n *Net) AddFlowVia(cfg FlowConfig, via func(dir link.Direction, packet []byte)) (*Flow, error) {
	if via == nil {
		return nil, fmt.Errorf("tcpflow: flow %q: %w", cfg.Name, errors.New("no via"))
	}
	return n.addFlow(cfg, [2]func([]byte){
		link.Up:   func(packet []byte) { via(link.Up, packet) },
		link.Down: func(packet []byte) { via(link.Down, packet) },
	})
}

// Receive hands packet, a whole IPv4 packet that has crossed the link dir
// by another way than the net's bottleneck (after AddFlowVia), to the
// stack it goes to: the server's for Up, the client's for Down. The stack
// owns it from then on.
func (n *Net) Receive(dir link.Direction, packet []byte) {
	if dir == link.Up {
		n.server.inject(packet)
		return
	}
	n.client.inject(packet)
}

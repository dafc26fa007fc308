package throttle

import (
	"context"
	"net/netip"
)

// InjectSender is a Sender that hands each request's AgentThrottle, encoded,
// to a function sending it as the viewer: the lab's link emulator
// (link.Relay.InjectUp), whose datagram then crosses the emulated link from
// the viewer's host as the viewer's own would.
type InjectSender func(viewer netip.AddrPort, payload []byte)

// Send encodes r and injects it from r's viewer.
func (f InjectSender) Send(_ context.Context, r Request) error {
	b, err := r.Encode()
	if err != nil {
		return err
	}
	f(r.Circuit.Viewer, b)
	return nil
}

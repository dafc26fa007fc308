package throttle

import (
	"context"
	"net/netip"
	"testing"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle/circuit"
)

// TestInjectSender: the request leaves as the viewer's AgentThrottle, from
// the viewer, with its sequence number, agent, code and throttles.
func TestInjectSender(t *testing.T) {
	viewer := netip.MustParseAddrPort("192.0.2.1:5000")
	r := Request{Circuit: circuit.Key{Viewer: viewer, Sim: netip.MustParseAddrPort("192.0.2.9:9000")},
		Agent: lludp.AgentData{AgentID: lludp.UUID{1}, SessionID: lludp.UUID{2}}, CircuitCode: 7, Sequence: 41,
		Throttles: ViewerSplit(ratecalc.RateFromBits(300_000))}
	var from netip.AddrPort
	var sent []byte
	if err := InjectSender(func(v netip.AddrPort, b []byte) { from, sent = v, b }).Send(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	var p lludp.Packet
	var m lludp.AgentThrottle
	if err := p.DecodeFromBytes(sent); err != nil {
		t.Fatal(err)
	}
	if err := p.Unmarshal(&m); err != nil {
		t.Fatal(err)
	}
	if from != viewer || p.Sequence != 41 || m.AgentData != r.Agent || m.CircuitCode != 7 || m.Throttles != r.Throttles {
		t.Errorf("injected from %v: seq %d, %+v; want the request %+v", from, p.Sequence, m, r)
	}
}

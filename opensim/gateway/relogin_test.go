package gateway_test

import (
	"net/netip"
	"testing"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim/gateway"
	"github.com/fairgrid/fairgrid/opensim/gateway/gatewaytest"
)

// TestReloginSameEndpoint: on real sockets, a viewer logs in again from
// the same endpoint with a new circuit code. While its circuit lives, the
// new UseCircuitCode is dropped (a spoofed one must not reset a viewer's
// circuit, issue 34); once the viewer has closed its circuit, the new
// login is probed and carried on a circuit of its own, numbered from its
// own probe's number, and the region sees it from a new socket.
func TestReloginSameEndpoint(t *testing.T) {
	first := gatewaytest.StartRegion(t)
	u := gatewaytest.Start(t, gateway.Config{}, first)
	v := gatewaytest.NewViewer(t, u.GW.Addr(0), 1, gatewaytest.Loopback)
	v.UseCircuitCode(t)
	probe := v.Prove(t)
	at := first.NextOf(t, lludp.UseCircuitCodeID).From
	// received sends n reliable ObjectUpdates from region to the circuit,
	// numbered from 1, and returns the numbers the viewer sees.
	received := func(region *gatewaytest.Region, to netip.AddrPort, n int) []uint32 {
		for seq := range uint32(n) {
			region.Send(t, to, gatewaytest.Datagram(lludp.ObjectUpdateID, seq+1, lludp.FlagReliable, 300, nil))
		}
		var got []uint32
		for len(got) < n {
			if h, _, _ := v.Recv(t); h.ID == lludp.ObjectUpdateID {
				got = append(got, h.Sequence)
			}
		}
		return got
	}
	if got := received(first, at, 5); got[0] != probe+1 || got[4] != probe+5 {
		t.Fatalf("the first circuit's datagrams arrived numbered %v, want from %d", got, probe+1)
	}
	// The same endpoint, another code, while the circuit lives: dropped.
	v.NewCircuit(2)
	v.UseCircuitCode(t)
	u.HandledFresh(t)
	gatewaytest.WaitUntil(t, "the mismatch counted", func() bool { return u.GW.Counters().Drops[gateway.Mismatch] == 1 })
	// The viewer closes its circuit; the new login is a circuit of its own.
	v.Send(t, &lludp.CloseCircuit{}, 0)
	first.NextOf(t, lludp.CloseCircuitID)
	v.UseCircuitCode(t)
	probe2 := v.Prove(t)
	again := first.NextOf(t, lludp.UseCircuitCodeID).From
	if again == at {
		t.Errorf("the new login reached the region from the old circuit's socket %v", at)
	}
	if got := received(first, again, 3); got[0] != probe2+1 || got[2] != probe2+3 {
		t.Errorf("the new circuit's datagrams arrived numbered %v, want from %d", got, probe2+1)
	}
	gatewaytest.WaitUntil(t, "one circuit", func() bool {
		c := u.GW.Circuits()
		return len(c) == 1 && c[0].AgentID == v.Agent().AgentID.String() && c[0].Local == again
	})
}

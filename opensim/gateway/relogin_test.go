package gateway_test

import (
	"testing"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim/gateway"
	"github.com/fairgrid/fairgrid/opensim/gateway/gatewaytest"
)

// TestReloginSameEndpoint: on real sockets, the region restarts at its
// address and the viewer logs in again from the same endpoint with a new
// circuit code. The gateway keeps the circuit's socket (the new region
// sees the same endpoint), carries the new agent, and numbers the new
// region's datagrams to the viewer from 1 again, as the new circuit's.
func TestReloginSameEndpoint(t *testing.T) {
	first := gatewaytest.StartRegion(t)
	u := gatewaytest.Start(t, gateway.Config{}, first)
	v := gatewaytest.NewViewer(t, u.GW.Addr(0), 1, gatewaytest.Loopback)
	at := u.LoggedIn(t, v, nil)
	v.Send(t, &lludp.CompleteAgentMovement{AgentData: v.Agent(), CircuitCode: v.Code()}, lludp.FlagReliable)
	first.NextOf(t, lludp.CompleteAgentMovementID)
	// received sends n reliable ObjectUpdates from region to the circuit,
	// numbered from 1, and returns the numbers the viewer sees.
	received := func(region *gatewaytest.Region, n int) []uint32 {
		for seq := range uint32(n) {
			region.Send(t, at, gatewaytest.Datagram(lludp.ObjectUpdateID, seq+1, lludp.FlagReliable, 300, nil))
		}
		var got []uint32
		for len(got) < n {
			if h, _, _ := v.Recv(t); h.ID == lludp.ObjectUpdateID {
				got = append(got, h.Sequence)
			}
		}
		return got
	}
	if got := received(first, 5); got[0] != 1 || got[4] != 5 {
		t.Fatalf("the first circuit's datagrams arrived numbered %v", got)
	}
	// The region restarts at its address; the viewer logs in again.
	first.Close()
	second := gatewaytest.StartRegionAt(t, first.Addr())
	v.NewCircuit(2)
	v.UseCircuitCode(t)
	if again := second.NextOf(t, lludp.UseCircuitCodeID).From; again != at {
		t.Errorf("the restarted region sees the new login at %v, the old circuit at %v: want the same socket", again, at)
	}
	v.Send(t, &lludp.CompleteAgentMovement{AgentData: v.Agent(), CircuitCode: v.Code()}, lludp.FlagReliable)
	second.NextOf(t, lludp.CompleteAgentMovementID)
	if got := received(second, 3); got[0] != 1 || got[2] != 3 {
		t.Errorf("the new circuit's datagrams arrived numbered %v, want 1, 2, 3", got)
	}
	c := u.GW.Circuits()
	if len(c) != 1 || c[0].AgentID != v.Agent().AgentID.String() || c[0].Local != at {
		t.Errorf("after the new login the gateway carries %+v", c)
	}
}

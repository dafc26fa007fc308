package throttle

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/throttle/circuit"
)

// logoutReply is the region's answer to LogoutRequest, as OpenSim sends
// it (reliable, zero-coded, no inventory).
func logoutReply(t *testing.T, seq uint32) []byte {
	t.Helper()
	msg := lludp.Builtin().ByName("LogoutReply")
	head := make([]byte, lludp.HeaderSize)
	head[0] = byte(lludp.FlagReliable)
	binary.BigEndian.PutUint32(head[1:], seq)
	b, err := lludp.AppendBody(lludp.AppendMessageNumber(head, msg.ID), msg, []lludp.DecodedBlock{
		{Name: "AgentData", Instances: [][]any{{agent.AgentID, agent.SessionID}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func capDatagram(at time.Time, src, dst netip.AddrPort, b []byte) lludp.Datagram {
	return lludp.Datagram{At: at, Src: src, Dst: dst, Payload: b}
}

// login is a viewer's first second on a region: its UseCircuitCode and
// AgentUpdates, and the region's stream, from at.
func (f *feed) login(at time.Duration) {
	f.send(at, true, lludp.FlagReliable, &lludp.UseCircuitCode{Code: 1, SessionID: agent.SessionID, AgentID: agent.AgentID})
	f.agentUpdates(at, IdentityDatagrams)
	f.stream(at, 100)
}

// TestLogoutForgets (issue 37, the phantom circuit): once the region
// answers the viewer's LogoutRequest, the viewer's circuits leave the
// loop, and what straggles in after (its ack, the region's resends, the
// rest of a queue) does not make a circuit again, reported as waiting for
// its IDs until it idles out. A new login from the same socket is
// measured at once; so is the endpoint's traffic once the hold is over.
// A proxy's association that closes (ForgetViewer) holds its stragglers
// the same way.
func TestLogoutForgets(t *testing.T) {
	newLoop := func() (*Loop, *feed) {
		l, err := New(Config{Sims: []netip.AddrPort{simEP}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return l, &feed{t: t, l: l}
	}
	circuits := func(l *Loop, at time.Duration) int {
		l.Tick(t0.Add(at))
		return len(l.Keys())
	}
	t.Run("logout", func(t *testing.T) {
		l, f := newLoop()
		f.login(0)
		if n := circuits(l, time.Second); n != 1 {
			t.Fatalf("%d circuits after the login, want 1", n)
		}
		f.send(2*time.Second, true, lludp.FlagReliable, &lludp.LogoutRequest{AgentData: agent})
		if n := circuits(l, 2*time.Second); n != 1 {
			t.Fatalf("%d circuits after the LogoutRequest alone, want 1: the region has not answered", n)
		}
		f.down++
		l.Observe(capDatagram(t0.Add(2100*time.Millisecond), simEP, viewerEP, logoutReply(t, f.down)))
		if n := circuits(l, 2200*time.Millisecond); n != 0 {
			t.Fatalf("%d circuits after the LogoutReply, want 0", n)
		}
		// Stragglers: the viewer's ack, the region's resends and stream.
		f.send(2300*time.Millisecond, true, 0, &lludp.PacketAck{IDs: []uint32{f.down}})
		f.stream(2400*time.Millisecond, 50)
		f.send(3*time.Second, true, lludp.FlagZeroCoded, &lludp.AgentUpdate{AgentData: agent})
		for _, at := range []time.Duration{3 * time.Second, 8 * time.Second} {
			if n := circuits(l, at); n != 0 {
				t.Fatalf("at %v, %d circuits made again by stragglers, want 0: %v", at, n, l.Keys())
			}
		}
		if s := l.Stats(); s.Waiting != 0 {
			t.Errorf("%d decisions waited for the IDs of a phantom circuit", s.Waiting)
		}
		// The same socket logs in again.
		f.login(9 * time.Second)
		if n := circuits(l, 10*time.Second); n != 1 {
			t.Errorf("%d circuits after a new login from the same socket, want 1", n)
		}
	})
	t.Run("hold ends", func(t *testing.T) {
		l, f := newLoop()
		f.login(0)
		f.down++
		l.Observe(capDatagram(t0.Add(time.Second), simEP, viewerEP, logoutReply(t, f.down)))
		// Past the hold, the endpoint's traffic is measured again.
		f.stream(time.Second+goneHold, 100)
		f.agentUpdates(time.Second+goneHold, IdentityDatagrams)
		if n := circuits(l, 2*time.Second+goneHold); n != 1 {
			t.Errorf("%d circuits from traffic after the hold, want 1", n)
		}
	})
	t.Run("association closed", func(t *testing.T) {
		l, f := newLoop()
		f.login(0)
		if n := l.ForgetViewer(viewerEP); n != 1 {
			t.Fatalf("ForgetViewer dropped %d circuits, want 1", n)
		}
		// What the relay had queued before the association closed.
		f.stream(time.Second, 100)
		f.agentUpdates(time.Second, IdentityDatagrams)
		if n := circuits(l, 2*time.Second); n != 0 || slices.Contains(l.Keys(), circuit.Key{Sim: simEP, Viewer: viewerEP}) {
			t.Errorf("%d circuits after the association closed, want 0: %v", n, l.Keys())
		}
	})
}

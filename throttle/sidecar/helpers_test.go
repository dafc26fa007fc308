package sidecar

import (
	"net/netip"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/throttle"
)

// The endpoints and the agent of the sidecar's scripted circuits, and
// their time origin.
var (
	viewerEP = netip.MustParseAddrPort("10.0.0.2:50000")
	simEP    = netip.MustParseAddrPort("10.0.0.1:9000")
	agent    = lludp.AgentData{AgentID: lludp.UUID{1}, SessionID: lludp.UUID{2}}
	t0       = time.Unix(1_700_000_000, 0)
)

// observe hands l message m from src to dst, sent at t0+at with seq.
func observe(t *testing.T, l *throttle.Loop, at time.Duration, src, dst netip.AddrPort, flags lludp.Flags, seq uint32, m lludp.Typed) {
	t.Helper()
	b, err := lludp.AppendMessage(nil, lludp.Header{Flags: flags, Sequence: seq}, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Observe(lludp.Datagram{At: t0.Add(at), Src: src, Dst: dst, Payload: b})
}

// feed is a scripted circuit between viewerEP and simEP, each direction
// numbering its own datagrams.
type feed struct {
	t        *testing.T
	l        *throttle.Loop
	up, down uint32
}

func (f *feed) send(at time.Duration, up bool, flags lludp.Flags, m lludp.Typed) {
	if up {
		f.up++
		observe(f.t, f.l, at, viewerEP, simEP, flags, f.up, m)
		return
	}
	f.down++
	observe(f.t, f.l, at, simEP, viewerEP, flags, f.down, m)
}

// stream sends n simulator datagrams of 1000 bytes from at, every 10 ms.
func (f *feed) stream(at time.Duration, n int) {
	for i := range n {
		f.send(at+time.Duration(i)*10*time.Millisecond, false, lludp.FlagReliable, &lludp.ImagePacket{Data: make([]byte, 970)})
	}
}

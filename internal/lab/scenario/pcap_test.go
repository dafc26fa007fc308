package scenario

import (
	"bytes"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/internal/lab/link"
)

// TestPcapFile: a run's capture is what the viewer's host sees, the
// viewer's datagrams with the IPv4 and UDP headers of tcpflow's hosts and
// a region's port, readable by the project's own capture reader: what it
// sends as it leaves (arrived at the bottleneck), what it receives as the
// bottleneck delivers it, so a ping pair spans the whole round trip; each
// viewer behind the relay gets a port of its own on the capture's hosts.
func TestPcapFile(t *testing.T) {
	dir := t.TempDir()
	p, err := createPcap(dir, "a run")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1700000000, 0)
	ms := func(n int) time.Time { return at.Add(time.Duration(n) * time.Millisecond) }
	ping := []byte{0x40, 0, 0, 0, 7, 0, 1, 0}     // StartPingCheck, down
	reply := []byte{0x40, 0, 0, 0, 9, 0, 2, 0, 0} // CompletePingCheck, up
	up := link.UDPEndpoints{Src: pcapViewer, Dst: pcapRegion}
	down := link.UDPEndpoints{Src: pcapRegion, Dst: pcapViewer}
	// The ping leaves the region at 0 ms and reaches the viewer at 30;
	// the reply leaves the viewer at 31 and reaches the region at 61.
	p.tap(link.Event{Kind: link.Arrived, At: ms(0), Dir: link.Down, Packet: ping, UDP: down})
	p.tap(link.Event{Kind: link.Delivered, At: ms(30), Dir: link.Down, Packet: ping, UDP: down})
	p.tap(link.Event{Kind: link.Arrived, At: ms(31), Dir: link.Up, Packet: reply, UDP: up})
	p.tap(link.Event{Kind: link.Dropped, At: ms(40), Dir: link.Up, Packet: reply, UDP: up})
	p.tap(link.Event{Kind: link.Delivered, At: ms(61), Dir: link.Up, Packet: reply, UDP: up})
	// A second viewer, as the relay's loopback sockets have it: a port of
	// its own on the capture's viewer host, towards the region's.
	relayed := link.UDPEndpoints{Src: netip.MustParseAddrPort("127.0.0.1:45513"), Dst: netip.MustParseAddrPort("127.0.0.1:37640")}
	p.tap(link.Event{Kind: link.Arrived, At: ms(70), Dir: link.Up, Packet: reply, UDP: relayed})
	if err := p.close(); err != nil {
		t.Fatal(err)
	}
	got, err := capture.ReadFile(filepath.Join(dir, "a_run.pcap"), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []capture.Datagram{
		{At: ms(30), Src: pcapRegion, Dst: pcapViewer, Payload: ping},
		{At: ms(31), Src: pcapViewer, Dst: pcapRegion, Payload: reply},
		{At: ms(70), Src: netip.AddrPortFrom(pcapViewer.Addr(), pcapViewer.Port()+1), Dst: pcapRegion, Payload: reply},
	}
	if len(got) != len(want) {
		t.Fatalf("read back %d datagrams, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if !g.At.Equal(w.At) || g.Src != w.Src || g.Dst != w.Dst || !bytes.Equal(g.Payload, w.Payload) {
			t.Errorf("datagram %d: %v %v→%v % x; want %v %v→%v % x", i, g.At, g.Src, g.Dst, g.Payload, w.At, w.Src, w.Dst, w.Payload)
		}
	}
}

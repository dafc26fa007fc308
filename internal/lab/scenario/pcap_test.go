package scenario

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/internal/lab/link"
)

// TestPcapFile: a run's capture holds what the bottleneck delivered, the
// viewer's datagrams with the IPv4 and UDP headers of tcpflow's hosts and
// a region's port, readable by the project's own capture reader.
func TestPcapFile(t *testing.T) {
	dir := t.TempDir()
	p, err := createPcap(dir, "a run")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1700000000, 0)
	payload := []byte{0x40, 0, 0, 0, 7, 0, 0xff, 0xff, 0, 1}
	up := link.UDPEndpoints{Src: pcapViewer, Dst: pcapRegion}
	p.tap(link.Event{Kind: link.Arrived, At: at, Dir: link.Up, Packet: payload, UDP: up})
	p.tap(link.Event{Kind: link.Delivered, At: at, Dir: link.Up, Packet: payload, UDP: up})
	if err := p.close(); err != nil {
		t.Fatal(err)
	}
	r, err := capture.OpenFile(filepath.Join(dir, "a_run.pcap"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []capture.Datagram
	for {
		d, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		d.Payload = bytes.Clone(d.Payload)
		got = append(got, d)
	}
	if len(got) != 1 || got[0].Src != pcapViewer || got[0].Dst != pcapRegion || string(got[0].Payload) != string(payload) {
		t.Errorf("read back %+v, want the one delivered datagram from %v to %v", got, pcapViewer, pcapRegion)
	}
}

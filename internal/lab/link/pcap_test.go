package link

import (
	"bytes"
	"errors"
	"io"
	"net/netip"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/capture/ipsum"
)

// TestPcapWriter: a capture of what a bottleneck delivers reads back with
// the project's own reader: the UDP flow's payloads with the endpoints
// and delivery times of the model, the IP flow's TCP packets as frames
// that are not UDP, the dropped packet absent; headers carry a valid IPv4
// checksum.
func TestPcapWriter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		pw, err := NewPcapWriter(&buf, Delivered)
		if err != nil {
			t.Fatal(err)
		}
		b, err := NewBottleneck(BottleneckConfig{Down: PipeConfig{Rate: 1000, Delay: 50 * time.Millisecond, Buffer: 2}, Tap: pw.Tap}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ep := UDPEndpoints{Src: netip.MustParseAddrPort("10.0.0.2:9000"), Dst: netip.MustParseAddrPort("192.168.1.5:51000")}
		l := &deliveryLog{start: time.Now(), got: map[string][]time.Duration{}}
		id := addFlows(t, b, l, FlowConfig{Name: "lludp", Dir: Down, Overhead: 28, UDP: ep}, FlowConfig{Name: "tcp", Dir: Down})
		runBottleneck(t, b)
		// A minimal IPv4 TCP packet (20 + 20 bytes, no payload).
		tcp := make([]byte, 40)
		tcp[0], tcp[9] = 0x45, 6
		tcp[3] = 40
		b.Send(id["lludp"], []byte("hello")) // 33 B on the wire: 33 ms, delivered at 83 ms
		b.Send(id["tcp"], tcp)               // 40 B: departs at 73 ms, delivered at 123 ms
		b.Send(id["lludp"], []byte("dropped"))
		time.Sleep(time.Second)
		synctest.Wait()
		if err := pw.Flush(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes()[24+16:24+16+20], appendIPv4UDP(nil, ep, []byte("hello"))[:20]) || ipsum.Header(buf.Bytes()[24+16:24+16+20]) != 0 {
			t.Errorf("IPv4 header % x", buf.Bytes()[24+16:24+16+20])
		}
		r, err := capture.NewReader(&buf, nil)
		if err != nil {
			t.Fatal(err)
		}
		d, err := r.Next()
		if err != nil || d.Src != ep.Src || d.Dst != ep.Dst || string(d.Payload) != "hello" || !d.At.Equal(l.start.Add(83*time.Millisecond)) {
			t.Errorf("first datagram %v→%v %q at %v, err %v", d.Src, d.Dst, d.Payload, d.At.Sub(l.start), err)
		}
		if _, err := r.Next(); !errors.Is(err, io.EOF) {
			t.Errorf("after the datagram: %v, want the end", err)
		}
		if st := r.Stats(); st.Frames != 2 || st.SkippedBy(capture.SkipNotUDP) != 1 {
			t.Errorf("frames %d, not UDP %d; want 2 and 1", st.Frames, st.SkippedBy(capture.SkipNotUDP))
		}
	})
}

// TestPcapWriterRefuses: an unknown event kind is refused; UDP payloads
// between IPv6 endpoints are counted, not written; a failing writer's
// error comes out of Flush.
func TestPcapWriterRefuses(t *testing.T) {
	if _, err := NewPcapWriter(io.Discard, 9); err == nil || !strings.Contains(err.Error(), "event kind 9") {
		t.Errorf("kind 9: %v", err)
	}
	var buf bytes.Buffer
	pw, _ := NewPcapWriter(&buf, Arrived)
	v6 := UDPEndpoints{Src: netip.MustParseAddrPort("[::1]:1"), Dst: netip.MustParseAddrPort("[::1]:2")}
	pw.Tap(Event{Kind: Arrived, Packet: []byte("x"), UDP: v6})
	pw.Tap(Event{Kind: Delivered, Packet: []byte("not this kind")})
	if err := pw.Flush(); err != nil || pw.Skipped() != 1 || buf.Len() != 24 {
		t.Errorf("flush %v, skipped %d, %d bytes written; want nil, 1, the 24-byte header", err, pw.Skipped(), buf.Len())
	}
	fail, _ := NewPcapWriter(failingWriter{}, Arrived)
	fail.Tap(Event{Kind: Arrived, Packet: make([]byte, 70_000)})
	if err := fail.Flush(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("flush after a failed write: %v", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

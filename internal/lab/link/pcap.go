package link

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"
	"sync"

	"github.com/fairgrid/fairgrid/capture/ipsum"
)

// The capture format: classic pcap with nanosecond timestamps and raw IP
// frames (LINKTYPE_RAW, 101: each frame an IPv4 or IPv6 packet), which
// tcpdump, Wireshark and capture.OpenFile read. No link layer is invented.
const (
	pcapMagicNano = 0xA1B23C4D // pcap, nanosecond timestamps
	pcapLinkRaw   = 101
	pcapSnapLen   = 65535
)

// UDPEndpoints says that a flow's packets are UDP payloads between two
// endpoints rather than IP packets: a capture gives them the IPv4 and UDP
// headers they would have had on the wire.
type UDPEndpoints struct {
	Src, Dst netip.AddrPort
}

// PcapWriter writes the packets a bottleneck's tap sees into a pcap
// capture: every Event of one kind (what arrives at the bottleneck, what it
// drops, or what it delivers, at the time it decided), IP packets as they
// are and UDP payloads with the headers their flow's UDPEndpoints give.
// Its Tap method is a BottleneckConfig.Tap; call Flush when done.
type PcapWriter struct {
	// kinds is the event kind recorded in each direction.
	kinds [2]EventKind

	mu      sync.Mutex // guards the fields below
	w       *bufio.Writer
	err     error
	skipped uint64
	frame   []byte
}

// NewPcapWriter writes the capture's header to w and returns a writer of
// the events of kind.
func NewPcapWriter(w io.Writer, kind EventKind) (*PcapWriter, error) {
	if kind > Delivered {
		return nil, fmt.Errorf("link: event kind %d", kind)
	}
	return newPcapWriter(w, [2]EventKind{kind, kind})
}

// NewClientPcapWriter writes what a capture on the client's host sees:
// what the client sends as it arrives at the bottleneck, what it receives
// as the bottleneck delivers it. A request and its reply are then timed as
// the client times them, so a ping pair spans the path's whole round trip
// (a writer of one kind sees only the way up, or only the way down).
func NewClientPcapWriter(w io.Writer) (*PcapWriter, error) {
	var kinds [2]EventKind
	kinds[Up], kinds[Down] = Arrived, Delivered
	return newPcapWriter(w, kinds)
}

func newPcapWriter(w io.Writer, kinds [2]EventKind) (*PcapWriter, error) {
	bw := bufio.NewWriterSize(w, 1<<16)
	var h [24]byte
	binary.LittleEndian.PutUint32(h[0:], pcapMagicNano)
	binary.LittleEndian.PutUint16(h[4:], 2) // version 2.4
	binary.LittleEndian.PutUint16(h[6:], 4)
	binary.LittleEndian.PutUint32(h[16:], pcapSnapLen)
	binary.LittleEndian.PutUint32(h[20:], pcapLinkRaw)
	if _, err := bw.Write(h[:]); err != nil {
		return nil, fmt.Errorf("link: pcap header: %w", err)
	}
	return &PcapWriter{kinds: kinds, w: bw}, nil
}

// Tap records e if it is of the writer's kind. It must not block the
// bottleneck, so a write error is kept for Flush, and a UDP flow between
// other than IPv4 endpoints is counted in Skipped.
func (p *PcapWriter) Tap(e Event) {
	if e.Dir > Down || e.Kind != p.kinds[e.Dir] {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return
	}
	frame := e.Packet
	if e.UDP != (UDPEndpoints{}) {
		if !e.UDP.Src.Addr().Is4() || !e.UDP.Dst.Addr().Is4() || len(e.Packet) > pcapSnapLen-udpOverhead {
			p.skipped++
			return
		}
		p.frame = appendIPv4UDP(p.frame[:0], e.UDP, e.Packet)
		frame = p.frame
	}
	var h [16]byte
	ns := e.At.UnixNano()
	binary.LittleEndian.PutUint32(h[0:], uint32(ns/1e9))
	binary.LittleEndian.PutUint32(h[4:], uint32(ns%1e9))
	captured := min(len(frame), pcapSnapLen)
	binary.LittleEndian.PutUint32(h[8:], uint32(captured))
	binary.LittleEndian.PutUint32(h[12:], uint32(len(frame)))
	if _, err := p.w.Write(h[:]); err != nil {
		p.err = err
		return
	}
	if _, err := p.w.Write(frame[:captured]); err != nil {
		p.err = err
	}
}

// Skipped is the number of UDP payloads left out: their endpoints were not
// both IPv4.
func (p *PcapWriter) Skipped() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.skipped
}

// Flush writes out what is buffered and reports the first error of any
// write.
func (p *PcapWriter) Flush() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = p.w.Flush()
	}
	if p.err != nil {
		return fmt.Errorf("link: pcap: %w", p.err)
	}
	return nil
}

// appendIPv4UDP appends payload with the IPv4 header (RFC 791: no options,
// don't fragment, TTL 64) and UDP header (RFC 768: no checksum, which IPv4
// allows) it would have had between the endpoints.
func appendIPv4UDP(b []byte, ep UDPEndpoints, payload []byte) []byte {
	total := udpOverhead + len(payload)
	src, dst := ep.Src.Addr().As4(), ep.Dst.Addr().As4()
	ip := [20]byte{0: 0x45, 6: 0x40, 8: 64, 9: 17}
	binary.BigEndian.PutUint16(ip[2:], uint16(total))
	copy(ip[12:], src[:])
	copy(ip[16:], dst[:])
	binary.BigEndian.PutUint16(ip[10:], ipsum.Header(ip[:]))
	var udp [8]byte
	binary.BigEndian.PutUint16(udp[0:], ep.Src.Port())
	binary.BigEndian.PutUint16(udp[2:], ep.Dst.Port())
	binary.BigEndian.PutUint16(udp[4:], uint16(8+len(payload)))
	b = append(b, ip[:]...)
	b = append(b, udp[:]...)
	return append(b, payload...)
}

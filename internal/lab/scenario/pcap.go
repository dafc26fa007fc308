package scenario

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/fairgrid/fairgrid/internal/audit"
	"github.com/fairgrid/fairgrid/internal/audit/render"
	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/lludp"
)

// linktypeRaw is LINKTYPE_RAW: each record is an IP packet with no link
// header (tcpdump.org/linktypes.html), which is what the bottleneck
// carries.
const linktypeRaw = 101

// The addresses a capture gives the viewer's datagrams, which cross the
// bottleneck as bare UDP payloads: the client and server hosts of
// tcpflow's net, and the ports of a viewer and of a region (OpenSim's
// default 9000).
var (
	pcapViewer = netip.MustParseAddrPort("10.77.0.1:13000")
	pcapRegion = netip.MustParseAddrPort("10.77.0.2:9000")
)

// pcapFile writes what the bottleneck delivers, both ways, as a capture
// at the far end of each direction would see it.
type pcapFile struct {
	f   *os.File
	w   *bufio.Writer
	mu  sync.Mutex
	err error
	buf []byte
}

// fileName turns a run's name into a file name.
func fileName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		}
		return '_'
	}, name)
}

func createPcap(dir, name string) (*pcapFile, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, fileName(name)+".pcap"))
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	p := &pcapFile{f: f, w: bufio.NewWriterSize(f, 1<<20)}
	var h [24]byte
	binary.LittleEndian.PutUint32(h[0:], 0xa1b23c4d) // nanosecond timestamps
	binary.LittleEndian.PutUint16(h[4:], 2)
	binary.LittleEndian.PutUint16(h[6:], 4)
	binary.LittleEndian.PutUint32(h[16:], 65535)
	binary.LittleEndian.PutUint32(h[20:], linktypeRaw)
	p.w.Write(h[:])
	return p, nil
}

// isIPv4 tells the TCP flows' packets (whole IPv4 packets) from the
// viewer's LLUDP payloads: an LLUDP header's flags byte uses only its high
// nibble (zero-coded 0x80, reliable 0x40, resent 0x20, ack 0x10), an IPv4
// header's first byte always has its low nibble set (IHL ≥ 5).
func isIPv4(p []byte) bool { return len(p) >= 20 && p[0]>>4 == 4 && p[0]&0x0f >= 5 }

// tap records delivered packets; it runs under the bottleneck's lock, so
// it only copies into a buffered writer.
func (p *pcapFile) tap(e link.Event) {
	if e.Kind != link.Delivered {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return
	}
	pkt := e.Packet
	if !isIPv4(pkt) {
		src, dst := pcapViewer, pcapRegion
		if e.Dir == link.Down {
			src, dst = dst, src
		}
		p.buf = appendUDP(p.buf[:0], src, dst, pkt)
		pkt = p.buf
	}
	var h [16]byte
	ns := e.At.UnixNano()
	binary.LittleEndian.PutUint32(h[0:], uint32(ns/1e9))
	binary.LittleEndian.PutUint32(h[4:], uint32(ns%1e9))
	binary.LittleEndian.PutUint32(h[8:], uint32(len(pkt)))
	binary.LittleEndian.PutUint32(h[12:], uint32(len(pkt)))
	p.w.Write(h[:])
	if _, err := p.w.Write(pkt); err != nil {
		p.err = err
	}
}

// appendUDP wraps payload in IPv4 and UDP headers (RFC 791, RFC 768; the
// UDP checksum is left 0, which IPv4 allows).
func appendUDP(b []byte, src, dst netip.AddrPort, payload []byte) []byte {
	total := 28 + len(payload)
	ip := [20]byte{0x45, 0, byte(total >> 8), byte(total), 0, 0, 0x40, 0, 64, 17}
	s, d := src.Addr().As4(), dst.Addr().As4()
	copy(ip[12:], s[:])
	copy(ip[16:], d[:])
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(ip[i])<<8 | uint32(ip[i+1])
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(sum))
	b = append(b, ip[:]...)
	b = binary.BigEndian.AppendUint16(b, src.Port())
	b = binary.BigEndian.AppendUint16(b, dst.Port())
	b = binary.BigEndian.AppendUint16(b, uint16(8+len(payload)))
	b = append(b, 0, 0)
	return append(b, payload...)
}

func (p *pcapFile) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	err := errors.Join(p.err, p.w.Flush(), p.f.Close())
	if err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	return nil
}

// viewerLog keeps the viewer's datagrams as its host saw them, for the
// audit's report after the run.
type viewerLog struct {
	mu sync.Mutex
	ds []lludp.Datagram
}

func (l *viewerLog) add(d lludp.Datagram) {
	l.mu.Lock()
	l.ds = append(l.ds, d)
	l.mu.Unlock()
}

// writeAudit audits the viewer's circuit with fairgrid audit's engine and
// writes its HTML report.
func (l *viewerLog) writeAudit(dir, name string) error {
	a, err := audit.New(audit.Config{})
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	l.mu.Lock()
	ds := l.ds
	l.mu.Unlock()
	// The audit takes datagrams in time order; the tap saw them in the
	// order they left or arrived, nearly so.
	slices.SortStableFunc(ds, func(a, b lludp.Datagram) int { return a.At.Compare(b.At) })
	for _, d := range ds {
		a.Observe(d)
	}
	f, err := os.Create(filepath.Join(dir, fileName(name)+".html"))
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	err = render.WriteHTML(f, a.Report())
	return errors.Join(err, f.Close())
}

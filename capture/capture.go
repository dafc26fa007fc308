package capture

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"sync/atomic"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/pcapgo"
)

// Datagram is one captured UDP datagram. Payload aliases the reader's
// buffer and is valid only until the next call to Next.
type Datagram struct {
	At       time.Time
	Src, Dst netip.AddrPort
	Payload  []byte
}

// Stats counts what a Reader has seen.
type Stats struct {
	Frames    uint64 // link-layer frames read
	Datagrams uint64 // UDP datagrams returned
	Bytes     uint64 // UDP payload bytes returned
	Skipped   [numSkipReasons]uint64
	// KernelDrops is what the kernel dropped because the capture could not
	// keep up (live capture only): gaps it leaves are not network loss.
	KernelDrops uint64
}

// SkippedBy returns the frames skipped for the given reason.
func (s Stats) SkippedBy(r SkipReason) uint64 { return s.Skipped[r] }

// Ports selects UDP datagrams by port: a datagram is kept if either port is
// in one of the ranges. The zero value keeps every port.
type Ports []PortRange

// PortRange is an inclusive range of ports.
type PortRange struct{ Lo, Hi uint16 }

// SimPorts is the common simulator port range: OpenSim regions start at
// 9000 (Regions.ini.example) and Second Life simulators used 12035/12036 and
// 13000–13050 (SL wiki, "Configuring your hardware firewall"); 13100 leaves
// room for more regions.
var SimPorts = Ports{{9000, 13100}}

func (p Ports) match(src, dst netip.AddrPort) bool {
	if len(p) == 0 {
		return true
	}
	for _, r := range p {
		if s := src.Port(); s >= r.Lo && s <= r.Hi {
			return true
		}
		if d := dst.Port(); d >= r.Lo && d <= r.Hi {
			return true
		}
	}
	return false
}

// packetSource is what gopacket's file readers and live handle offer.
type packetSource interface {
	ZeroCopyReadPacketData() ([]byte, gopacket.CaptureInfo, error)
}

// Reader reads UDP datagrams from a capture file or a live interface.
type Reader struct {
	src      packetSource
	linkType LinkType
	ports    Ports
	closer   io.Closer
	kernel   func() (drops uint64, err error)
	counters counters
	err      error
}

// counters are atomic so that Stats may be read while another goroutine
// reads datagrams.
type counters struct {
	frames, datagrams, bytes, kernelDrops atomic.Uint64
	skipped                               [numSkipReasons]atomic.Uint64
}

// ErrUnknownLinkType is returned for captures of a link type capture does
// not decode.
var ErrUnknownLinkType = errors.New("unsupported link type")

// BrokenError reports a capture that ends in the middle of a record: what
// came before it was read and returned.
type BrokenError struct {
	Frames uint64 // frames read intact before the break
	Err    error
}

func (e *BrokenError) Error() string {
	return fmt.Sprintf("capture broken after %d frames: %v", e.Frames, e.Err)
}

func (e *BrokenError) Unwrap() error { return e.Err }

// Magic numbers of the capture formats.
const (
	magicPcapMicro    = 0xA1B2C3D4
	magicPcapNano     = 0xA1B23C4D
	magicPcapngHeader = 0x0A0D0D0A
)

// NewReader reads a pcap or pcapng stream, gzip-compressed or not, keeping
// datagrams on the given ports (nil: all).
func NewReader(r io.Reader, ports Ports) (*Reader, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	magic, err := br.Peek(4)
	if err != nil {
		return nil, fmt.Errorf("read capture header: %w", noEOF(err))
	}
	if magic[0] == 0x1F && magic[1] == 0x8B {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("read gzip header: %w", err)
		}
		br = bufio.NewReaderSize(gz, 1<<16)
		if magic, err = br.Peek(4); err != nil {
			return nil, fmt.Errorf("read capture header: %w", noEOF(err))
		}
	}
	var src packetSource
	var lt LinkType
	switch be, le := uint32(magic[0])<<24|uint32(magic[1])<<16|uint32(magic[2])<<8|uint32(magic[3]), uint32(magic[3])<<24|uint32(magic[2])<<16|uint32(magic[1])<<8|uint32(magic[0]); {
	case be == magicPcapngHeader:
		ng, err := pcapgo.NewNgReader(br, pcapgo.DefaultNgReaderOptions)
		if err != nil {
			return nil, fmt.Errorf("read pcapng header: %w", err)
		}
		src, lt = ng, LinkType(ng.LinkType())
	case be == magicPcapMicro || le == magicPcapMicro || be == magicPcapNano || le == magicPcapNano:
		pr, err := pcapgo.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("read pcap header: %w", err)
		}
		src, lt = pr, LinkType(pr.LinkType())
	default:
		return nil, fmt.Errorf("not a pcap or pcapng capture (magic %x)", magic)
	}
	if !lt.supported() {
		return nil, fmt.Errorf("link type %d: %w", lt, ErrUnknownLinkType)
	}
	return &Reader{src: src, linkType: lt, ports: ports}, nil
}

// OpenFile opens a pcap or pcapng file, gzip-compressed or not.
func OpenFile(path string, ports Ports) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := NewReader(f, ports)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.closer = f
	return r, nil
}

func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// LinkType is the capture's link type.
func (r *Reader) LinkType() LinkType { return r.linkType }

// Next returns the next UDP datagram on the selected ports, skipping and
// counting every other frame. Its Payload is valid until the next call. At
// the end of a file it returns io.EOF; a file cut short in a record gives a
// *BrokenError after everything before the break, which stays counted.
func (r *Reader) Next() (Datagram, error) {
	if r.err != nil {
		return Datagram{}, r.err
	}
	for {
		frame, ci, err := r.src.ZeroCopyReadPacketData()
		if err != nil {
			r.err = r.readError(err)
			return Datagram{}, r.err
		}
		r.counters.frames.Add(1)
		src, dst, payload, skip, ok := udpFrame(r.linkType, frame)
		if !ok {
			r.counters.skipped[skip].Add(1)
			continue
		}
		if !r.ports.match(src, dst) {
			r.counters.skipped[SkipPort].Add(1)
			continue
		}
		r.counters.datagrams.Add(1)
		r.counters.bytes.Add(uint64(len(payload)))
		return Datagram{At: ci.Timestamp, Src: src, Dst: dst, Payload: payload}, nil
	}
}

func (r *Reader) readError(err error) error {
	if errors.Is(err, io.EOF) {
		return io.EOF
	}
	if r.kernel != nil {
		return err // live: the handle's own error
	}
	return &BrokenError{Frames: r.counters.frames.Load(), Err: err}
}

// Stats returns the counters so far; for a live capture it also asks the
// kernel for its drop count. It may be called while another goroutine is in
// Next.
func (r *Reader) Stats() Stats {
	if r.kernel != nil {
		if drops, err := r.kernel(); err == nil {
			r.counters.kernelDrops.Add(drops)
		}
	}
	st := Stats{
		Frames:      r.counters.frames.Load(),
		Datagrams:   r.counters.datagrams.Load(),
		Bytes:       r.counters.bytes.Load(),
		KernelDrops: r.counters.kernelDrops.Load(),
	}
	for i := range st.Skipped {
		st.Skipped[i] = r.counters.skipped[i].Load()
	}
	return st
}

// Close releases the file or socket. A blocked Next on a live capture
// returns once it is closed.
func (r *Reader) Close() error {
	if r.closer == nil {
		return nil
	}
	return r.closer.Close()
}

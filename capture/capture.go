package capture

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/gopacket/gopacket"
)

// Datagram is one captured UDP datagram (lludp.Datagram, which the
// measurement takes without importing the capture stack). Payload aliases
// the reader's buffer and is valid only until the next call to Next.
type Datagram = lludp.Datagram

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

// Ports selects UDP datagrams by port; its home is lludp, beside the
// simulator port range.
type Ports = lludp.Ports

// PortRange is an inclusive range of ports.
type PortRange = lludp.PortRange

// SimPorts is the common simulator port range (lludp.SimPorts).
var SimPorts = lludp.SimPorts

// ParsePorts reads a comma-separated list of ports and ranges; see
// lludp.ParsePorts.
func ParsePorts(list string) (Ports, error) { return lludp.ParsePorts(list) }

// ParsePortRange reads one port or inclusive range; see lludp.ParsePortRange.
func ParsePortRange(s string) (PortRange, error) { return lludp.ParsePortRange(s) }

// packetSource is what gopacket's file readers and live handle offer.
type packetSource interface {
	ZeroCopyReadPacketData() ([]byte, gopacket.CaptureInfo, error)
}

// Reader reads UDP datagrams from a capture file or a live interface.
type Reader struct {
	file     *fileReader  // a capture file or stream
	src      packetSource // a live capture
	linkType LinkType
	ports    Ports
	closer   io.Closer
	kernel   func() (drops uint64, err error)
	counters counters
	// fileCounts are a file reader's counters: plain, because a file is
	// read by one goroutine and the atomic adds cost a tenth of the reader.
	fileCounts Stats
	err        error
}

// counters are a live capture's, atomic so that a daemon's metrics may read
// them while another goroutine reads datagrams.
type counters struct {
	frames, datagrams, bytes, kernelDrops atomic.Uint64
	skipped                               [numSkipReasons]atomic.Uint64
}

// ErrUnknownLinkType is returned for captures of a link type capture does
// not decode.
var ErrUnknownLinkType = errors.New("unsupported link type")

// BrokenError reports a capture that cannot be read on from some record:
// one cut short, or one whose lengths are impossible or disagree.
// Everything before it was read and returned.
type BrokenError struct {
	Frames uint64 // frames read intact before the break
	// Offset is where the broken record or block starts, in bytes from the
	// start of the capture; of the uncompressed stream if Uncompressed.
	Offset       int64
	Uncompressed bool
	Err          error
}

func (e *BrokenError) Error() string {
	where := "byte "
	if e.Uncompressed {
		where = "uncompressed byte "
	}
	return fmt.Sprintf("record %s at %s%s: %v", thousands(int64(e.Frames)+1), where, thousands(e.Offset), e.Err)
}

func (e *BrokenError) Unwrap() error { return e.Err }

// Magic numbers of the capture formats.
const (
	magicPcapMicro    = 0xA1B2C3D4
	magicPcapNano     = 0xA1B23C4D
	magicPcapngHeader = 0x0A0D0D0A
)

// IsCaptureMagic says whether b, the first bytes of a file or stream,
// begin a capture NewReader reads: pcap, pcapng, or gzip (of anything; the
// reader checks what is inside).
func IsCaptureMagic(b []byte) bool {
	if len(b) >= 2 && b[0] == 0x1F && b[1] == 0x8B {
		return true
	}
	if len(b) < 4 {
		return false
	}
	switch m := binary.BigEndian.Uint32(b); m {
	case magicPcapMicro, magicPcapNano, swap32(magicPcapMicro), swap32(magicPcapNano), magicPcapngHeader:
		return true
	}
	return false
}

// NewReader reads a pcap or pcapng stream, gzip-compressed or not, keeping
// datagrams on the given ports (nil: all). It reads r in large blocks and
// parses records in place.
func NewReader(r io.Reader, ports Ports) (*Reader, error) {
	f := &fileReader{r: r, buf: make([]byte, fileBufSize)}
	if err := f.fill(4); err != nil {
		return nil, fmt.Errorf("read capture header: %w", noEOF(err))
	}
	if f.buf[0] == 0x1F && f.buf[1] == 0x8B {
		// What was read already goes to gzip first.
		head := bytes.NewReader(append([]byte(nil), f.buf[:f.end]...))
		gz, err := gzip.NewReader(bufio.NewReaderSize(io.MultiReader(head, r), 1<<16))
		if err != nil {
			return nil, fmt.Errorf("read gzip header: %w", err)
		}
		f = &fileReader{r: gz, buf: f.buf, gzipped: true}
		if err := f.fill(4); err != nil {
			return nil, fmt.Errorf("read capture header: %w", noEOF(err))
		}
	}
	var lt LinkType
	switch magic := binary.BigEndian.Uint32(f.buf); magic {
	case magicPcapngHeader:
		if err := f.openPcapng(); err != nil {
			return nil, err
		}
		lt = f.ifaces[0].linkType
	case magicPcapMicro, magicPcapNano, swap32(magicPcapMicro), swap32(magicPcapNano):
		if err := f.openPcap(magic); err != nil {
			return nil, err
		}
		lt = f.linkType
	default:
		return nil, fmt.Errorf("not a pcap or pcapng capture (magic %x)", f.buf[:4])
	}
	if !lt.supported() {
		return nil, fmt.Errorf("link type %d: %w", lt, ErrUnknownLinkType)
	}
	return &Reader{file: f, linkType: lt, ports: ports}, nil
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

// ReadFile reads every UDP datagram of a capture file on the selected
// ports, each payload a copy of its own: for captures small enough to hold
// in memory.
func ReadFile(path string, ports Ports) ([]Datagram, error) {
	r, err := OpenFile(path, ports)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var ds []Datagram
	for {
		d, err := r.Next()
		if errors.Is(err, io.EOF) {
			return ds, nil
		}
		if err != nil {
			return ds, fmt.Errorf("%s: %w", path, err)
		}
		d.Payload = bytes.Clone(d.Payload)
		ds = append(ds, d)
	}
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
// the end of a file it returns io.EOF; a file cut short in a record, or
// with a record whose lengths are impossible, gives a *BrokenError after
// everything before the break, which stays counted.
func (r *Reader) Next() (d Datagram, err error) {
	if r.err != nil {
		return d, r.err
	}
	if r.file == nil {
		return r.nextLive()
	}
	// The result is built in place: a Datagram is 14 words, and copying it
	// once more per call showed in profiles.
	f, c := r.file, &r.fileCounts
	for {
		var frame []byte
		var lt LinkType
		if f.pcapng {
			frame, d.At, lt, err = f.nextPcapng()
		} else {
			frame, d.At, lt, err = f.nextPcap()
		}
		if err != nil {
			r.err = err
			return Datagram{}, err
		}
		c.Frames++
		var skip SkipReason
		var ok bool
		if d.Src, d.Dst, d.Payload, skip, ok = udpFrame(lt, frame); !ok {
			c.Skipped[skip]++
			continue
		}
		if !r.ports.Match(d.Src, d.Dst) {
			c.Skipped[SkipPort]++
			continue
		}
		c.Datagrams++
		c.Bytes += uint64(len(d.Payload))
		return d, nil
	}
}

func (r *Reader) nextLive() (Datagram, error) {
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
		if !r.ports.Match(src, dst) {
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

// Stats returns the counters so far. For a live capture it also asks the
// kernel for its drop count, and it may be called while another goroutine
// is in Next; a file's Reader, like the rest of its methods, is for one
// goroutine.
func (r *Reader) Stats() Stats {
	if r.file != nil {
		return r.fileCounts
	}
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

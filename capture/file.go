package capture

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strconv"
	"time"
)

// Sizes of the file reader. Records are parsed in place in one buffer that
// is refilled by large reads, so a record costs no system call and no
// allocation; a record larger than the buffer grows it, up to maxBlock.
const (
	fileBufSize = 1 << 20
	// maxBlock bounds a pcapng block and a pcap record, as Wireshark does
	// (MAX_BLOCK_SIZE, 16 MiB): a larger length field is corruption, and
	// believing it would mean reading the rest of the file as one record.
	maxBlock = 16 << 20
	// pcapMinSnap is the least snapshot length a pcap record may exceed
	// its header's: libpcap's MAXIMUM_SNAPLEN, which writers use even
	// when the file header claims less.
	pcapMinSnap = 262144
)

// pcapng block types (IETF draft-ietf-opsawg-pcapng §4).
const (
	ngSectionHeader    = 0x0A0D0D0A
	ngInterface        = 1
	ngObsoletePacket   = 2
	ngSimplePacket     = 3
	ngEnhancedPacket   = 6
	ngByteOrderMagic   = 0x1A2B3C4D
	ngOptionEnd        = 0
	ngOptionTSResol    = 9
	ngOptionTSOffset   = 14
	ngMinBlock         = 12 // type, length, length
	ngSectionMinBlock  = 28
	ngInterfaceMinSize = 20
	ngEnhancedMinSize  = 32
	ngObsoleteMinSize  = 32
	ngSimpleMinSize    = 16
)

// fileReader parses pcap and pcapng records out of a byte stream.
type fileReader struct {
	r        io.Reader
	buf      []byte
	pos, end int   // the unread bytes are buf[pos:end]
	base     int64 // stream offset of buf[0]
	readErr  error // what r returned last, io.EOF included
	packets  uint64
	gzipped  bool
	big      bool // byte order of the file or the current pcapng section
	pcapng   bool
	nanos    bool // pcap: nanosecond timestamps
	maxCap   uint32
	linkType LinkType // pcap: the file's
	ifaces   []ngInterfaceInfo
	last     time.Time // the previous packet's, for Simple Packet Blocks
	opened   bool      // pcapng: the first interface has been read
}

// ngInterfaceInfo is what a pcapng Interface Description Block says.
type ngInterfaceInfo struct {
	linkType  LinkType
	supported bool
	snaplen   uint32
	// The timestamp unit is 10^-exp or 2^-exp seconds (if_tsresol).
	pow2   bool
	exp    uint8
	offset int64 // seconds added to every timestamp (if_tsoffset)
}

func (f *fileReader) u16(b []byte) uint16 {
	if f.big {
		return binary.BigEndian.Uint16(b)
	}
	return binary.LittleEndian.Uint16(b)
}

func (f *fileReader) u32(b []byte) uint32 {
	if f.big {
		return binary.BigEndian.Uint32(b)
	}
	return binary.LittleEndian.Uint32(b)
}

// fill makes at least n unread bytes available. It returns io.EOF if the
// stream ended cleanly before any of them, io.ErrUnexpectedEOF if it ended
// part way, or the stream's error.
func (f *fileReader) fill(n int) error {
	if f.end-f.pos >= n {
		return nil
	}
	if f.pos > 0 {
		f.base += int64(f.pos)
		f.end = copy(f.buf, f.buf[f.pos:f.end])
		f.pos = 0
	}
	if n > len(f.buf) {
		f.buf = append(f.buf[:f.end], make([]byte, n-f.end)...)
	}
	for empty := 0; f.end < n && f.readErr == nil; {
		var k int
		k, f.readErr = f.r.Read(f.buf[f.end:])
		f.end += k
		// A reader that keeps returning nothing would hold us here for
		// ever; bufio gives up the same way.
		if empty++; k > 0 {
			empty = 0
		} else if empty == 100 && f.readErr == nil {
			f.readErr = io.ErrNoProgress
		}
	}
	switch {
	case f.end >= n:
		return nil
	case errors.Is(f.readErr, io.EOF) && f.end == 0:
		return io.EOF
	case errors.Is(f.readErr, io.EOF):
		return io.ErrUnexpectedEOF
	}
	return f.readErr
}

// broken is a *BrokenError for the record or block at the read position.
func (f *fileReader) broken(format string, a ...any) error {
	return f.brokenErr(fmt.Errorf(format, a...))
}

func (f *fileReader) brokenErr(err error) error {
	return &BrokenError{Frames: f.packets, Offset: f.base + int64(f.pos), Uncompressed: f.gzipped, Err: err}
}

// cutShort says how a record of need bytes ended early, or passes on the
// stream's own error.
func (f *fileReader) cutShort(err error, what string, need int) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return f.brokenErr(fmt.Errorf("%s needs %d bytes, the capture ends %d bytes into it: %w", what, need, f.end-f.pos, io.ErrUnexpectedEOF))
	}
	return f.brokenErr(err)
}

// openPcap reads the 24-byte pcap file header.
func (f *fileReader) openPcap(magic uint32) error {
	f.big = magic == magicPcapMicro || magic == magicPcapNano
	f.nanos = magic == magicPcapNano || magic == swap32(magicPcapNano)
	if err := f.fill(24); err != nil {
		return fmt.Errorf("read pcap header: %w", noEOF(err))
	}
	h := f.buf[f.pos : f.pos+24]
	if major := f.u16(h[4:]); major != 2 {
		return fmt.Errorf("pcap version %d.%d: only 2.x is read", major, f.u16(h[6:]))
	}
	f.maxCap = max(f.u32(h[16:]), pcapMinSnap)
	f.maxCap = min(f.maxCap, maxBlock)
	// The upper bits carry FCS information (pcap spec, "LinkType and
	// additional information").
	f.linkType = LinkType(f.u32(h[20:]) & 0xFFFF)
	f.pos += 24
	return nil
}

// nextPcap returns the next pcap record's frame, aliasing the buffer.
func (f *fileReader) nextPcap() ([]byte, time.Time, LinkType, error) {
	if f.end-f.pos < 16 {
		if err := f.fill(16); err != nil {
			if err == io.EOF {
				return nil, time.Time{}, 0, io.EOF
			}
			return nil, time.Time{}, 0, f.cutShort(err, "the record header", 16)
		}
	}
	h := f.buf[f.pos : f.pos+16]
	sec, frac, incl, orig := f.u32(h), f.u32(h[4:]), f.u32(h[8:]), f.u32(h[12:])
	if incl > f.maxCap {
		return nil, time.Time{}, 0, f.broken("captured length %d is impossible: it exceeds the %d-byte limit (original length %d)", incl, f.maxCap, orig)
	}
	need := 16 + int(incl)
	if f.end-f.pos < need {
		if err := f.fill(need); err != nil {
			return nil, time.Time{}, 0, f.cutShort(noEOF(err), "the record", need)
		}
	}
	frame := f.buf[f.pos+16 : f.pos+need]
	f.pos += need
	f.packets++
	if !f.nanos {
		frac *= 1000
	}
	return frame, time.Unix(int64(sec), int64(frac)), f.linkType, nil
}

// openPcapng reads blocks up to the first Interface Description Block, so
// that the link type is known before the first packet.
func (f *fileReader) openPcapng() error {
	f.pcapng = true
	defer func() { f.opened = true }()
	for len(f.ifaces) == 0 {
		// Before the first interface, a packet block is an error.
		if _, _, _, err := f.nextPcapng(); err == io.EOF {
			return errors.New("read pcapng: no interface description")
		} else if err != nil {
			return fmt.Errorf("read pcapng: %w", err)
		}
	}
	return nil
}

// nextPcapng returns the next packet's frame, aliasing the buffer, and
// takes in the other blocks on the way. When the first Interface
// Description Block is read it returns with no frame and no error.
func (f *fileReader) nextPcapng() ([]byte, time.Time, LinkType, error) {
	for {
		// The type and length come first, so that an impossible length is
		// reported as such even at the end of the file.
		if f.end-f.pos < 8 {
			if err := f.fill(8); err != nil {
				if err == io.EOF {
					return nil, time.Time{}, 0, io.EOF
				}
				return nil, time.Time{}, 0, f.cutShort(err, "a block header", 8)
			}
		}
		typ := f.u32(f.buf[f.pos:])
		if typ == ngSectionHeader { // a palindrome: it reads alike in either order
			if err := f.fill(12); err != nil {
				return nil, time.Time{}, 0, f.cutShort(noEOF(err), "a section header", 12)
			}
			switch bom := binary.BigEndian.Uint32(f.buf[f.pos+8:]); bom {
			case ngByteOrderMagic:
				f.big = true
			case swap32(ngByteOrderMagic):
				f.big = false
			default:
				return nil, time.Time{}, 0, f.broken("section header with byte-order magic %08x, not %08x", bom, ngByteOrderMagic)
			}
		}
		length := f.u32(f.buf[f.pos+4:])
		if err := f.checkBlockLength(typ, length); err != nil {
			return nil, time.Time{}, 0, err
		}
		n := int(length)
		if f.end-f.pos < n {
			if err := f.fill(n); err != nil {
				return nil, time.Time{}, 0, f.cutShort(noEOF(err), fmt.Sprintf("the %d-byte %s", n, blockName(typ)), n)
			}
		}
		b := f.buf[f.pos : f.pos+n]
		if trail := f.u32(b[n-4:]); trail != length {
			return nil, time.Time{}, 0, f.broken("%s length %d at its start but %d at its end", blockName(typ), length, trail)
		}
		body := b[8 : n-4]
		var frame []byte
		var at time.Time
		var lt LinkType
		var err error
		firstInterface := false
		switch typ {
		case ngSectionHeader:
			if major := f.u16(body[4:]); major != 1 {
				err = fmt.Errorf("pcapng version %d.%d: only 1.x is read", major, f.u16(body[6:]))
			}
			f.ifaces = f.ifaces[:0]
		case ngInterface:
			err = f.addInterface(body)
			firstInterface = err == nil && !f.opened
		case ngEnhancedPacket, ngObsoletePacket:
			frame, at, lt, err = f.packetBlock(typ, body)
		case ngSimplePacket:
			frame, at, lt, err = f.simplePacket(body)
		}
		if err != nil {
			return nil, time.Time{}, 0, f.brokenErr(err)
		}
		f.pos += n
		if frame != nil {
			f.packets++
			return frame, at, lt, nil
		}
		if firstInterface {
			return nil, time.Time{}, 0, nil
		}
	}
}

func (f *fileReader) checkBlockLength(typ, length uint32) error {
	least := uint32(ngMinBlock)
	switch typ {
	case ngSectionHeader:
		least = ngSectionMinBlock
	case ngInterface:
		least = ngInterfaceMinSize
	case ngEnhancedPacket:
		least = ngEnhancedMinSize
	case ngObsoletePacket:
		least = ngObsoleteMinSize
	case ngSimplePacket:
		least = ngSimpleMinSize
	}
	switch {
	case length < least:
		return f.broken("%s length %d is impossible: the least is %d", blockName(typ), length, least)
	case length%4 != 0:
		return f.broken("%s length %d is impossible: not a multiple of 4", blockName(typ), length)
	case length > maxBlock:
		return f.broken("%s length %d is impossible: above the %d-byte limit", blockName(typ), length, maxBlock)
	}
	return nil
}

func blockName(typ uint32) string {
	switch typ {
	case ngSectionHeader:
		return "section header block"
	case ngInterface:
		return "interface description block"
	case ngEnhancedPacket:
		return "enhanced packet block"
	case ngObsoletePacket:
		return "packet block"
	case ngSimplePacket:
		return "simple packet block"
	}
	return "block of type " + strconv.FormatUint(uint64(typ), 10)
}

func (f *fileReader) addInterface(body []byte) error {
	lt := LinkType(f.u16(body))
	ifc := ngInterfaceInfo{linkType: lt, supported: lt.supported(), snaplen: f.u32(body[4:]), exp: 6}
	for opts := body[8:]; len(opts) >= 4; {
		code, n := f.u16(opts), int(f.u16(opts[2:]))
		if code == ngOptionEnd {
			break
		}
		if 4+n > len(opts) {
			return fmt.Errorf("interface %d: option %d of %d bytes overruns its block", len(f.ifaces), code, n)
		}
		v := opts[4 : 4+n]
		switch {
		case code == ngOptionTSResol && n >= 1:
			ifc.pow2, ifc.exp = v[0]&0x80 != 0, v[0]&0x7F
			if !ifc.pow2 && ifc.exp > 19 || ifc.pow2 && ifc.exp > 63 {
				return fmt.Errorf("interface %d: timestamp resolution %#x is impossible", len(f.ifaces), v[0])
			}
		case code == ngOptionTSOffset && n >= 8:
			if f.big {
				ifc.offset = int64(binary.BigEndian.Uint64(v))
			} else {
				ifc.offset = int64(binary.LittleEndian.Uint64(v))
			}
		}
		opts = opts[4+(n+3)&^3:]
	}
	if len(f.ifaces) == 0 && !ifc.supported && !f.opened {
		return fmt.Errorf("link type %d: %w", lt, ErrUnknownLinkType)
	}
	f.ifaces = append(f.ifaces, ifc)
	return nil
}

// packetBlock reads an Enhanced Packet Block or an obsolete Packet Block:
// they differ only in the width of the interface ID.
func (f *fileReader) packetBlock(typ uint32, body []byte) ([]byte, time.Time, LinkType, error) {
	var id uint32
	if typ == ngEnhancedPacket {
		id = f.u32(body)
	} else {
		id = uint32(f.u16(body))
	}
	hi, lo, incl := f.u32(body[4:]), f.u32(body[8:]), f.u32(body[12:])
	if len(f.ifaces) == 0 {
		return nil, time.Time{}, 0, errors.New("a packet before any interface description")
	}
	if int(id) >= len(f.ifaces) {
		return nil, time.Time{}, 0, fmt.Errorf("packet on interface %d, but the section describes %d", id, len(f.ifaces))
	}
	if room := len(body) - 20; int64(incl) > int64(room) {
		return nil, time.Time{}, 0, fmt.Errorf("captured length %d is impossible: its block holds %d bytes", incl, room)
	}
	ifc := &f.ifaces[id]
	at := ifc.time(uint64(hi)<<32 | uint64(lo))
	f.last = at
	lt := ifc.linkType
	if !ifc.supported {
		lt = linkUnsupported
	}
	return body[20 : 20+incl], at, lt, nil
}

// simplePacket reads a Simple Packet Block. It carries no time, so it takes
// the time of the packet before it.
func (f *fileReader) simplePacket(body []byte) ([]byte, time.Time, LinkType, error) {
	if len(f.ifaces) == 0 {
		return nil, time.Time{}, 0, errors.New("a packet before any interface description")
	}
	ifc := &f.ifaces[0]
	incl := min(int64(f.u32(body)), int64(len(body)-4))
	if ifc.snaplen > 0 {
		incl = min(incl, int64(ifc.snaplen))
	}
	lt := ifc.linkType
	if !ifc.supported {
		lt = linkUnsupported
	}
	return body[4 : 4+incl], f.last, lt, nil
}

// time converts a pcapng timestamp in the interface's units.
func (ifc *ngInterfaceInfo) time(ts uint64) time.Time {
	var sec, nsec uint64
	if ifc.pow2 {
		sec = ts >> ifc.exp
		frac := ts & (1<<ifc.exp - 1)
		hi, lo := bits.Mul64(frac, 1e9)
		nsec = lo >> ifc.exp
		if ifc.exp > 0 {
			nsec |= hi << (64 - ifc.exp)
		}
	} else {
		unit := pow10[ifc.exp]
		sec, nsec = ts/unit, ts%unit
		if unit <= 1e9 {
			nsec *= 1e9 / unit
		} else {
			nsec /= unit / 1e9
		}
	}
	return time.Unix(int64(sec)+ifc.offset, int64(nsec))
}

var pow10 = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

func swap32(v uint32) uint32 { return bits.ReverseBytes32(v) }

// thousands writes n with commas between groups of three digits, as the
// error messages give record numbers and offsets.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	var b []byte
	for i, c := range []byte(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, c)
	}
	if neg {
		return "-" + string(b)
	}
	return string(b)
}

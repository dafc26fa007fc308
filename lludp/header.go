package lludp

import (
	"encoding/binary"
	"strings"
)

// Flags is the first byte of every datagram (viewer message.h LL_*_FLAG).
type Flags uint8

const (
	FlagZeroCoded Flags = 0x80 // bytes from offset 6 to the acks are zero-coded
	FlagReliable  Flags = 0x40 // the receiver must ack this sequence number
	FlagResent    Flags = 0x20 // a retransmission, with the original's sequence
	FlagAcks      Flags = 0x10 // acks are appended after the message
)

func (f Flags) ZeroCoded() bool { return f&FlagZeroCoded != 0 }
func (f Flags) Reliable() bool  { return f&FlagReliable != 0 }
func (f Flags) Resent() bool    { return f&FlagResent != 0 }
func (f Flags) HasAcks() bool   { return f&FlagAcks != 0 }

func (f Flags) String() string {
	var parts []string
	for _, x := range [...]struct {
		f    Flags
		name string
	}{{FlagZeroCoded, "zerocoded"}, {FlagReliable, "reliable"}, {FlagResent, "resent"}, {FlagAcks, "acks"}} {
		if f&x.f != 0 {
			parts = append(parts, x.name)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "|")
}

// Wire sizes (viewer message.h, net.h; protocol.md §2).
const (
	// HeaderSize is flags, sequence number and extra-header length.
	HeaderSize = 6
	// MinPacketSize is the header plus a one-byte message number
	// (viewer LL_MINIMUM_VALID_PACKET_SIZE; OpenSim drops shorter datagrams).
	MinPacketSize = HeaderSize + 1
	// MaxPacketSize bounds a datagram after zero-expansion, header included
	// (viewer MAX_BUFFER_SIZE = 8192).
	MaxPacketSize = 8192
	// MaxAppendedAcks is the most acks one count byte can announce.
	MaxAppendedAcks = 255
)

// Header is the fixed part of a datagram and its message number.
type Header struct {
	Flags    Flags
	Sequence uint32 // big-endian on the wire
	// Extra is the extra-header length (byte 5). Every known sender writes
	// 0; a non-zero value is skipped after the message number, as the Linden
	// viewer does (protocol.md §2.4).
	Extra uint8
	ID    MessageID
}

// AckList is a view of the acks appended to a datagram: big-endian u32s
// (viewer message.cpp sendMessage), aliasing the datagram's bytes.
type AckList struct{ raw []byte }

// Len is the number of appended acks.
func (a AckList) Len() int { return len(a.raw) / 4 }

// At returns the i-th ack in wire order.
func (a AckList) At(i int) uint32 { return binary.BigEndian.Uint32(a.raw[4*i:]) }

// AppendTo appends every ack to dst.
func (a AckList) AppendTo(dst []uint32) []uint32 {
	for i := 0; i+4 <= len(a.raw); i += 4 {
		dst = append(dst, binary.BigEndian.Uint32(a.raw[i:]))
	}
	return dst
}

// ParseHeader reads the header, the appended acks and the message number of
// a datagram without decoding its body; it allocates nothing. The returned
// AckList aliases b. end is where the message ends in b, before the acks.
func ParseHeader(b []byte) (h Header, acks AckList, end int, err error) {
	if len(b) < MinPacketSize {
		return h, acks, 0, decodeError(len(b), nil, "header", ErrTruncated)
	}
	h.Flags = Flags(b[0])
	h.Sequence = binary.BigEndian.Uint32(b[1:5])
	h.Extra = b[5]
	end = len(b)
	if h.Flags.HasAcks() {
		trailer := 4*int(b[end-1]) + 1
		if end-trailer < MinPacketSize {
			return h, acks, 0, decodeError(end-1, nil, "acks", ErrAckTrailer)
		}
		end -= trailer
		acks.raw = b[end : len(b)-1]
	}
	num := b[HeaderSize:end]
	var expanded [4]byte
	if h.Flags.ZeroCoded() {
		switch {
		case num[0] != 0 && num[0] != 0xFF:
			// A High number reads the same coded or not.
		case len(num) >= 5 && num[0] == 0xFF && num[1] == 0xFF && num[2] == 0 && num[3] == 1 && num[4] != 0:
			// A Low number below 256, the usual zero-coded case: FF FF 00 01 NN.
			h.ID = MessageID{Low, uint32(num[4])}
			return h, acks, end, nil
		default:
			num = expanded[:peekZeroCoded(&expanded, num)]
		}
	}
	id, _, ok := parseMessageNumber(num)
	if !ok {
		return h, acks, 0, decodeError(HeaderSize+len(num), nil, "message number", ErrTruncated)
	}
	h.ID = id
	return h, acks, end, nil
}

// parseMessageNumber reads a message number (protocol.md §2.3): High NN,
// Medium FF NN, Low FF FF NNNN (big-endian). A Low number whose high byte is
// FF is reported as Fixed with the template's 32-bit value, as PacketAck's
// FF FF FF FB is 0xFFFFFFFB.
func parseMessageNumber(b []byte) (id MessageID, n int, ok bool) {
	switch {
	case len(b) >= 1 && b[0] != 0xFF:
		return MessageID{High, uint32(b[0])}, 1, true
	case len(b) >= 2 && b[1] != 0xFF:
		return MessageID{Medium, uint32(b[1])}, 2, true
	case len(b) >= 4:
		num := uint32(binary.BigEndian.Uint16(b[2:4]))
		if num >= 0xFF00 {
			return MessageID{Fixed, 0xFFFF0000 | num}, 4, true
		}
		return MessageID{Low, num}, 4, true
	}
	return id, 0, false
}

// appendMessageNumber appends id in its wire form.
func appendMessageNumber(b []byte, id MessageID) []byte {
	switch id.Frequency {
	case High:
		return append(b, byte(id.Number))
	case Medium:
		return append(b, 0xFF, byte(id.Number))
	}
	return binary.BigEndian.AppendUint16(append(b, 0xFF, 0xFF), uint16(id.Number))
}

// peekZeroCoded expands the first bytes of zero-coded src into dst, enough
// for a message number. It is ZeroDecode cut short, kept separate because
// this runs for every datagram; FuzzPeekZeroCoded holds the two equal.
func peekZeroCoded(dst *[4]byte, src []byte) int {
	o := 0
	for i := 0; i < len(src) && o < len(dst); i++ {
		if src[i] != 0 {
			dst[o] = src[i]
			o++
			continue
		}
		zeros := 1
		for i+1 < len(src) && src[i+1] == 0 {
			zeros += 256
			i++
		}
		if i+1 < len(src) {
			i++
			zeros += int(src[i]) - 1
		}
		for ; zeros > 0 && o < len(dst); zeros-- {
			dst[o] = 0
			o++
		}
	}
	return o
}

// AppendMessageNumber appends a message number in its wire form: one byte
// for High, FF NN for Medium, FF FF NNNN (big-endian) for Low and Fixed.
func AppendMessageNumber(b []byte, id MessageID) []byte { return appendMessageNumber(b, id) }

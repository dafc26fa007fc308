package lludp

import "encoding/binary"

// AppendPacket appends a datagram (protocol.md §2.7, send order): the
// header, then payload — message number, extra-header bytes and body —
// then the acks.
//
// With FlagZeroCoded in h.Flags the payload is zero-coded, but the coded
// form is kept only when it is strictly shorter, as the viewer does (viewer
// zero_code: net_gain < 0); otherwise it goes uncoded with the flag cleared.
// The acks are appended big-endian after coding, with their count byte and
// FlagAcks; FlagAcks is cleared when there are none. At most MaxAppendedAcks
// are appended: the caller sends any others in a later datagram.
func AppendPacket(b []byte, h Header, payload []byte, acks []uint32) []byte {
	start := len(b)
	b = append(b, make([]byte, HeaderSize)...)
	b = append(b, payload...)
	return finishPacket(b, start, h, acks)
}

// finishPacket writes the header of the datagram at b[start:], whose
// uncoded payload follows the header space, zero-codes the payload if asked
// and it shrinks, and appends the acks.
func finishPacket(b []byte, start int, h Header, acks []uint32) []byte {
	flags := h.Flags &^ (FlagAcks | FlagZeroCoded)
	if h.Flags.ZeroCoded() {
		payloadStart := start + HeaderSize
		end := len(b)
		b = AppendZeroEncode(b, b[payloadStart:end])
		if coded := len(b) - end; coded < end-payloadStart {
			copy(b[payloadStart:], b[end:])
			b = b[:payloadStart+coded]
			flags |= FlagZeroCoded
		} else {
			b = b[:end]
		}
	}
	acks = acks[:min(len(acks), MaxAppendedAcks)]
	if len(acks) > 0 {
		flags |= FlagAcks
		for _, a := range acks {
			b = binary.BigEndian.AppendUint32(b, a)
		}
		b = append(b, byte(len(acks)))
	}
	b[start] = byte(flags)
	binary.BigEndian.PutUint32(b[start+1:], h.Sequence)
	b[start+5] = h.Extra
	return b
}

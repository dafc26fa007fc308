package lludp

import (
	"errors"
	"slices"
)

// AppendReplacedThrottles appends datagram, an AgentThrottle, with its seven
// Throttles replaced by throttles (bits per second by Category), and returns
// the extended dst. A proxy in the viewer's path uses it to put fairgrid's
// request into the viewer's own AgentThrottle (protocol.md §10, §13): the
// simulator then acks and orders it exactly as the viewer's, because
// everything else is kept as sent — the sequence number, the reliable,
// resent and acks flags, the appended ack trailer byte for byte, the
// message number's wire form, any extra header, AgentID, SessionID,
// CircuitCode, GenCounter and bytes past the Throttles field.
//
// A zero-coded datagram is expanded, changed and coded again, so its length
// may change; like AppendPacket (and the viewer), the coded form is kept
// only when it is shorter than the uncoded one, else the flag is cleared.
//
// The layout comes from AgentThrottle's own field list, the one that
// Packet.Unmarshal and AppendMessage use. A datagram that is not a
// well-formed AgentThrottle — another message, a truncated body, a
// Throttles field of other than ThrottlesSize bytes, zero-coding that
// expands past MaxPacketSize — is an error wrapping ErrWrongMessage,
// ErrTruncated, ErrFieldSize or ErrZeroCodeOverflow, and dst is returned
// unchanged. ParseHeader's ID tells cheaply whether a datagram is an
// AgentThrottle at all. The throttles are written as given: clamping them
// is the caller's decision.
//
// dst must not overlap datagram: a relay keeps one buffer per direction
// and appends into it. It allocates only when dst lacks capacity for the
// expanded datagram (at most MaxPacketSize bytes) and its coded form.
func AppendReplacedThrottles(dst, datagram []byte, throttles [NumCategories]float32) ([]byte, error) {
	out, _, err := AppendSwappedThrottles(dst, datagram, throttles)
	return out, err
}

// AppendSwappedThrottles is AppendReplacedThrottles that also returns the
// throttles the datagram carried: what the viewer asked for, which a proxy
// that rewrites it must keep (the viewer's request is its limit).
func AppendSwappedThrottles(dst, datagram []byte, throttles [NumCategories]float32) (out []byte, was [NumCategories]float32, err error) {
	h, _, end, err := ParseHeader(datagram)
	if err != nil {
		return dst, was, err
	}
	if h.ID != AgentThrottleID {
		return dst, was, decodeError(HeaderSize, nil, "message number", ErrWrongMessage)
	}
	start := len(dst)
	out, err = appendExpanded(dst, datagram[:end], h.Flags.ZeroCoded())
	if err != nil {
		return dst, was, err
	}
	payload := out[start+HeaderSize:]
	_, numLen, ok := parseMessageNumber(payload)
	bodyOff := numLen + int(h.Extra)
	if !ok || bodyOff > len(payload) {
		return dst, was, decodeError(HeaderSize+len(payload), nil, "extra header", ErrTruncated)
	}
	body := payload[bodyOff:]

	var m AgentThrottle
	dec := codec{dec: true, buf: body}
	m.code(&dec)
	if dec.err != nil {
		return dst, was, decodeError(HeaderSize+bodyOff+dec.off, nil, "AgentThrottle", dec.err)
	}
	if m.ThrottlesLen != ThrottlesSize {
		return dst, was, decodeError(HeaderSize+bodyOff+dec.off-m.ThrottlesLen, nil, "AgentThrottle.Throttles", ErrFieldSize)
	}
	was = m.Throttles
	// Encoding the same fields gives the same dec.off bytes, so appending to
	// body[:0] overwrites them in place and leaves any trailing bytes.
	m.Throttles = throttles
	enc := codec{buf: body[:0]}
	m.code(&enc)

	// The ack trailer is copied as it came, so finishPacket sees none.
	out = finishPacket(out, start, Header{Flags: h.Flags &^ FlagAcks, Sequence: h.Sequence, Extra: h.Extra}, nil)
	out = append(out, datagram[end:]...)
	out[start] |= byte(h.Flags & FlagAcks)
	return out, was, nil
}

// appendExpanded appends the header of msg (a datagram without its acks)
// and its payload, zero-expanded when coded, expanding into dst's spare
// capacity first and growing it only if that is too small.
func appendExpanded(dst, msg []byte, coded bool) ([]byte, error) {
	dst = append(dst, msg[:HeaderSize]...)
	if !coded {
		return append(dst, msg[HeaderSize:]...), nil
	}
	const limit = MaxPacketSize - HeaderSize // as Packet's buffer
	room := dst[len(dst):cap(dst)]
	room = room[:min(len(room), limit)]
	n, err := ZeroDecode(room, msg[HeaderSize:])
	if errors.Is(err, ErrZeroCodeOverflow) && len(room) < limit {
		dst = slices.Grow(dst, limit)
		n, err = ZeroDecode(dst[len(dst):len(dst)+limit], msg[HeaderSize:])
	}
	if err != nil {
		return dst[:len(dst)-HeaderSize], decodeError(HeaderSize+n, nil, "zero-coding", err)
	}
	return dst[:len(dst)+n], nil
}

package lludp

import (
	"errors"
	"fmt"
)

// Sentinel errors. Decoders return them wrapped in a *DecodeError, so that
// callers count failures by errors.Is and tools print where it broke.
var (
	// ErrTruncated: the datagram ends inside the header, the message number,
	// the extra header or a fixed-size field.
	ErrTruncated = errors.New("truncated")
	// ErrUnknownMessage: the message number is not in the template.
	ErrUnknownMessage = errors.New("unknown message number")
	// ErrZeroCodeOverflow: zero-decoding would pass MaxPacketSize.
	ErrZeroCodeOverflow = errors.New("zero-coded data expands past 8192 bytes")
	// ErrAckTrailer: the appended-ack count claims more bytes than the
	// datagram has beyond its 7-byte minimum.
	ErrAckTrailer = errors.New("appended ack count longer than the packet")
	// ErrVariableLength: a Variable field's length runs past the end.
	ErrVariableLength = errors.New("variable field length past the end")
	// ErrMissingBlock: the datagram ends before a Single or Multiple block.
	ErrMissingBlock = errors.New("missing block")
	// ErrWrongMessage: a typed decoder was given another message.
	ErrWrongMessage = errors.New("wrong message")
	// ErrFieldSize: an encoder was given a field value too long for its
	// length prefix, or a fixed field of the wrong size.
	ErrFieldSize = errors.New("field value does not fit")
)

// DecodeError says which part of a datagram failed to decode and where.
// Offset counts bytes into the datagram after the appended acks are
// stripped and the zero-coding is expanded (the 6-byte header included).
type DecodeError struct {
	Offset  int
	Message string // empty until the message number is known
	Field   string // "header", "acks", "message number", or Block.Field
	Err     error
}

func (e *DecodeError) Error() string {
	where := e.Field
	if e.Message != "" {
		where = e.Message + "." + e.Field
	}
	return fmt.Sprintf("decode %s at offset %d: %v", where, e.Offset, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

func decodeError(off int, msg *Message, field string, err error) *DecodeError {
	e := &DecodeError{Offset: off, Field: field, Err: err}
	if msg != nil {
		e.Message = msg.Name
	}
	return e
}

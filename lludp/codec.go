package lludp

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
)

// Typed is a message with a Go struct of its own (messages.go). Its code
// method lists the fields once, in wire order, and serves both directions:
// Packet.Unmarshal reads them and AppendMessage writes them.
type Typed interface {
	MessageID() MessageID
	code(c *codec)
}

// codec reads (dec) or appends (enc) fields in wire order. Reading copies
// Variable fields into the struct's own slices, reusing their capacity, so
// a struct decoded again and again stops allocating.
type codec struct {
	dec bool
	buf []byte // dec: the body; enc: the output
	off int    // dec: read position
	err error
}

func (c *codec) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

// take returns the next n bytes to read, or nil after recording an error.
func (c *codec) take(n int) []byte {
	if c.err != nil {
		return nil
	}
	if n > len(c.buf)-c.off {
		c.fail(fmt.Errorf("at body offset %d: %w", c.off, ErrTruncated))
		return nil
	}
	c.off += n
	return c.buf[c.off-n : c.off]
}

func (c *codec) u8(v *uint8) {
	if !c.dec {
		c.buf = append(c.buf, *v)
	} else if b := c.take(1); b != nil {
		*v = b[0]
	}
}

func (c *codec) s8(v *int8) {
	x := uint8(*v)
	c.u8(&x)
	*v = int8(x)
}

func (c *codec) boolean(v *bool) {
	if !c.dec {
		var x byte
		if *v {
			x = 1
		}
		c.buf = append(c.buf, x)
	} else if b := c.take(1); b != nil {
		*v = b[0] != 0
	}
}

func (c *codec) u16(v *uint16) {
	if !c.dec {
		c.buf = binary.LittleEndian.AppendUint16(c.buf, *v)
	} else if b := c.take(2); b != nil {
		*v = binary.LittleEndian.Uint16(b)
	}
}

func (c *codec) u32(v *uint32) {
	if !c.dec {
		c.buf = binary.LittleEndian.AppendUint32(c.buf, *v)
	} else if b := c.take(4); b != nil {
		*v = binary.LittleEndian.Uint32(b)
	}
}

func (c *codec) s32(v *int32) {
	x := uint32(*v)
	c.u32(&x)
	*v = int32(x)
}

func (c *codec) u64(v *uint64) {
	if !c.dec {
		c.buf = binary.LittleEndian.AppendUint64(c.buf, *v)
	} else if b := c.take(8); b != nil {
		*v = binary.LittleEndian.Uint64(b)
	}
}

func (c *codec) f32(v *float32) {
	x := math.Float32bits(*v)
	c.u32(&x)
	*v = math.Float32frombits(x)
}

func (c *codec) f32s(v []float32) {
	for i := range v {
		c.f32(&v[i])
	}
}

func (c *codec) uuid(v *UUID) { c.fixed(v[:]) }

// fixed reads or writes exactly len(v) raw bytes.
func (c *codec) fixed(v []byte) {
	if !c.dec {
		c.buf = append(c.buf, v...)
	} else if b := c.take(len(v)); b != nil {
		copy(v, b)
	}
}

// variable reads or writes a Variable field with a 1- or 2-byte
// (little-endian) length prefix.
func (c *codec) variable(v *[]byte, prefix int) {
	if !c.dec {
		var err error
		if c.buf, err = appendVariable(c.buf, prefix, *v); err != nil {
			c.fail(err)
		}
		return
	}
	b := c.take(prefix)
	if b == nil {
		return
	}
	n := int(b[0])
	if prefix == 2 {
		n = int(binary.LittleEndian.Uint16(b))
	}
	if data := c.take(n); data != nil || n == 0 {
		*v = append((*v)[:0], data...)
	}
}

// count reads or writes the instance count of a Variable block. A block
// missing at the end of the body has 0 instances (protocol.md §5.4).
func (c *codec) count(n int) int {
	if !c.dec {
		if n > 255 {
			c.fail(fmt.Errorf("%d instances in a Variable block, at most 255: %w", n, ErrFieldSize))
			n = 255
		}
		c.buf = append(c.buf, byte(n))
		return n
	}
	if c.err != nil || c.off == len(c.buf) {
		return 0
	}
	c.off++
	return int(c.buf[c.off-1])
}

// resize returns s with length n, reusing its capacity (and so the
// capacity of slices inside reused elements).
func resize[T any](s []T, n int) []T {
	if n <= cap(s) {
		return s[:n]
	}
	return append(s[:cap(s)], make([]T, n-cap(s))...)
}

// Unmarshal reads the decoded packet into the typed message m. The packet
// must hold m's message (else ErrWrongMessage).
func (p *Packet) Unmarshal(m Typed) error {
	if p.msg == nil || p.msg.ID != m.MessageID() {
		got := "nothing"
		if p.msg != nil {
			got = p.msg.Name
		}
		return fmt.Errorf("unmarshal %T from %s: %w", m, got, ErrWrongMessage)
	}
	c := getCodec(true, p.Body())
	defer codecs.Put(c)
	m.code(c)
	if c.err != nil {
		return fmt.Errorf("unmarshal %s: %w", p.msg.Name, c.err)
	}
	return nil
}

// codecs recycles codecs: a codec passed through the Typed interface
// escapes, and pooling keeps the hot paths free of allocation.
var codecs = sync.Pool{New: func() any { return new(codec) }}

func getCodec(dec bool, buf []byte) *codec {
	c := codecs.Get().(*codec)
	*c = codec{dec: dec, buf: buf}
	return c
}

// AppendMessage appends a whole datagram for the typed message m (see
// AppendPacket for the zero-coding rule and the acks). It allocates only
// when b lacks capacity.
func AppendMessage(b []byte, h Header, m Typed, acks []uint32) ([]byte, error) {
	start := len(b)
	b = append(b, make([]byte, HeaderSize)...)
	b = appendMessageNumber(b, m.MessageID())
	c := getCodec(false, b)
	defer codecs.Put(c)
	m.code(c)
	if c.err != nil {
		return c.buf[:start], fmt.Errorf("append %T: %w", m, c.err)
	}
	return finishPacket(c.buf, start, h, acks), nil
}

package lludp

import (
	"encoding/binary"
	"math"
	"net/netip"
)

// Value is one field decoded to its Go value without boxing it in an
// interface (Values.Field returns it): Type says which accessor applies,
// and the others return zero.
// A Fixed or Variable value aliases the Packet's datagram, as the Packet's
// own view does, so it is valid only while that Packet is unchanged.
type Value struct {
	Type FieldType
	// words hold the decoded number: an integer (signed ones sign-extended),
	// the bits of a float, two F32 components per word (the first in the
	// low half), one F64 component per word, or a UUID's bytes big-endian.
	words [3]uint64
	bytes []byte // Fixed and Variable
}

// Uint returns a U8, U16, U32, U64 or IPPORT value.
func (v Value) Uint() uint64 {
	switch v.Type {
	case TypeU8, TypeU16, TypeU32, TypeU64, TypeIPPort:
		return v.words[0]
	}
	return 0
}

// Int returns an S8, S16, S32 or S64 value.
func (v Value) Int() int64 {
	switch v.Type {
	case TypeS8, TypeS16, TypeS32, TypeS64:
		return int64(v.words[0])
	}
	return 0
}

// Float returns an F32 (exactly, widened) or F64 value.
func (v Value) Float() float64 {
	switch v.Type {
	case TypeF32:
		return float64(math.Float32frombits(uint32(v.words[0])))
	case TypeF64:
		return math.Float64frombits(v.words[0])
	}
	return 0
}

// Bool returns a BOOL value: any non-zero byte is true.
func (v Value) Bool() bool { return v.Type == TypeBool && v.words[0] != 0 }

// f32 returns the i-th F32 component of a vector or quaternion.
func (v Value) f32(i int) float32 {
	return math.Float32frombits(uint32(v.words[i/2] >> (32 * (i % 2))))
}

// Vector3 returns an LLVector3 value.
func (v Value) Vector3() Vector3 {
	if v.Type != TypeVector3 {
		return Vector3{}
	}
	return Vector3{v.f32(0), v.f32(1), v.f32(2)}
}

// Vector3d returns an LLVector3d value.
func (v Value) Vector3d() Vector3d {
	if v.Type != TypeVector3d {
		return Vector3d{}
	}
	w := v.words
	return Vector3d{math.Float64frombits(w[0]), math.Float64frombits(w[1]), math.Float64frombits(w[2])}
}

// Vector4 returns an LLVector4 value.
func (v Value) Vector4() Vector4 {
	if v.Type != TypeVector4 {
		return Vector4{}
	}
	return Vector4{v.f32(0), v.f32(1), v.f32(2), v.f32(3)}
}

// Quaternion returns an LLQuaternion value as sent (W reconstructs w).
func (v Value) Quaternion() Quaternion {
	if v.Type != TypeQuaternion {
		return Quaternion{}
	}
	return Quaternion{v.f32(0), v.f32(1), v.f32(2)}
}

// UUID returns an LLUUID value.
func (v Value) UUID() UUID {
	var u UUID
	if v.Type == TypeUUID {
		binary.BigEndian.PutUint64(u[:8], v.words[0])
		binary.BigEndian.PutUint64(u[8:], v.words[1])
	}
	return u
}

// Addr returns an IPADDR value; the zero Addr for any other type.
func (v Value) Addr() netip.Addr {
	if v.Type != TypeIPAddr {
		return netip.Addr{}
	}
	var a [4]byte
	binary.BigEndian.PutUint32(a[:], uint32(v.words[0]))
	return netip.AddrFrom4(a)
}

// Bytes returns a Fixed or Variable value (without its length prefix),
// aliasing the datagram.
func (v Value) Bytes() []byte { return v.bytes }

// Any returns the value as Packet.Decode gives it (see Decoded), copying
// Fixed and Variable bytes.
func (v Value) Any() any {
	switch v.Type {
	case TypeU8:
		return uint8(v.words[0])
	case TypeU16:
		return uint16(v.words[0])
	case TypeU32:
		return uint32(v.words[0])
	case TypeU64:
		return v.words[0]
	case TypeS8:
		return int8(v.words[0])
	case TypeS16:
		return int16(v.words[0])
	case TypeS32:
		return int32(v.words[0])
	case TypeS64:
		return int64(v.words[0])
	case TypeF32:
		return math.Float32frombits(uint32(v.words[0]))
	case TypeF64:
		return math.Float64frombits(v.words[0])
	case TypeVector3:
		return v.Vector3()
	case TypeVector3d:
		return v.Vector3d()
	case TypeVector4:
		return v.Vector4()
	case TypeQuaternion:
		return v.Quaternion()
	case TypeUUID:
		return v.UUID()
	case TypeBool:
		return v.Bool()
	case TypeIPAddr:
		return v.Addr()
	case TypeIPPort:
		return uint16(v.words[0])
	}
	return append([]byte(nil), v.bytes...)
}

// Values is a datagram with every field decoded into typed storage that is
// reused from one datagram to the next: once it has grown to the largest
// message seen, Packet.DecodeValues allocates nothing. Like Packet.Decode
// it decodes every field of every block, but it neither boxes values nor
// copies bytes, so it is the full decode for hot paths; Fixed and Variable
// values alias the Packet, which must stay unchanged while they are used.
type Values struct {
	Header
	Acks    []uint32
	Message *Message
	data    []byte      // the Packet's datagram, which Fixed and Variable slots index
	blocks  []blockSpan // first indexes slots
	slots   []slot
}

// slot is a Value as stored: without a pointer, so that filling a slice of
// them needs no write barrier and the collector never scans it. A Fixed or
// Variable slot holds its offset and length in data.
type slot struct {
	typ        FieldType
	w0, w1, w2 uint64
}

// DecodeValues decodes every field of the decoded packet into dst,
// replacing what dst held. After a failed decode dst holds the header and
// no message.
func (p *Packet) DecodeValues(dst *Values) {
	dst.Header = p.Header
	dst.Acks = dst.Acks[:0]
	if p.Acks.Len() > 0 {
		dst.Acks = p.Acks.AppendTo(dst.Acks)
	}
	if !p.decoded {
		dst.Message, dst.data = nil, nil
		dst.blocks, dst.slots = dst.blocks[:0], dst.slots[:0]
		return
	}
	dst.Message, dst.data = p.msg, p.data
	dst.blocks = append(dst.blocks[:0], p.blocks...)
	data, spans := p.data, p.fields
	dst.slots = resize(dst.slots, len(spans))
	slots := dst.slots
	le, be := binary.LittleEndian, binary.BigEndian
	for bi, span := range p.blocks {
		fields := p.msg.Blocks[bi].Fields
		i := int(span.first)
		for range span.count {
			for fi := range fields {
				sp := spans[i]
				b := data[sp.off : int(sp.off)+int(sp.n)]
				t := fields[fi].Type
				var w0, w1, w2 uint64
				switch t {
				case TypeU8, TypeBool:
					w0 = uint64(b[0])
				case TypeU16:
					w0 = uint64(le.Uint16(b))
				case TypeU32, TypeF32:
					w0 = uint64(le.Uint32(b))
				case TypeU64, TypeF64, TypeS64:
					w0 = le.Uint64(b)
				case TypeS8:
					w0 = uint64(int64(int8(b[0])))
				case TypeS16:
					w0 = uint64(int64(int16(le.Uint16(b))))
				case TypeS32:
					w0 = uint64(int64(int32(le.Uint32(b))))
				case TypeVector3, TypeQuaternion:
					w0, w1 = le.Uint64(b), uint64(le.Uint32(b[8:]))
				case TypeVector4:
					w0, w1 = le.Uint64(b), le.Uint64(b[8:])
				case TypeVector3d:
					w0, w1, w2 = le.Uint64(b), le.Uint64(b[8:]), le.Uint64(b[16:])
				case TypeUUID:
					w0, w1 = be.Uint64(b), be.Uint64(b[8:])
				case TypeIPAddr:
					w0 = uint64(be.Uint32(b))
				case TypeIPPort:
					w0 = uint64(be.Uint16(b))
				default: // Fixed, Variable
					w0, w1 = uint64(sp.off), uint64(sp.n)
				}
				slots[i] = slot{t, w0, w1, w2}
				i++
			}
		}
	}
}

// complete reports whether the packet holds a whole decoded message: walk
// stops at the first error, leaving blocks and fields short.
func (p *Packet) complete() bool { return p.decoded }

// Count returns the number of instances of block bi, or 0 if there is no
// such block.
func (v *Values) Count(bi int) int {
	if uint(bi) >= uint(len(v.blocks)) {
		return 0
	}
	return int(v.blocks[bi].count)
}

// Field returns field fi of instance inst of block bi, and false if there
// is no such field.
func (v *Values) Field(bi, inst, fi int) (Value, bool) {
	if uint(bi) >= uint(len(v.blocks)) {
		return Value{}, false
	}
	nf := len(v.Message.Blocks[bi].Fields)
	span := v.blocks[bi]
	if uint(inst) >= uint(span.count) || uint(fi) >= uint(nf) {
		return Value{}, false
	}
	sl := v.slots[int(span.first)+inst*nf+fi]
	val := Value{Type: sl.typ, words: [3]uint64{sl.w0, sl.w1, sl.w2}}
	if sl.typ == TypeFixed || sl.typ == TypeVariable {
		val.words = [3]uint64{}
		val.bytes = v.data[sl.w0 : sl.w0+sl.w1]
	}
	return val, true
}

package lludp

import (
	"encoding/binary"
	"math"
	"net/netip"
)

// Value is one field decoded to its Go value without boxing it in an
// interface: Type says which accessor applies, and the others return zero.
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

// decode sets v to the value of a field of type t from its wire bytes: b
// has the type's wire size (Packet.walk checked it), or any size for Fixed
// and Variable. It works in place, sparing DecodeValues a copy per field.
func (v *Value) decode(t FieldType, b []byte) {
	le, be := binary.LittleEndian, binary.BigEndian
	var w0, w1, w2 uint64
	var bytes []byte
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
		bytes = b
	}
	v.Type, v.words, v.bytes = t, [3]uint64{w0, w1, w2}, bytes
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
	blocks  []blockSpan // first indexes values
	values  []Value
}

// DecodeValues decodes every field of the decoded packet into dst,
// replacing what dst held. After a failed decode dst holds the header and
// no message.
func (p *Packet) DecodeValues(dst *Values) {
	dst.Header, dst.Message = p.Header, nil
	dst.Acks = p.Acks.AppendTo(dst.Acks[:0])
	dst.blocks, dst.values = dst.blocks[:0], dst.values[:0]
	if !p.complete() {
		return
	}
	dst.Message = p.msg
	dst.blocks = append(dst.blocks, p.blocks...)
	data, spans := p.data, p.fields
	dst.values = resize(dst.values, len(spans))
	values := dst.values
	for bi, span := range p.blocks {
		fields := p.msg.Blocks[bi].Fields
		i := int(span.first)
		for range span.count {
			for fi := range fields {
				s := spans[i]
				values[i].decode(fields[fi].Type, data[s.off:int(s.off)+int(s.n)])
				i++
			}
		}
	}
}

// complete reports whether the packet holds a whole decoded message: walk
// stops at the first error, leaving blocks and fields short.
func (p *Packet) complete() bool {
	if p.msg == nil || len(p.blocks) != len(p.msg.Blocks) {
		return false
	}
	if len(p.blocks) == 0 {
		return true
	}
	last := p.blocks[len(p.blocks)-1]
	return int(last.first)+int(last.count)*len(p.msg.Blocks[len(p.blocks)-1].Fields) == len(p.fields)
}

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
	return v.values[int(span.first)+inst*nf+fi], true
}

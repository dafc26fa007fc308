package lludp

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/netip"
)

// UUID is an LLUUID: 16 bytes in textual order on the wire.
type UUID [16]byte

// String returns the canonical lowercase 8-4-4-4-12 form.
func (u UUID) String() string {
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	return string(b[:])
}

// IsZero reports whether u is the null UUID.
func (u UUID) IsZero() bool { return u == UUID{} }

// ParseUUID parses the 8-4-4-4-12 form (either case) or 32 hex digits.
func ParseUUID(s string) (UUID, error) {
	var u UUID
	var digits []byte
	switch len(s) {
	case 36:
		if s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
			return u, fmt.Errorf("parse uuid %q: misplaced hyphen", s)
		}
		digits = []byte(s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:])
	case 32:
		digits = []byte(s)
	default:
		return u, fmt.Errorf("parse uuid %q: want 36 or 32 characters", s)
	}
	if _, err := hex.Decode(u[:], digits); err != nil {
		return u, fmt.Errorf("parse uuid %q: %w", s, err)
	}
	return u, nil
}

// Vector3 is an LLVector3: x, y, z as little-endian F32.
type Vector3 [3]float32

// Vector3d is an LLVector3d: x, y, z as little-endian F64.
type Vector3d [3]float64

// Vector4 is an LLVector4.
type Vector4 [4]float32

// Quaternion is an LLQuaternion as sent: x, y, z of a normalised quaternion
// with w ≥ 0 (viewer llquaternion.cpp packToVector3).
type Quaternion [3]float32

// W reconstructs the fourth component, sqrt(max(0, 1 − x² − y² − z²)).
func (q Quaternion) W() float32 {
	return float32(math.Sqrt(math.Max(0, 1-float64(q[0])*float64(q[0])-float64(q[1])*float64(q[1])-float64(q[2])*float64(q[2]))))
}

// DecodedBlock is one block with its instances; each instance holds one Go
// value per field of the template block, in template order.
type DecodedBlock struct {
	Name      string
	Instances [][]any
}

// Decoded is a datagram decoded to Go values, for tools. Field values have
// these Go types: U8…S64, F32, F64 as the same-sized Go numbers; Vector3,
// Vector3d, Vector4, Quaternion, UUID as above; BOOL bool (any non-zero byte
// is true); IPADDR netip.Addr; IPPORT uint16 (big-endian on the wire); Fixed
// and Variable []byte (without the length prefix).
type Decoded struct {
	Header
	Acks    []uint32
	Message *Message
	Blocks  []DecodedBlock
}

// Decode copies the decoded datagram out into Go values; the result shares
// nothing with p. It allocates, and is meant for tools, not hot paths.
func (p *Packet) Decode() *Decoded {
	d := &Decoded{Header: p.Header, Acks: p.Acks.AppendTo(nil), Message: p.msg}
	for bi := range p.msg.Blocks {
		blk := &p.msg.Blocks[bi]
		db := DecodedBlock{Name: blk.Name, Instances: make([][]any, p.Count(bi))}
		for inst := range db.Instances {
			vals := make([]any, len(blk.Fields))
			for fi := range blk.Fields {
				vals[fi] = fieldValue(blk.Fields[fi].Type, p.Field(bi, inst, fi))
			}
			db.Instances[inst] = vals
		}
		d.Blocks = append(d.Blocks, db)
	}
	return d
}

func f32(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }
func f64(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) }

// fieldValue converts a field's raw bytes to its Go value.
func fieldValue(t FieldType, b []byte) any {
	le := binary.LittleEndian
	switch t {
	case TypeU8:
		return b[0]
	case TypeU16:
		return le.Uint16(b)
	case TypeU32:
		return le.Uint32(b)
	case TypeU64:
		return le.Uint64(b)
	case TypeS8:
		return int8(b[0])
	case TypeS16:
		return int16(le.Uint16(b))
	case TypeS32:
		return int32(le.Uint32(b))
	case TypeS64:
		return int64(le.Uint64(b))
	case TypeF32:
		return f32(b)
	case TypeF64:
		return f64(b)
	case TypeVector3:
		return Vector3{f32(b), f32(b[4:]), f32(b[8:])}
	case TypeVector3d:
		return Vector3d{f64(b), f64(b[8:]), f64(b[16:])}
	case TypeVector4:
		return Vector4{f32(b), f32(b[4:]), f32(b[8:]), f32(b[12:])}
	case TypeQuaternion:
		return Quaternion{f32(b), f32(b[4:]), f32(b[8:])}
	case TypeUUID:
		return UUID(b)
	case TypeBool:
		return b[0] != 0
	case TypeIPAddr:
		return netip.AddrFrom4([4]byte(b))
	case TypeIPPort:
		return binary.BigEndian.Uint16(b)
	}
	return append([]byte(nil), b...) // Fixed, Variable
}

var errValueType = errors.New("value has the wrong Go type for its field")

// appendFieldValue appends v as field f in wire form.
func appendFieldValue(b []byte, f *Field, v any) ([]byte, error) {
	le := binary.LittleEndian
	ok := true
	switch f.Type {
	case TypeU8:
		x, k := v.(uint8)
		b, ok = append(b, x), k
	case TypeU16:
		x, k := v.(uint16)
		b, ok = le.AppendUint16(b, x), k
	case TypeU32:
		x, k := v.(uint32)
		b, ok = le.AppendUint32(b, x), k
	case TypeU64:
		x, k := v.(uint64)
		b, ok = le.AppendUint64(b, x), k
	case TypeS8:
		x, k := v.(int8)
		b, ok = append(b, byte(x)), k
	case TypeS16:
		x, k := v.(int16)
		b, ok = le.AppendUint16(b, uint16(x)), k
	case TypeS32:
		x, k := v.(int32)
		b, ok = le.AppendUint32(b, uint32(x)), k
	case TypeS64:
		x, k := v.(int64)
		b, ok = le.AppendUint64(b, uint64(x)), k
	case TypeF32:
		x, k := v.(float32)
		b, ok = appendF32(b, x), k
	case TypeF64:
		x, k := v.(float64)
		b, ok = le.AppendUint64(b, math.Float64bits(x)), k
	case TypeVector3:
		x, k := v.(Vector3)
		b, ok = appendF32(b, x[:]...), k
	case TypeVector3d:
		x, k := v.(Vector3d)
		for _, c := range x {
			b = le.AppendUint64(b, math.Float64bits(c))
		}
		ok = k
	case TypeVector4:
		x, k := v.(Vector4)
		b, ok = appendF32(b, x[:]...), k
	case TypeQuaternion:
		x, k := v.(Quaternion)
		b, ok = appendF32(b, x[:]...), k
	case TypeUUID:
		x, k := v.(UUID)
		b, ok = append(b, x[:]...), k
	case TypeBool:
		x, k := v.(bool)
		var c byte
		if x {
			c = 1
		}
		b, ok = append(b, c), k
	case TypeIPAddr:
		x, k := v.(netip.Addr)
		ok = k && x.Is4()
		if ok {
			a := x.As4()
			b = append(b, a[:]...)
		}
	case TypeIPPort:
		x, k := v.(uint16)
		b, ok = binary.BigEndian.AppendUint16(b, x), k
	case TypeFixed:
		x, k := v.([]byte)
		if k && len(x) != f.Size {
			return b, fmt.Errorf("field %s: %d bytes, want %d: %w", f.Name, len(x), f.Size, ErrFieldSize)
		}
		b, ok = append(b, x...), k
	case TypeVariable:
		x, k := v.([]byte)
		if !k {
			ok = false
			break
		}
		var err error
		if b, err = appendVariable(b, f.Size, x); err != nil {
			return b, fmt.Errorf("field %s: %w", f.Name, err)
		}
	}
	if !ok {
		return b, fmt.Errorf("field %s (%s): %T: %w", f.Name, f.Type, v, errValueType)
	}
	return b, nil
}

func appendF32(b []byte, xs ...float32) []byte {
	for _, x := range xs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// appendVariable appends a Variable field: a 1- or 2-byte (little-endian)
// length prefix, then the bytes.
func appendVariable(b []byte, prefix int, x []byte) ([]byte, error) {
	if prefix == 1 {
		if len(x) > 0xFF {
			return b, fmt.Errorf("%d bytes after a 1-byte length: %w", len(x), ErrFieldSize)
		}
		return append(append(b, byte(len(x))), x...), nil
	}
	if len(x) > 0xFFFF {
		return b, fmt.Errorf("%d bytes after a 2-byte length: %w", len(x), ErrFieldSize)
	}
	return append(binary.LittleEndian.AppendUint16(b, uint16(len(x))), x...), nil
}

// AppendBody appends the wire form of blocks as message msg's body: counts
// for Variable blocks, then each field. blocks must follow msg.Blocks; a
// trailing Variable block may be omitted and is then written with count 0.
func AppendBody(b []byte, msg *Message, blocks []DecodedBlock) ([]byte, error) {
	if len(blocks) > len(msg.Blocks) {
		return b, fmt.Errorf("%s: %d blocks, template has %d: %w", msg.Name, len(blocks), len(msg.Blocks), errValueType)
	}
	for bi := range msg.Blocks {
		blk := &msg.Blocks[bi]
		var insts [][]any
		if bi < len(blocks) {
			insts = blocks[bi].Instances
		}
		switch blk.Kind {
		case Variable:
			if len(insts) > 255 {
				return b, fmt.Errorf("%s.%s: %d instances, at most 255: %w", msg.Name, blk.Name, len(insts), ErrFieldSize)
			}
			b = append(b, byte(len(insts)))
		default:
			if len(insts) != blk.Count {
				return b, fmt.Errorf("%s.%s: %d instances, want %d: %w", msg.Name, blk.Name, len(insts), blk.Count, ErrMissingBlock)
			}
		}
		for _, vals := range insts {
			if len(vals) != len(blk.Fields) {
				return b, fmt.Errorf("%s.%s: %d values, want %d: %w", msg.Name, blk.Name, len(vals), len(blk.Fields), errValueType)
			}
			for fi := range blk.Fields {
				var err error
				if b, err = appendFieldValue(b, &blk.Fields[fi], vals[fi]); err != nil {
					return b, fmt.Errorf("%s.%s.%w", msg.Name, blk.Name, err)
				}
			}
		}
	}
	return b, nil
}

// AppendTo appends d as a datagram (see AppendPacket for the zero-coding
// rule and the acks).
func (d *Decoded) AppendTo(b []byte) ([]byte, error) {
	var payload []byte
	payload = appendMessageNumber(payload, d.Message.ID)
	for range d.Extra {
		payload = append(payload, 0)
	}
	payload, err := AppendBody(payload, d.Message, d.Blocks)
	if err != nil {
		return b, err
	}
	return AppendPacket(b, d.Header, payload, d.Acks), nil
}

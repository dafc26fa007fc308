package lludp

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends d as one JSON object (the `fairgrid decode --format
// json` schema, documented in the README):
//
//	{"flags":{"zerocoded":…,"reliable":…,"resent":…,"acks":…},"sequence":N,
//	 "acks":[N…],"message":"Name","number":N,"frequency":"High|Medium|Low|Fixed",
//	 "blocks":{"Block":[{"Field":value,…},…]}}
//
// Blocks and fields keep template order. Values: LLUUID as the canonical
// string; vectors as arrays; LLQuaternion as [x,y,z,w] with w reconstructed;
// U64 and S64 as numbers below 2^53, else strings; IPADDR dotted; BOOL
// true/false; Fixed and Variable as lowercase hex; NaN and infinite floats as
// "NaN", "Infinity" and "-Infinity".
func (d *Decoded) AppendJSON(b []byte) []byte {
	f := d.Flags
	b = append(b, `{"flags":{"zerocoded":`...)
	b = strconv.AppendBool(b, f.ZeroCoded())
	b = append(b, `,"reliable":`...)
	b = strconv.AppendBool(b, f.Reliable())
	b = append(b, `,"resent":`...)
	b = strconv.AppendBool(b, f.Resent())
	b = append(b, `,"acks":`...)
	b = strconv.AppendBool(b, f.HasAcks())
	b = append(b, `},"sequence":`...)
	b = strconv.AppendUint(b, uint64(d.Sequence), 10)
	b = append(b, `,"acks":[`...)
	for i, a := range d.Acks {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(a), 10)
	}
	b = append(b, `],"message":`...)
	b = appendJSONString(b, d.Message.Name)
	b = append(b, `,"number":`...)
	b = strconv.AppendUint(b, uint64(d.Message.ID.Number), 10)
	b = append(b, `,"frequency":"`...)
	b = append(b, d.Message.ID.Frequency.String()...)
	b = append(b, `","blocks":{`...)
	for bi, blk := range d.Blocks {
		if bi > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, blk.Name)
		b = append(b, ":["...)
		fields := d.Message.Blocks[bi].Fields
		for i, vals := range blk.Instances {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			for fi, v := range vals {
				if fi > 0 {
					b = append(b, ',')
				}
				b = appendJSONString(b, fields[fi].Name)
				b = append(b, ':')
				b = appendJSONValue(b, v)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, "}}"...)
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}

const maxExactInt = 1 << 53 // JSON readers hold numbers as float64

func appendJSONValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case uint8:
		return strconv.AppendUint(b, uint64(x), 10)
	case uint16:
		return strconv.AppendUint(b, uint64(x), 10)
	case uint32:
		return strconv.AppendUint(b, uint64(x), 10)
	case uint64:
		if x < maxExactInt {
			return strconv.AppendUint(b, x, 10)
		}
		return strconv.AppendQuote(b, strconv.FormatUint(x, 10))
	case int8:
		return strconv.AppendInt(b, int64(x), 10)
	case int16:
		return strconv.AppendInt(b, int64(x), 10)
	case int32:
		return strconv.AppendInt(b, int64(x), 10)
	case int64:
		if x > -maxExactInt && x < maxExactInt {
			return strconv.AppendInt(b, x, 10)
		}
		return strconv.AppendQuote(b, strconv.FormatInt(x, 10))
	case float32:
		return appendJSONFloat(b, float64(x), 32)
	case float64:
		return appendJSONFloat(b, x, 64)
	case Vector3:
		return appendJSONFloats(b, 32, float64(x[0]), float64(x[1]), float64(x[2]))
	case Vector3d:
		return appendJSONFloats(b, 64, x[0], x[1], x[2])
	case Vector4:
		return appendJSONFloats(b, 32, float64(x[0]), float64(x[1]), float64(x[2]), float64(x[3]))
	case Quaternion:
		return appendJSONFloats(b, 32, float64(x[0]), float64(x[1]), float64(x[2]), float64(x.W()))
	case UUID:
		return append(append(append(b, '"'), x.String()...), '"')
	case bool:
		return strconv.AppendBool(b, x)
	case netip.Addr:
		return append(append(append(b, '"'), x.String()...), '"')
	case []byte:
		b = append(b, '"')
		b = hex.AppendEncode(b, x)
		return append(b, '"')
	}
	return append(b, "null"...)
}

func appendJSONFloat(b []byte, x float64, bits int) []byte {
	switch {
	case math.IsNaN(x):
		return append(b, `"NaN"`...)
	case math.IsInf(x, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(x, -1):
		return append(b, `"-Infinity"`...)
	}
	return strconv.AppendFloat(b, x, 'g', -1, bits)
}

func appendJSONFloats(b []byte, bits int, xs ...float64) []byte {
	b = append(b, '[')
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONFloat(b, x, bits)
	}
	return append(b, ']')
}

// AppendText appends d as a readable tree: a header line, then each block
// instance with its fields, one per line. Variable fields that hold text
// are shown as quoted strings, others as hex.
func (d *Decoded) AppendText(b []byte) []byte {
	b = append(b, d.Message.Name...)
	b = append(b, " ("...)
	b = append(b, d.Message.ID.String()...)
	b = append(b, ") seq "...)
	b = strconv.AppendUint(b, uint64(d.Sequence), 10)
	b = append(b, " flags "...)
	b = append(b, d.Flags.String()...)
	if len(d.Acks) > 0 {
		b = append(b, " acks"...)
		for _, a := range d.Acks {
			b = append(b, ' ')
			b = strconv.AppendUint(b, uint64(a), 10)
		}
	}
	b = append(b, '\n')
	for bi, blk := range d.Blocks {
		fields := d.Message.Blocks[bi].Fields
		if len(blk.Instances) == 0 {
			b = append(b, "  "...)
			b = append(b, blk.Name...)
			b = append(b, " (none)\n"...)
		}
		for i, vals := range blk.Instances {
			b = append(b, "  "...)
			b = append(b, blk.Name...)
			if len(blk.Instances) > 1 || d.Message.Blocks[bi].Kind != Single {
				b = append(b, '[')
				b = strconv.AppendInt(b, int64(i), 10)
				b = append(b, ']')
			}
			b = append(b, '\n')
			for fi, v := range vals {
				b = append(b, "    "...)
				b = append(b, fields[fi].Name...)
				b = append(b, ": "...)
				b = appendTextValue(b, v)
				b = append(b, '\n')
			}
		}
	}
	return b
}

func appendTextValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case UUID:
		return append(b, x.String()...)
	case netip.Addr:
		return append(b, x.String()...)
	}
	if x, ok := v.([]byte); ok {
		if s, ok := printableText(x); ok {
			return strconv.AppendQuote(b, s)
		}
		if len(x) == 0 {
			return append(b, "(empty)"...)
		}
		return hex.AppendEncode(b, x)
	}
	return appendJSONValue(b, v)
}

// printableText reports whether x is UTF-8 text, as template strings are,
// with at most one trailing NUL (the viewer sends C strings).
func printableText(x []byte) (string, bool) {
	if len(x) > 0 && x[len(x)-1] == 0 {
		x = x[:len(x)-1]
	}
	if len(x) == 0 || !utf8.Valid(x) {
		return "", false
	}
	for _, r := range string(x) {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7F {
			return "", false
		}
	}
	return string(x), true
}

// AppendJSON appends the decoded packet as one JSON object, byte for byte
// as Decoded.AppendJSON does, straight from the datagram's bytes: it boxes
// nothing and, once b has the capacity, allocates nothing. After a failed
// decode it appends nothing.
func (p *Packet) AppendJSON(b []byte) []byte {
	if !p.complete() {
		return b
	}
	keys := p.msg.json
	if keys == nil { // a Message not indexed by NewTemplate
		keys = newJSONKeys(p.msg)
	}
	b = append(b, flagsJSON[p.Flags>>4]...)
	b = strconv.AppendUint(b, uint64(p.Sequence), 10)
	b = append(b, `,"acks":[`...)
	for i := range p.Acks.Len() {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(p.Acks.At(i)), 10)
	}
	b = append(b, `],"message":`...)
	b = append(b, keys.head...)
	for bi, span := range p.blocks {
		fields := p.msg.Blocks[bi].Fields
		fieldKeys := keys.fields[bi]
		b = append(b, keys.blocks[bi]...)
		i := int(span.first)
		for inst := range int(span.count) {
			if inst > 0 {
				b = append(b, ',')
			}
			for fi := range fields {
				b = append(b, fieldKeys[fi]...)
				s := p.fields[i]
				b = appendFieldJSON(b, fields[fi].Type, p.data[s.off:int(s.off)+int(s.n)])
				i++
			}
			if len(fields) == 0 {
				b = append(b, '{')
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, "}}"...)
}

// flagsJSON is the start of a JSON object for each combination of the four
// flags (the high nibble), up to the sequence number.
var flagsJSON = func() (t [16]string) {
	for i := range t {
		f := Flags(i << 4)
		t[i] = `{"flags":{"zerocoded":` + strconv.FormatBool(f.ZeroCoded()) + `,"reliable":` + strconv.FormatBool(f.Reliable()) +
			`,"resent":` + strconv.FormatBool(f.Resent()) + `,"acks":` + strconv.FormatBool(f.HasAcks()) + `},"sequence":`
	}
	return t
}()

// jsonKeys are a message's names rendered once as the JSON that precedes
// each value, so that rendering a datagram copies them.
type jsonKeys struct {
	head   string     // the message's name, number and frequency up to its blocks
	blocks []string   // `"Block":[`, after a comma from the second block on
	fields [][]string // per block: `{"Field":` for the first field, `,"Field":` after
}

func newJSONKeys(m *Message) *jsonKeys {
	k := &jsonKeys{
		head: string(appendJSONName(nil, m.Name)) + `,"number":` + strconv.FormatUint(uint64(m.ID.Number), 10) +
			`,"frequency":"` + m.ID.Frequency.String() + `","blocks":{`,
		blocks: make([]string, len(m.Blocks)),
		fields: make([][]string, len(m.Blocks)),
	}
	for bi := range m.Blocks {
		blk := &m.Blocks[bi]
		sep := ","
		if bi == 0 {
			sep = ""
		}
		k.blocks[bi] = sep + string(appendJSONName(nil, blk.Name)) + ":["
		k.fields[bi] = make([]string, len(blk.Fields))
		for fi := range blk.Fields {
			sep := ","
			if fi == 0 {
				sep = "{"
			}
			k.fields[bi][fi] = sep + string(appendJSONName(nil, blk.Fields[fi].Name)) + ":"
		}
	}
	return k
}

// AppendText appends the decoded packet as Decoded.AppendText does,
// straight from the datagram's bytes. After a failed decode it appends
// nothing.
func (p *Packet) AppendText(b []byte) []byte {
	if !p.complete() {
		return b
	}
	b = append(b, p.msg.Name...)
	b = append(b, " ("...)
	b = appendMessageID(b, p.msg.ID)
	b = append(b, ") seq "...)
	b = strconv.AppendUint(b, uint64(p.Sequence), 10)
	b = append(b, " flags "...)
	b = appendFlags(b, p.Flags)
	if p.Acks.Len() > 0 {
		b = append(b, " acks"...)
		for i := range p.Acks.Len() {
			b = append(b, ' ')
			b = strconv.AppendUint(b, uint64(p.Acks.At(i)), 10)
		}
	}
	b = append(b, '\n')
	for bi, span := range p.blocks {
		blk := &p.msg.Blocks[bi]
		if span.count == 0 {
			b = append(b, "  "...)
			b = append(b, blk.Name...)
			b = append(b, " (none)\n"...)
		}
		i := int(span.first)
		for inst := range int(span.count) {
			b = append(b, "  "...)
			b = append(b, blk.Name...)
			if span.count > 1 || blk.Kind != Single {
				b = append(b, '[')
				b = strconv.AppendInt(b, int64(inst), 10)
				b = append(b, ']')
			}
			b = append(b, '\n')
			for fi := range blk.Fields {
				f := &blk.Fields[fi]
				b = append(b, "    "...)
				b = append(b, f.Name...)
				b = append(b, ": "...)
				s := p.fields[i]
				b = appendFieldText(b, f.Type, p.data[s.off:int(s.off)+int(s.n)])
				b = append(b, '\n')
				i++
			}
		}
	}
	return b
}

// appendMessageID appends id.String() without formatting through fmt.
func appendMessageID(b []byte, id MessageID) []byte {
	if id.Frequency == Fixed {
		const digits = "0123456789ABCDEF"
		b = append(b, "Fixed 0x"...)
		for shift := 28; shift >= 0; shift -= 4 {
			b = append(b, digits[id.Number>>shift&0xF])
		}
		return b
	}
	b = append(b, id.Frequency.String()...)
	b = append(b, ' ')
	return strconv.AppendUint(b, uint64(id.Number), 10)
}

// appendFlags appends f.String() without building a slice of names.
func appendFlags(b []byte, f Flags) []byte {
	start := len(b)
	for _, x := range [...]struct {
		f    Flags
		name string
	}{{FlagZeroCoded, "zerocoded"}, {FlagReliable, "reliable"}, {FlagResent, "resent"}, {FlagAcks, "acks"}} {
		if f&x.f != 0 {
			if len(b) > start {
				b = append(b, '|')
			}
			b = append(b, x.name...)
		}
	}
	if len(b) == start {
		b = append(b, "none"...)
	}
	return b
}

// appendJSONName appends s as a JSON string as json.Marshal does. Template
// names are plain ASCII identifiers and are copied as they are; anything
// else goes through encoding/json, which escapes HTML characters too.
func appendJSONName(b []byte, s string) []byte {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c >= 0x7F || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return appendJSONString(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendFieldJSON appends the value of a field of type t, given its wire
// bytes, as appendJSONValue appends its boxed form.
func appendFieldJSON(b []byte, t FieldType, raw []byte) []byte {
	le := binary.LittleEndian
	switch t {
	case TypeU8:
		return strconv.AppendUint(b, uint64(raw[0]), 10)
	case TypeU16:
		return strconv.AppendUint(b, uint64(le.Uint16(raw)), 10)
	case TypeU32:
		return strconv.AppendUint(b, uint64(le.Uint32(raw)), 10)
	case TypeIPPort:
		return strconv.AppendUint(b, uint64(binary.BigEndian.Uint16(raw)), 10)
	case TypeU64:
		w := le.Uint64(raw)
		if w < maxExactInt {
			return strconv.AppendUint(b, w, 10)
		}
		b = append(b, '"')
		return append(strconv.AppendUint(b, w, 10), '"')
	case TypeS8:
		return strconv.AppendInt(b, int64(int8(raw[0])), 10)
	case TypeS16:
		return strconv.AppendInt(b, int64(int16(le.Uint16(raw))), 10)
	case TypeS32:
		return strconv.AppendInt(b, int64(int32(le.Uint32(raw))), 10)
	case TypeS64:
		x := int64(le.Uint64(raw))
		if x > -maxExactInt && x < maxExactInt {
			return strconv.AppendInt(b, x, 10)
		}
		b = append(b, '"')
		return append(strconv.AppendInt(b, x, 10), '"')
	case TypeF32:
		return appendJSONFloat32(b, f32(raw))
	case TypeF64:
		return appendJSONFloat(b, f64(raw), 64)
	case TypeVector3:
		b = append(b, '[')
		b = appendJSONFloat32(b, f32(raw))
		b = append(b, ',')
		b = appendJSONFloat32(b, f32(raw[4:]))
		b = append(b, ',')
		b = appendJSONFloat32(b, f32(raw[8:]))
		return append(b, ']')
	case TypeVector4:
		b = append(b, '[')
		for i := range 4 {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONFloat32(b, f32(raw[4*i:]))
		}
		return append(b, ']')
	case TypeQuaternion:
		q := Quaternion{f32(raw), f32(raw[4:]), f32(raw[8:])}
		b = append(b, '[')
		b = appendJSONFloat32(b, q[0])
		b = append(b, ',')
		b = appendJSONFloat32(b, q[1])
		b = append(b, ',')
		b = appendJSONFloat32(b, q[2])
		b = append(b, ',')
		b = appendJSONFloat32(b, q.W())
		return append(b, ']')
	case TypeVector3d:
		b = append(b, '[')
		for i := range 3 {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONFloat(b, f64(raw[8*i:]), 64)
		}
		return append(b, ']')
	case TypeUUID:
		return appendUUID(b, raw, '"')
	case TypeBool:
		return strconv.AppendBool(b, raw[0] != 0)
	case TypeIPAddr:
		b = append(b, '"')
		return append(appendIPv4(b, raw), '"')
	}
	n := len(b)
	b = slices.Grow(b, 2+hex.EncodedLen(len(raw)))[:n+2+hex.EncodedLen(len(raw))]
	b[n] = '"'
	hex.Encode(b[n+1:], raw)
	b[len(b)-1] = '"'
	return b
}

// appendJSONFloat32 is appendJSONFloat for an F32, with a shortcut for
// whole numbers, which are common in real traffic (0, 1, 128) and which
// strconv formats with 'g' as plain integers below 1e21 … but switches to
// an exponent from 1e6 on, hence the bound.
func appendJSONFloat32(b []byte, x float32) []byte {
	if x > -1e6 && x < 1e6 && x == float32(int32(x)) && (x != 0 || !math.Signbit(float64(x))) {
		return strconv.AppendInt(b, int64(x), 10)
	}
	return appendJSONFloat(b, float64(x), 32)
}

// appendFieldText appends the value of a field of type t, given its wire
// bytes, as appendTextValue appends its boxed form.
func appendFieldText(b []byte, t FieldType, raw []byte) []byte {
	switch t {
	case TypeUUID:
		return appendUUID(b, raw, 0)
	case TypeIPAddr:
		return appendIPv4(b, raw)
	case TypeFixed, TypeVariable:
		return appendTextBytes(b, raw)
	}
	return appendFieldJSON(b, t, raw)
}

// appendTextBytes appends x as quoted text if printableText accepts it,
// else as hex ("(empty)" when there is nothing).
func appendTextBytes(b, x []byte) []byte {
	text := x
	if len(text) > 0 && text[len(text)-1] == 0 {
		text = text[:len(text)-1]
	}
	plain := len(text) > 0
	for _, c := range text {
		if c < 0x20 && c != '\n' && c != '\t' || c >= 0x7F {
			plain = false
			break
		}
	}
	if plain { // printable ASCII: quote it here, as strconv.Quote would
		b = append(b, '"')
		for _, c := range text {
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, `\n`...)
			case '\t':
				b = append(b, `\t`...)
			default:
				b = append(b, c)
			}
		}
		return append(b, '"')
	}
	if s, ok := printableText(x); ok {
		return strconv.AppendQuote(b, s)
	}
	if len(x) == 0 {
		return append(b, "(empty)"...)
	}
	return hex.AppendEncode(b, x)
}

// appendUUID appends the canonical 8-4-4-4-12 form of a UUID's 16 wire
// bytes, between quotes unless quote is 0.
func appendUUID(b, raw []byte, quote byte) []byte {
	const digits = "0123456789abcdef"
	size := 36
	if quote != 0 {
		size += 2
	}
	n := len(b)
	b = slices.Grow(b, size)[:n+size]
	out := b[n:]
	if quote != 0 {
		out[0], out[37] = quote, quote
		out = out[1:37]
	}
	out = out[:36]
	_ = raw[15]
	j := 0
	for i := range 16 {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out[j] = '-'
			j++
		}
		c := raw[i]
		out[j], out[j+1] = digits[c>>4], digits[c&0xF]
		j += 2
	}
	return b
}

// appendIPv4 appends a dotted quad, as netip.Addr.String does for IPv4.
func appendIPv4(b, raw []byte) []byte {
	for i, c := range raw[:4] {
		if i > 0 {
			b = append(b, '.')
		}
		b = strconv.AppendUint(b, uint64(c), 10)
	}
	return b
}

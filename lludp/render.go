package lludp

import (
	"encoding/hex"
	"encoding/json"
	"math"
	"net/netip"
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

package lludp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// captureDatagrams returns the LLUDP payloads (UDP port 9000 on either
// side) of the real ten-minute OpenSim capture, read with a minimal pcap
// reader: the package may import only the standard library.
func captureDatagrams(t testing.TB) [][]byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(realDir(t), "opensim-0922-captures/testclient-2x-10min.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	le, be := binary.LittleEndian, binary.BigEndian
	if len(raw) < 24 || le.Uint32(raw) != 0xa1b2c3d4 || le.Uint32(raw[20:]) != 1 {
		t.Fatal("capture is not a little-endian Ethernet pcap")
	}
	var out [][]byte
	for off := 24; off+16 <= len(raw); {
		n := int(le.Uint32(raw[off+8:]))
		frame := raw[off+16 : min(off+16+n, len(raw))]
		off += 16 + n
		if len(frame) < 14+20+8 || be.Uint16(frame[12:]) != 0x0800 || frame[14+9] != 17 {
			continue
		}
		udp := frame[14+int(frame[14]&0xF)*4:]
		if len(udp) < 8 || be.Uint16(udp) != 9000 && be.Uint16(udp[2:]) != 9000 {
			continue
		}
		out = append(out, udp[8:])
	}
	if len(out) != 24153 {
		t.Fatalf("capture holds %d LLUDP datagrams, SOURCES.md says 24,153", len(out))
	}
	return out
}

// realTraffic is every real datagram: the 86 files of the manifest, the
// peer vectors and the datagrams of the real capture.
func realTraffic(t testing.TB) [][]byte {
	t.Helper()
	dir := realDir(t)
	var all [][]byte
	for _, r := range readManifest(t, dir) {
		raw, err := os.ReadFile(filepath.Join(dir, r.path))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, raw)
	}
	for _, v := range readVectors(t) {
		all = append(all, v.raw)
	}
	return append(all, captureDatagrams(t)...)
}

// checkFastPaths fails t unless the packet's own renderings and typed
// values agree with Decode's boxed values and their renderings.
func checkFastPaths(t testing.TB, p *Packet, vals *Values) {
	t.Helper()
	d := p.Decode()
	if got, want := p.AppendJSON(nil), d.AppendJSON(nil); !bytes.Equal(got, want) {
		t.Fatalf("Packet.AppendJSON differs from Decoded.AppendJSON:\n got %s\nwant %s", got, want)
	}
	if got, want := p.AppendText(nil), d.AppendText(nil); !bytes.Equal(got, want) {
		t.Fatalf("Packet.AppendText differs from Decoded.AppendText:\n got %s\nwant %s", got, want)
	}
	p.DecodeValues(vals)
	if vals.Header != d.Header || vals.Message != d.Message || !slices.Equal(vals.Acks, d.Acks) {
		t.Fatalf("DecodeValues header %+v %v %s, Decode %+v %v %s", vals.Header, vals.Acks, vals.Message.Name, d.Header, d.Acks, d.Message.Name)
	}
	for bi, blk := range d.Blocks {
		if vals.Count(bi) != len(blk.Instances) {
			t.Fatalf("%s: %d instances, Decode has %d", blk.Name, vals.Count(bi), len(blk.Instances))
		}
		for inst, fields := range blk.Instances {
			for fi, want := range fields {
				v, ok := vals.Field(bi, inst, fi)
				if got := v.Any(); !ok || !sameValue(got, want) {
					t.Fatalf("%s[%d] field %d: DecodeValues %#v (%v), Decode %#v", blk.Name, inst, fi, got, ok, want)
				}
			}
		}
	}
	if _, ok := vals.Field(len(d.Blocks), 0, 0); ok {
		t.Fatal("Field past the last block reports a value")
	}
}

// sameValue compares boxed values by type and printed form, which tells
// every float apart (-0 from 0) and finds NaN equal to NaN, unlike
// reflect.DeepEqual.
func sameValue(a, b any) bool {
	return reflect.TypeOf(a) == reflect.TypeOf(b) && fmt.Sprintf("%#v", a) == fmt.Sprintf("%#v", b)
}

// TestFastPathsMatchDecodeOnRealTraffic: on every real datagram, the
// packet's JSON and text, rendered straight from its bytes, equal the
// renderings of Decode's boxed values, and DecodeValues gives the same
// values as Decode.
func TestFastPathsMatchDecodeOnRealTraffic(t *testing.T) {
	var p Packet
	var vals Values
	decoded := 0
	for i, raw := range realTraffic(t) {
		if err := p.DecodeFromBytes(raw); err != nil {
			continue // a decode error is rendered by the caller, not here
		}
		decoded++
		t.Run("", func(t *testing.T) {
			defer func() {
				if t.Failed() {
					t.Logf("datagram %d: %x", i, raw)
				}
			}()
			checkFastPaths(t, &p, &vals)
		})
	}
	if decoded < 24000 {
		t.Errorf("only %d real datagrams decoded", decoded)
	}
}

// allTypes is a template with one message holding every field type, to
// render edge values that real traffic may not carry.
func allTypes(t *testing.T) *Message {
	t.Helper()
	var fields []Field
	for ft := range numFieldTypes {
		size := fieldSizes[ft]
		switch ft {
		case TypeFixed:
			size = 3
		case TypeVariable:
			size = 1
		}
		fields = append(fields, Field{Name: ft.String(), Type: ft, Size: size})
	}
	tmpl, err := NewTemplate("test", []Message{{Name: "AllTypes", ID: MessageID{Low, 1}, Blocks: []Block{
		{Name: "Values", Kind: Variable, Fields: fields, FixedSize: blockFixedSize(fields)},
		{Name: "Strange<Name>", Kind: Single, Count: 1, Fields: []Field{{"Tab\there", TypeU8, 1}}, FixedSize: 1},
		{Name: "NoFields", Kind: Multiple, Count: 2},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return &tmpl.Messages[0]
}

// TestFastPathsRenderEdgeValues: values at the edges of every rendering
// rule come out as Decode renders them, and as the README documents.
func TestFastPathsRenderEdgeValues(t *testing.T) {
	msg := allTypes(t)
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	negZero := float32(math.Copysign(0, -1))
	base := func() []any {
		return []any{uint8(255), uint16(65535), uint32(1 << 31), uint64(1<<53 - 1), int8(-128), int16(-1), int32(math.MinInt32),
			int64(-(1<<53 - 1)), float32(0.1), 0.1, Vector3{1, -2, 0.5}, Vector3d{1e300, -2.5, 3}, Vector4{0, 1, 2, 3},
			Quaternion{0, 0, 0}, UUID{0: 0xAB, 15: 0x01}, true, netip.AddrFrom4([4]byte{10, 0, 0, 255}), uint16(9000),
			[]byte{0, 1, 0xFF}, []byte("hello\x00")}
	}
	for _, tc := range []struct {
		name  string
		set   map[FieldType]any
		wants []string // in the JSON
	}{
		{"typical", nil, []string{`"U64":9007199254740991`, `"S64":-9007199254740991`, `"F32":0.1`, `"LLQuaternion":[0,0,0,1]`,
			`"LLUUID":"ab000000-0000-0000-0000-000000000001"`, `"IPADDR":"10.0.0.255"`, `"Fixed":"0001ff"`, `"Variable":"68656c6c6f00"`,
			`"Strange\u003cName\u003e":[{"Tab\there":7}],"NoFields":[{},{}]}}`}},
		{"inexact 64-bit", map[FieldType]any{TypeU64: uint64(1 << 53), TypeS64: int64(math.MinInt64)},
			[]string{`"U64":"9007199254740992"`, `"S64":"-9223372036854775808"`}},
		{"floats at the rules' edges", map[FieldType]any{TypeF32: negZero, TypeVector3: Vector3{1e6, 999999, -999999}, TypeVector4: Vector4{nan, inf, -inf, 16777216}},
			[]string{`"F32":-0`, `"LLVector3":[1e+06,999999,-999999]`, `"LLVector4":["NaN","Infinity","-Infinity",1.6777216e+07]`}},
		{"F64 specials", map[FieldType]any{TypeF64: math.Inf(-1), TypeVector3d: Vector3d{math.NaN(), 1e21, math.Copysign(0, -1)}},
			[]string{`"F64":"-Infinity"`, `"LLVector3d":["NaN",1e+21,-0]`}},
		{"quaternion near the unit sphere", map[FieldType]any{TypeQuaternion: Quaternion{0.6, 0.8, 0.1}, TypeBool: false},
			[]string{`"LLQuaternion":[0.6,0.8,0.1,0]`, `"BOOL":false`}},
		{"text with quotes and a tab", map[FieldType]any{TypeVariable: []byte("say \"hi\"\\\t\n")}, []string{`"Variable":"7361792022686922`}},
		{"text not ASCII", map[FieldType]any{TypeVariable: []byte("café \u00ad\u2028")}, nil},
		{"text not UTF-8", map[FieldType]any{TypeVariable: []byte{'a', 0xC3}}, nil},
		{"text with a NUL inside", map[FieldType]any{TypeVariable: []byte("a\x00b\x00")}, nil},
		{"only a NUL", map[FieldType]any{TypeVariable: []byte{0}, TypeFixed: []byte{0, 0, 0}}, []string{`"Variable":"00"`}},
		{"empty", map[FieldType]any{TypeVariable: []byte{}}, []string{`"Variable":""`}},
		{"control character", map[FieldType]any{TypeVariable: []byte("bell\x07")}, nil},
		{"DEL", map[FieldType]any{TypeVariable: []byte("x\x7f")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals := base()
			for ft, v := range tc.set {
				vals[ft] = v
			}
			body := appendMessageNumber(nil, msg.ID)
			body, err := AppendBody(body, msg, []DecodedBlock{{Instances: [][]any{vals, vals}}, {Instances: [][]any{{uint8(7)}}}, {Instances: [][]any{{}, {}}}})
			if err != nil {
				t.Fatal(err)
			}
			raw := AppendPacket(nil, Header{Flags: FlagReliable | FlagAcks, Sequence: 42}, body, []uint32{1, 0xFFFFFFFF})
			tmpl, _ := NewTemplate("test", []Message{*msg})
			p := Packet{Template: tmpl}
			if err := p.DecodeFromBytes(raw); err != nil {
				t.Fatal(err)
			}
			var v Values
			checkFastPaths(t, &p, &v)
			js := string(p.AppendJSON(nil))
			for _, want := range tc.wants {
				if !strings.Contains(js, want) {
					t.Errorf("JSON lacks %s:\n%s", want, js)
				}
			}
		})
	}
}

// TestFastPathsAfterFailedDecode: a packet whose decode failed part-way
// renders nothing and gives no values, and never panics.
func TestFastPathsAfterFailedDecode(t *testing.T) {
	msg := allTypes(t)
	tmpl, _ := NewTemplate("test", []Message{*msg})
	body := appendMessageNumber(nil, msg.ID)
	body = append(body, 2) // two instances announced
	body = append(body, make([]byte, 40)...)
	for _, tc := range []struct {
		name string
		raw  []byte
	}{
		{"truncated block", AppendPacket(nil, Header{}, body, nil)},
		{"unknown message", AppendPacket(nil, Header{}, []byte{0xFF, 0xFF, 0x77, 0x77}, nil)},
		{"no message", []byte{0, 0, 0, 0, 1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Packet{Template: tmpl}
			if err := p.DecodeFromBytes(tc.raw); err == nil {
				t.Fatal("decoded")
			}
			var v Values
			p.DecodeValues(&v)
			if v.Message != nil || v.Count(0) != 0 {
				t.Errorf("values after a failed decode: %v, %d instances", v.Message, v.Count(0))
			}
			if _, ok := v.Field(0, 0, 0); ok {
				t.Error("a field after a failed decode")
			}
			if got := p.AppendJSON([]byte("x")); string(got) != "x" {
				t.Errorf("JSON after a failed decode: %q", got)
			}
			if got := p.AppendText(nil); len(got) != 0 {
				t.Errorf("text after a failed decode: %q", got)
			}
		})
	}
}

// TestFastPathsAllocateNothing: a full decode into reused Values and both
// renderings into a reused buffer allocate nothing once warm.
func TestFastPathsAllocateNothing(t *testing.T) {
	var p Packet
	var v Values
	var buf []byte
	all := realTraffic(t)
	i := 0
	step := func() {
		if err := p.DecodeFromBytes(all[i%len(all)]); err != nil {
			t.Fatal(err)
		}
		p.DecodeValues(&v)
		buf = p.AppendJSON(buf[:0])
		buf = p.AppendText(buf[:0])
		i++
	}
	for range all {
		step() // grow everything to the largest datagram
	}
	if n := testing.AllocsPerRun(len(all), step); n != 0 {
		t.Errorf("%v allocations per datagram, want 0", n)
	}
}

// BenchmarkDecodeRealValues is the full decode into Go values on the
// datagrams of BenchmarkDecodeReal, node-metaverse's too (make bench-js):
// header, acks, zero-coding and every field of every block into reused
// typed Values.
func BenchmarkDecodeRealValues(b *testing.B) {
	_, all := benchDatagrams(b)
	var p Packet
	var v Values
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := p.DecodeFromBytes(all[i]); err != nil {
			b.Fatal(err)
		}
		p.DecodeValues(&v)
		if i++; i == len(all) {
			i = 0
		}
	}
}

// BenchmarkDecodeRealBoxed is the same full decode through Packet.Decode,
// which boxes every field: the path the decode command took before
// DecodeValues and Packet.AppendJSON.
func BenchmarkDecodeRealBoxed(b *testing.B) {
	_, all := benchDatagrams(b)
	var p Packet
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := p.DecodeFromBytes(all[i]); err != nil {
			b.Fatal(err)
		}
		_ = p.Decode()
		if i++; i == len(all) {
			i = 0
		}
	}
}

// BenchmarkJSONReal is the per-datagram work of `fairgrid decode --format
// json` on every real datagram, capture included: decode and render one
// JSON line into a reused buffer, straight from the packet ("packet") and
// through Decode's boxed values ("boxed").
func BenchmarkJSONReal(b *testing.B) {
	all := realTraffic(b)
	for _, tc := range []struct {
		name   string
		render func(p *Packet, buf []byte) []byte
	}{
		{"packet", func(p *Packet, buf []byte) []byte { return p.AppendJSON(buf) }},
		{"boxed", func(p *Packet, buf []byte) []byte { return p.Decode().AppendJSON(buf) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var p Packet
			var buf []byte
			b.ReportAllocs()
			i, n := 0, 0
			for b.Loop() {
				if err := p.DecodeFromBytes(all[i]); err != nil {
					b.Fatal(err)
				}
				buf = tc.render(&p, buf[:0])
				n += len(buf)
				if i++; i == len(all) {
					i = 0
				}
			}
			b.ReportMetric(float64(n)/float64(b.N), "B/line")
		})
	}
}

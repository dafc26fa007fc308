package lludp

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func isErr(err, target error) bool { return errors.Is(err, target) }

func TestBuiltinTemplateCounts(t *testing.T) {
	tm := Builtin()
	counts := map[Frequency]int{}
	zerocoded := 0
	for i, m := range tm.Messages {
		counts[m.ID.Frequency]++
		if m.Zerocoded {
			zerocoded++
		}
		if tm.Lookup(m.ID) != &tm.Messages[i] || tm.ByName(m.Name) != &tm.Messages[i] {
			t.Errorf("%s: lookup does not find it", m.Name)
		}
	}
	// protocol.md §5.1: 483 messages, Low 431, Medium 17, High 32, Fixed 3; 189 Zerocoded.
	if len(tm.Messages) != 483 || counts[Low] != 431 || counts[Medium] != 17 || counts[High] != 32 || counts[Fixed] != 3 || zerocoded != 189 {
		t.Errorf("got %d messages %v, %d zerocoded", len(tm.Messages), counts, zerocoded)
	}
}

// TestGeneratedTableIsCurrent fails when template_gen.go no longer matches
// the template it was generated from: run go generate ./lludp.
func TestGeneratedTableIsCurrent(t *testing.T) {
	f, err := os.Open(filepath.Join(realDir(t), "templates/message_template.msg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parsed, err := ParseTemplate(f)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(parsed.Messages, Builtin().Messages) {
		t.Fatal("template_gen.go is stale: run go generate ./lludp")
	}
}

// TestTemplate2007 loads the template of viewer 1.18.1.2 at run time
// (protocol.md §5.4): 472 messages, and RegionHandshake without the blocks
// added since.
func TestTemplate2007(t *testing.T) {
	f, err := os.Open(filepath.Join(realDir(t), "templates/message_template.2007-1.18.1.2.msg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	old, err := ParseTemplate(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(old.Messages) != 472 {
		t.Errorf("%d messages, want 472", len(old.Messages))
	}
	if rh := old.ByName("RegionHandshake"); rh == nil || rh.BlockIndex("RegionInfo3") >= 0 || rh.BlockIndex("RegionInfo2") < 0 {
		t.Errorf("RegionHandshake in 2007: %+v", rh)
	}
	// A 2007 RegionHandshake (without RegionInfo3) decodes with the 2007
	// template, and fails on the missing Single block with the current one.
	rh := &RegionHandshake{SimName: []byte("old\x00")}
	wire, _ := AppendMessage(nil, Header{Flags: FlagReliable}, rh, nil)
	msg := Builtin().ByName("RegionHandshake")
	var p Packet
	if err := p.DecodeFromBytes(wire); err != nil {
		t.Fatal(err)
	}
	cut := len(wire) - (4 + 4 + 1 + 1 + 1 + 1) // RegionInfo3 and the empty RegionInfo4 count
	p.Template = old
	if err := p.DecodeFromBytes(wire[:cut]); err != nil {
		t.Errorf("2007 template: %v", err)
	}
	p.Template = nil
	err = p.DecodeFromBytes(wire[:cut])
	var de *DecodeError
	if !errors.As(err, &de) || !errors.Is(err, ErrMissingBlock) || de.Field != "RegionInfo3" || de.Message != msg.Name {
		t.Errorf("current template on a 2007 packet: %v", err)
	}
}

func TestParseTemplateErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"unknown frequency", "version 2.0\n{ Foo Sometimes 1 NotTrusted Unencoded }", "line 2: message Foo: unknown frequency \"Sometimes\""},
		{"bad number", "{ Foo Low x1 NotTrusted Unencoded }", "line 1: message Foo: bad number \"x1\""},
		{"unknown trust", "{ Foo Low 1 Maybe Unencoded }", "unknown trust \"Maybe\""},
		{"unknown type", "{ Foo Low 1 NotTrusted Unencoded\n { B Single\n { F U128 } } }", "line 3: Foo.B.F: unknown field type \"U128\""},
		{"variable size", "{ Foo Low 1 NotTrusted Unencoded { B Single { F Variable 3 } } }", "bad size \"3\" for Variable"},
		{"multiple count", "{ Foo Low 1 NotTrusted Unencoded { B Multiple 0 { F U8 } } }", "bad repeat count \"0\""},
		{"unterminated", "{ Foo Low 1 NotTrusted Unencoded { B Single { F U8 }", "unexpected end of file, want \"}\""},
		{"duplicate", "{ Foo Low 1 NotTrusted Unencoded }\n{ Bar Low 1 NotTrusted Unencoded }", "duplicate message"},
		{"high range", "{ Foo High 255 NotTrusted Unencoded }", "out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTemplate(strings.NewReader(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestDecodeErrors: hostile datagrams give a sentinel, the failing part and
// the offset into the expanded datagram, never a panic.
func TestDecodeErrors(t *testing.T) {
	ping, _ := AppendMessage(nil, Header{}, &StartPingCheck{PingID: 1}, nil)
	layer, _ := AppendMessage(nil, Header{}, &LayerData{Type: LayerLand, Data: []byte{1, 2, 3, 4}}, nil)
	throttle, _ := AppendMessage(nil, Header{}, &AgentThrottle{}, nil)
	bomb := append([]byte{0x80, 0, 0, 0, 1, 0, 0x01}, bytes.Repeat([]byte{0, 0}, 30)...)
	for _, tc := range []struct {
		name   string
		b      []byte
		err    error
		field  string
		offset int
	}{
		{"empty", nil, ErrTruncated, "header", 0},
		{"six bytes", []byte{0, 0, 0, 0, 1, 0}, ErrTruncated, "header", 6},
		{"medium number cut", []byte{0, 0, 0, 0, 1, 0, 0xFF}, ErrTruncated, "message number", 7},
		{"low number cut", []byte{0, 0, 0, 0, 1, 0, 0xFF, 0xFF, 0}, ErrTruncated, "message number", 9},
		{"unknown high", []byte{0, 0, 0, 0, 1, 0, 0xFE}, ErrUnknownMessage, "message number", 6},
		{"unknown low", []byte{0, 0, 0, 0, 1, 0, 0xFF, 0xFF, 0xAB, 0xCD}, ErrUnknownMessage, "message number", 6},
		{"ack count too long", append(append([]byte{byte(FlagAcks)}, ping[1:]...), 9, 9, 9, 9, 5), ErrAckTrailer, "acks", len(ping) + 4},
		{"acks eat the header", []byte{0x10, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 2}, ErrAckTrailer, "acks", 11},
		{"zero-code bomb", bomb, ErrZeroCodeOverflow, "zero-coding", 7 + 256*0},
		{"ping body cut", ping[:len(ping)-2], ErrTruncated, "PingID.OldestUnacked", 8},
		{"variable past end", layer[:len(layer)-1], ErrVariableLength, "LayerData.Data", 10},
		{"missing single block", layer[:8], ErrMissingBlock, "LayerData", 8},
		{"variable prefix cut", layer[:9], ErrVariableLength, "LayerData.Data", 8},
		{"extra header past end", []byte{0, 0, 0, 0, 1, 9, 0x02, 1}, ErrTruncated, "extra header", 8},
		{"throttle cut in ids", throttle[:30], ErrTruncated, "AgentData.SessionID", 26},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p Packet
			err := p.DecodeFromBytes(tc.b)
			var de *DecodeError
			if !errors.Is(err, tc.err) || !errors.As(err, &de) {
				t.Fatalf("got %v, want %v", err, tc.err)
			}
			if de.Field != tc.field || tc.name != "zero-code bomb" && de.Offset != tc.offset {
				t.Errorf("got field %q offset %d, want %q %d (%v)", de.Field, de.Offset, tc.field, tc.offset, err)
			}
		})
	}
}

// TestMissingTrailingVariableBlock: as in the viewer, a Variable block
// missing at the very end is 0 instances, and extra bytes are ignored.
func TestMissingTrailingVariableBlock(t *testing.T) {
	full, _ := AppendMessage(nil, Header{}, &PacketAck{}, nil) // count byte 0
	var p Packet
	if err := p.DecodeFromBytes(full[:len(full)-1]); err != nil || p.Count(0) != 0 {
		t.Errorf("PacketAck without its count: %v, count %d", err, p.Count(0))
	}
	if err := p.DecodeFromBytes(append(full, 1, 2, 3)); err != nil {
		t.Errorf("trailing bytes: %v", err)
	}
}

func TestZeroCodeEncodeRuns(t *testing.T) {
	// protocol.md §4.2: runs capped at 255.
	for n, want := range map[int]string{1: "0001", 2: "0002", 255: "00ff", 256: "00ff0001", 300: "00ff002d", 511: "00ff00ff0001", 512: "00ff00ff0002"} {
		if got := AppendZeroEncode(nil, make([]byte, n)); !bytes.Equal(got, unhex(want)) {
			t.Errorf("%d zeros: %x, want %s", n, got, want)
		}
	}
	if got := AppendZeroEncode(nil, []byte{1, 0, 2}); !bytes.Equal(got, []byte{1, 0, 1, 2}) {
		t.Errorf("01 00 02: %x", got)
	}
}

// TestZeroCodeKeptOnlyWhenShorter: a Zerocoded message that would not
// shrink goes uncoded with the flag cleared (viewer zero_code).
func TestZeroCodeKeptOnlyWhenShorter(t *testing.T) {
	m := &AgentUpdate{AgentData: AgentData{AgentID: UUID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}}}
	for i := range 16 {
		m.SessionID[i] = byte(i + 1)
	}
	m.CameraCenter = Vector3{1.5, 2.5, 3.5}
	dense, _ := AppendMessage(nil, Header{Flags: FlagZeroCoded}, m, nil)
	if !Flags(dense[0]).ZeroCoded() {
		t.Error("an AgentUpdate full of zero floats should shrink when coded")
	}
	noZeros := &LayerData{Type: 1, Data: bytes.Repeat([]byte{7}, 256)} // no zero bytes but the length
	raw, _ := AppendMessage(nil, Header{Flags: FlagZeroCoded}, noZeros, nil)
	if Flags(raw[0]).ZeroCoded() {
		t.Error("a body that does not shrink must go uncoded")
	}
}

func TestUUIDText(t *testing.T) {
	u := mustUUID("1C8A7767-E37B-422E-AFB3-85093197CAD1")
	if u.String() != "1c8a7767-e37b-422e-afb3-85093197cad1" {
		t.Errorf("String %s", u)
	}
	for _, bad := range []string{"", "1c8a7767e37b422eafb385093197cad", "1c8a7767-e37b-422e-afb3_85093197cad1", "zc8a7767-e37b-422e-afb3-85093197cad1"} {
		if _, err := ParseUUID(bad); err == nil {
			t.Errorf("ParseUUID(%q) accepted", bad)
		}
	}
}

func TestCategories(t *testing.T) {
	tm := Builtin()
	for _, tc := range []struct {
		msg string
		cat Category
	}{
		{"LayerData", Land}, {"ImagePacket", Texture}, {"TransferPacket", Asset},
		{"ObjectUpdate", Task}, {"ImprovedTerseObjectUpdate", Task}, {"PacketAck", Unthrottled},
		{"StartPingCheck", Unthrottled}, {"SimStats", Task}, {"CoarseLocationUpdate", Task},
	} {
		m := tm.ByName(tc.msg)
		if m.Category() != tc.cat {
			t.Errorf("%s: %v, want %v", tc.msg, m.Category(), tc.cat)
		}
	}
	for name := range categoryByMessage {
		if tm.ByName(name) == nil {
			t.Errorf("category table names %s, which the template lacks", name)
		}
	}
	if LayerCategory(LayerWind) != Wind || LayerCategory(LayerCloudExtended) != Cloud || LayerCategory(LayerLandExtended) != Land {
		t.Error("LayerCategory")
	}
}

func TestJSONSchema(t *testing.T) {
	m := &AgentThrottle{AgentData: testAgent, CircuitCode: 5, Throttles: viewerSplit}
	wire, _ := AppendMessage(nil, Header{Flags: FlagReliable | FlagZeroCoded, Sequence: 42}, m, []uint32{7})
	var p Packet
	if err := p.DecodeFromBytes(wire); err != nil {
		t.Fatal(err)
	}
	got := string(p.Decode().AppendJSON(nil))
	want := `{"flags":{"zerocoded":true,"reliable":true,"resent":false,"acks":true},"sequence":42,"acks":[7],"message":"AgentThrottle","number":81,"frequency":"Low","blocks":{"AgentData":[{"AgentID":"11111111-2222-3333-4444-555555555555","SessionID":"66666666-7777-8888-9999-aaaaaaaaaaaa","CircuitCode":5}],"Throttle":[{"GenCounter":0,"Throttles":"0000e14800009b480000784700007847` + `0000bf490000bf4900000c49"}]}}`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	ack, _ := AppendMessage(nil, Header{}, &PacketAck{IDs: []uint32{1}}, nil)
	_ = p.DecodeFromBytes(ack)
	if got := string(p.Decode().AppendJSON(nil)); !strings.Contains(got, `"number":4294967291,"frequency":"Fixed"`) {
		t.Errorf("PacketAck: %s", got)
	}
}

func TestJSONValues(t *testing.T) {
	nan := math.Float32frombits(0x7FC00000)
	for _, tc := range []struct {
		v    any
		want string
	}{
		{uint64(1<<53 - 1), "9007199254740991"}, {uint64(1 << 53), `"9007199254740992"`}, {int64(-1 << 53), `"-9007199254740992"`},
		{nan, `"NaN"`}, {float32(math.Inf(1)), `"Infinity"`}, {math.Inf(-1), `"-Infinity"`},
		{Quaternion{0, 0, 0}, "[0,0,0,1]"}, {Vector3{1.5, -2, 0}, "[1.5,-2,0]"},
		{true, "true"}, {[]byte{0xAB, 1}, `"ab01"`}, {uint16(9000), "9000"}, {int8(-3), "-3"},
	} {
		if got := string(appendJSONValue(nil, tc.v)); got != tc.want {
			t.Errorf("%T %v: %s, want %s", tc.v, tc.v, got, tc.want)
		}
	}
	if got := fieldValue(TypeBool, []byte{2}); got != true {
		t.Error("a BOOL byte other than 0 is true")
	}
}

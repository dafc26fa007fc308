package lludp

import (
	"strings"
	"testing"
)

// FuzzParseTemplate: any text gives a template or an error, never a panic,
// and a template that parses decodes its own messages' encoder output.
func FuzzParseTemplate(f *testing.F) {
	f.Add("version 2.0\n{ Foo Low 1 NotTrusted Zerocoded { B Variable { F Variable 2 } { G LLVector3 } } }")
	f.Add("{ Bar Fixed 0xFFFFFFFA Trusted Unencoded UDPDeprecated { A Multiple 3 { X U8 } } }")
	f.Add("{ Baz High 7 NotTrusted Unencoded }")
	f.Fuzz(func(t *testing.T, src string) {
		tm, err := ParseTemplate(strings.NewReader(src))
		if err != nil {
			return
		}
		var p Packet
		p.Template = tm
		for i := range tm.Messages {
			m := &tm.Messages[i]
			payload := appendMessageNumber(nil, m.ID)
			for _, b := range m.Blocks {
				if b.Kind == Variable {
					payload = append(payload, 0)
				} else {
					for range b.Count * max(b.FixedSize, 0) {
						payload = append(payload, 0)
					}
				}
			}
			if hasVariableInFixedBlock(m) {
				continue
			}
			if err := p.DecodeFromBytes(AppendPacket(nil, Header{}, payload, nil)); err != nil {
				t.Fatalf("%s: its own empty message does not decode: %v", m.Name, err)
			}
		}
	})
}

func hasVariableInFixedBlock(m *Message) bool {
	for _, b := range m.Blocks {
		if b.Kind != Variable && b.FixedSize < 0 {
			return true
		}
	}
	return false
}

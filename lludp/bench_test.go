package lludp

import (
	"os"
	"path/filepath"
	"testing"
)

// benchDatagrams returns real datagrams by name: a LayerData and the
// RegionHandshake from OpenSim, the 2008 zero-coded ObjectUpdate, and every
// real datagram for the mixed benchmark.
func benchDatagrams(b *testing.B) (named map[string][]byte, all [][]byte) {
	dir := realDir(b)
	named = map[string][]byte{}
	for _, r := range readManifest(b, dir) {
		raw, err := os.ReadFile(filepath.Join(dir, r.path))
		if err != nil {
			b.Fatal(err)
		}
		all = append(all, raw)
		if r.message == "LayerData" && named["LayerData"] == nil || r.message == "RegionHandshake" {
			named[r.message] = raw
		}
	}
	for _, v := range readVectors(b) {
		if v.message == "ObjectUpdate" {
			named["ObjectUpdate"] = v.raw
		}
		all = append(all, v.raw)
	}
	return named, all
}

// BenchmarkParseHeader: header, message number and appended acks, the
// per-datagram cost of tracking a circuit.
func BenchmarkParseHeader(b *testing.B) {
	named, _ := benchDatagrams(b)
	throttle, _ := AppendMessage(nil, Header{Flags: FlagZeroCoded | FlagReliable}, &AgentThrottle{Throttles: viewerSplit}, []uint32{1, 2})
	for _, tc := range []struct {
		name string
		b    []byte
	}{{"LayerData", named["LayerData"]}, {"ZerocodedLowWithAcks", throttle}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(tc.b)))
			for b.Loop() {
				if _, _, _, err := ParseHeader(tc.b); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecode: a full decode into a reused Packet.
func BenchmarkDecode(b *testing.B) {
	named, _ := benchDatagrams(b)
	for _, name := range []string{"LayerData", "ObjectUpdate", "RegionHandshake"} {
		raw := named[name]
		b.Run(name, func(b *testing.B) {
			var p Packet
			b.ReportAllocs()
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if err := p.DecodeFromBytes(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeReal decodes every real datagram in turn into the
// Packet's view (header, acks, zero-coding, where each field lies). The
// full decode into values, which is what other decoders do and what make
// bench-js compares with node-metaverse, is BenchmarkDecodeRealValues.
func BenchmarkDecodeReal(b *testing.B) {
	_, all := benchDatagrams(b)
	var p Packet
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := p.DecodeFromBytes(all[i]); err != nil {
			b.Fatal(err)
		}
		if i++; i == len(all) {
			i = 0
		}
	}
}

func BenchmarkUnmarshalAgentThrottle(b *testing.B) {
	wire, _ := AppendMessage(nil, Header{Flags: FlagZeroCoded}, &AgentThrottle{AgentData: testAgent, Throttles: viewerSplit}, nil)
	var p Packet
	var m AgentThrottle
	b.ReportAllocs()
	for b.Loop() {
		if err := p.DecodeFromBytes(wire); err != nil {
			b.Fatal(err)
		}
		if err := p.Unmarshal(&m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendAgentThrottle(b *testing.B) {
	m := &AgentThrottle{AgentData: testAgent, Throttles: viewerSplit}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendMessage(buf[:0], Header{Flags: FlagZeroCoded, Sequence: 7}, m, nil); err != nil {
			b.Fatal(err)
		}
	}
}

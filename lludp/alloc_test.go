package lludp

import (
	"os"
	"path/filepath"
	"testing"
)

// TestHotPathAllocs: the header path allocates nothing, and a full decode
// into a reused Packet allocates nothing once its spans have grown.
func TestHotPathAllocs(t *testing.T) {
	layer, err := os.ReadFile(filepath.Join(realDir(t), "opensim-networking-2017/layer_land/00000018.bin"))
	if err != nil {
		t.Fatal(err)
	}
	var object []byte
	for _, v := range readVectors(t) {
		if v.message == "ObjectUpdate" {
			object = v.raw
		}
	}
	throttle, _ := AppendMessage(nil, Header{Flags: FlagZeroCoded | FlagAcks}, &AgentThrottle{Throttles: viewerSplit}, []uint32{1, 2, 3})
	var p Packet
	var m AgentThrottle
	for name, f := range map[string]func(){
		"ParseHeader": func() { _, _, _, _ = ParseHeader(throttle) },
		"DecodeLayerData": func() {
			if err := p.DecodeFromBytes(layer); err != nil {
				t.Fatal(err)
			}
		},
		"DecodeObjectUpdate": func() {
			if err := p.DecodeFromBytes(object); err != nil {
				t.Fatal(err)
			}
		},
		"UnmarshalAgentThrottle": func() {
			if err := p.DecodeFromBytes(throttle); err != nil {
				t.Fatal(err)
			}
			if err := p.Unmarshal(&m); err != nil {
				t.Fatal(err)
			}
		},
	} {
		f() // grow the reused spans
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations, want 0", name, n)
		}
	}
}

package lludp

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func mustUUID(s string) UUID {
	u, err := ParseUUID(s)
	if err != nil {
		panic(err)
	}
	return u
}

func unhex(s string) []byte {
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		panic(err)
	}
	return b
}

var (
	testAgent   = AgentData{AgentID: mustUUID("11111111-2222-3333-4444-555555555555"), SessionID: mustUUID("66666666-7777-8888-9999-aaaaaaaaaaaa")}
	viewerSplit = [NumCategories]float32{460800, 317440, 63488, 63488, 1564672, 1564672, 573440}
)

// TestAgentThrottleBytes checks the encoder against the byte examples of
// protocol.md §6.3: the viewer's default throttles, uncoded and zero-coded.
func TestAgentThrottleBytes(t *testing.T) {
	m := &AgentThrottle{AgentData: testAgent, CircuitCode: 123456789, Throttles: viewerSplit}
	for _, tc := range []struct {
		name  string
		flags Flags
		want  string
	}{
		{"uncoded", FlagReliable, `40 00 00 00 2a 00 ff ff 00 51 11 11 11 11 22 22 33 33 44 44 55 55 55 55 55 55
			66 66 66 66 77 77 88 88 99 99 aa aa aa aa aa aa 15 cd 5b 07 00 00 00 00 1c
			00 00 e1 48 00 00 9b 48 00 00 78 47 00 00 78 47 00 00 bf 49 00 00 bf 49 00 00 0c 49`},
		{"zerocoded", FlagReliable | FlagZeroCoded, `c0 00 00 00 2a 00 ff ff 00 01 51 11 11 11 11 22 22 33 33 44 44 55 55 55 55 55 55
			66 66 66 66 77 77 88 88 99 99 aa aa aa aa aa aa 15 cd 5b 07 00 04 1c
			00 02 e1 48 00 02 9b 48 00 02 78 47 00 02 78 47 00 02 bf 49 00 02 bf 49 00 02 0c 49`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AppendMessage(nil, Header{Flags: tc.flags, Sequence: 42}, m, nil)
			if err != nil {
				t.Fatal(err)
			}
			if want := unhex(tc.want); !bytes.Equal(got, want) {
				t.Fatalf("got  %x\nwant %x", got, want)
			}
			var p Packet
			var back AgentThrottle
			if err := p.DecodeFromBytes(got); err != nil {
				t.Fatal(err)
			}
			if err := p.Unmarshal(&back); err != nil {
				t.Fatal(err)
			}
			m.ThrottlesLen = ThrottlesSize
			if back != *m {
				t.Errorf("decoded %+v, want %+v", back, *m)
			}
			if back.Total() != 4608000 {
				t.Errorf("total %v bit/s, want 4608000", back.Total())
			}
		})
	}
}

// TestSmallVectors checks byte examples of protocol.md §6.3.
func TestSmallVectors(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    Header
		m    Typed
		acks []uint32
		want string
	}{
		{"PacketAck", Header{Sequence: 7}, &PacketAck{IDs: []uint32{5, 6}}, nil, "00 00000007 00 FFFFFFFB 02 05000000 06000000"},
		{"StartPingCheck", Header{Sequence: 8}, &StartPingCheck{PingID: 3, OldestUnacked: 4}, nil, "00 00000008 00 01 03 04000000"},
		{"CompletePingCheck+acks", Header{Sequence: 9}, &CompletePingCheck{PingID: 3}, []uint32{5, 6}, "10 00000009 00 02 03 00000005 00000006 02"},
		{"CloseCircuit", Header{Sequence: 1}, &CloseCircuit{}, nil, "00 00000001 00 FFFFFFFD"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AppendMessage(nil, tc.h, tc.m, tc.acks)
			if err != nil {
				t.Fatal(err)
			}
			if want := unhex(tc.want); !bytes.Equal(got, want) {
				t.Fatalf("got  %x\nwant %x", got, want)
			}
		})
	}
}

// TestTypedRoundTrip encodes every typed message with non-trivial values,
// decodes it through the template and checks that both the typed and the
// generic paths agree with the encoder.
func TestTypedRoundTrip(t *testing.T) {
	obj := ObjectData{ID: 7, State: 1, FullID: testAgent.AgentID, CRC: 99, PCode: 9, Material: 3, Scale: Vector3{0.5, 0.5, 0.5},
		ObjectData: []byte{1, 2, 3}, ParentID: 0, UpdateFlags: 0x10, PathCurve: 16, ProfileCurve: 1, PathEnd: 0, PathScaleX: 100,
		PathTwist: -3, PathSkew: 2, ProfileHollow: 5, TextureEntry: bytes.Repeat([]byte{0xAB}, 300), Text: []byte("hello\x00"),
		TextColor: [4]byte{1, 2, 3, 4}, Sound: testAgent.SessionID, Gain: 0.5, Radius: 2, JointPivot: Vector3{1, 2, 3}}
	cases := []Typed{
		&PacketAck{IDs: []uint32{1, 2, 0xFFFFFFFF}},
		&CloseCircuit{},
		&StartPingCheck{PingID: 200, OldestUnacked: 1 << 31},
		&CompletePingCheck{PingID: 5},
		&UseCircuitCode{Code: 0xDEADBEEF, SessionID: testAgent.SessionID, AgentID: testAgent.AgentID},
		&CompleteAgentMovement{AgentData: testAgent, CircuitCode: 17},
		&AgentMovementComplete{AgentData: testAgent, Position: Vector3{128, 128, 25}, LookAt: Vector3{1, 0, 0}, RegionHandle: 1099511628032000, Timestamp: 1700000000, ChannelVersion: []byte("fairgrid sim\x00")},
		&AgentUpdate{AgentData: testAgent, BodyRotation: Quaternion{0, 0, 0.7071}, State: 1, CameraCenter: Vector3{1, 2, 3}, CameraAtAxis: Vector3{1, 0, 0}, Far: 128, ControlFlags: 1, Flags: 0},
		&AgentThrottle{AgentData: testAgent, CircuitCode: 5, Throttles: viewerSplit, ThrottlesLen: ThrottlesSize},
		&RegionHandshake{RegionFlags: 1, SimAccess: 13, SimName: []byte("fairgrid\x00"), IsEstateManager: true, WaterHeight: 20, BillableFactor: 1,
			TerrainBase: [4]UUID{testAgent.AgentID}, TerrainStartHeight: [4]float32{1, 2, 3, 4}, RegionID: testAgent.SessionID, CPUClassID: -1, ProductName: []byte("test\x00"),
			RegionInfo4: []RegionInfo4{{RegionFlagsExtended: 1 << 40, RegionProtocols: 3}}},
		&RegionHandshakeReply{AgentData: testAgent, Flags: 3},
		&LayerData{Type: LayerLand, Data: bytes.Repeat([]byte{1, 0, 2}, 100)},
		&ObjectUpdate{RegionHandle: 42, TimeDilation: 65535, Objects: []ObjectData{obj, obj}},
		&ImprovedTerseObjectUpdate{RegionHandle: 42, Objects: []TerseObjectData{{Data: bytes.Repeat([]byte{7}, 60)}, {Data: []byte{1}, TextureEntry: []byte{2, 3}}}},
		&ImageData{ID: testAgent.AgentID, Codec: 2, Size: 100000, Packets: 100, Data: bytes.Repeat([]byte{9}, 600)},
		&ImagePacket{ID: testAgent.AgentID, Packet: 3, Data: bytes.Repeat([]byte{8}, 1000)},
		&TransferPacket{TransferID: testAgent.AgentID, ChannelType: 2, Packet: 1, Status: 0, Data: bytes.Repeat([]byte{6}, 1000)},
		&CoarseLocationUpdate{Locations: []CoarseLocation{{1, 2, 3}, {4, 5, 6}}, You: 0, Prey: -1, AgentIDs: []UUID{testAgent.AgentID, testAgent.SessionID}},
		&LogoutRequest{AgentData: testAgent},
	}
	var p Packet
	for _, m := range cases {
		msg := Builtin().Lookup(m.MessageID())
		t.Run(msg.Name, func(t *testing.T) {
			flags := FlagReliable
			if msg.Zerocoded {
				flags |= FlagZeroCoded
			}
			wire, err := AppendMessage(nil, Header{Flags: flags, Sequence: 1000}, m, []uint32{3, 4})
			if err != nil {
				t.Fatal(err)
			}
			if err := p.DecodeFromBytes(wire); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if p.Message() != msg {
				t.Fatalf("decoded as %s", p.Message().Name)
			}
			back := reflect.New(reflect.TypeOf(m).Elem()).Interface().(Typed)
			if err := p.Unmarshal(back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, m) {
				t.Errorf("typed round trip:\n got %+v\nwant %+v", back, m)
			}
			generic, err := p.Decode().AppendTo(nil)
			if err != nil || !bytes.Equal(generic, wire) {
				t.Errorf("generic re-encode differs (%v):\n got %x\nwant %x", err, generic, wire)
			}
		})
	}
}

// TestTypedIDsMatchTemplate guards the typed layouts: every typed message's
// number names the template entry of the same name.
func TestTypedIDsMatchTemplate(t *testing.T) {
	for name, id := range map[string]MessageID{
		"PacketAck": PacketAckID, "CloseCircuit": CloseCircuitID, "StartPingCheck": StartPingCheckID,
		"CompletePingCheck": CompletePingCheckID, "AgentUpdate": AgentUpdateID, "ImageData": ImageDataID,
		"ImagePacket": ImagePacketID, "LayerData": LayerDataID, "ObjectUpdate": ObjectUpdateID,
		"ImprovedTerseObjectUpdate": ImprovedTerseObjectUpdateID, "TransferPacket": TransferPacketID,
		"CoarseLocationUpdate": CoarseLocationUpdateID, "UseCircuitCode": UseCircuitCodeID,
		"AgentThrottle": AgentThrottleID, "RegionHandshake": RegionHandshakeID,
		"RegionHandshakeReply": RegionHandshakeReplyID, "CompleteAgentMovement": CompleteAgentMovementID,
		"AgentMovementComplete": AgentMovementCompleteID, "LogoutRequest": LogoutRequestID,
	} {
		if m := Builtin().ByName(name); m == nil || m.ID != id {
			t.Errorf("%s: template has %v, typed ID is %v", name, m, id)
		}
	}
}

// TestTypedRealDatagrams decodes real OpenSim datagrams through the typed
// structs and re-encodes them byte for byte.
func TestTypedRealDatagrams(t *testing.T) {
	dir := realDir(t)
	var p Packet
	for _, r := range readManifest(t, dir) {
		var m Typed
		switch r.message {
		case "LayerData":
			m = &LayerData{}
		case "RegionHandshake":
			m = &RegionHandshake{}
		default:
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, r.path))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.DecodeFromBytes(raw); err != nil {
			t.Fatal(err)
		}
		if err := p.Unmarshal(m); err != nil {
			t.Fatalf("%s: %v", r.path, err)
		}
		again, err := AppendMessage(nil, p.Header, m, p.Acks.AppendTo(nil))
		if err != nil || !bytes.Equal(again, raw) {
			t.Errorf("%s: typed re-encode differs (%v)", r.path, err)
		}
		if ld, ok := m.(*LayerData); ok && LayerCategory(ld.Type) != Land && LayerCategory(ld.Type) != Wind {
			t.Errorf("%s: layer type %#x", r.path, ld.Type)
		}
		if rh, ok := m.(*RegionHandshake); ok && string(rh.SimName) != "testland\x00" {
			t.Errorf("SimName %q", rh.SimName)
		}
	}
}

func TestUnmarshalWrongMessage(t *testing.T) {
	wire, _ := AppendMessage(nil, Header{}, &StartPingCheck{}, nil)
	var p Packet
	if err := p.DecodeFromBytes(wire); err != nil {
		t.Fatal(err)
	}
	if err := p.Unmarshal(&AgentThrottle{}); !isErr(err, ErrWrongMessage) {
		t.Errorf("got %v, want ErrWrongMessage", err)
	}
}

// TestShortThrottles: an AgentThrottle whose Throttles field is shorter or
// longer than 28 bytes still decodes, and says how long it was.
func TestShortThrottles(t *testing.T) {
	for _, n := range []int{0, 3, 12, 28, 40} {
		body := append(append([]byte{}, testAgent.AgentID[:]...), testAgent.SessionID[:]...)
		body = append(body, 0, 0, 0, 0, 0, 0, 0, 0, byte(n))
		for i := range n {
			body = append(body, byte(i))
		}
		wire := AppendPacket(nil, Header{}, append([]byte{0xFF, 0xFF, 0, 81}, body...), nil)
		var p Packet
		var m AgentThrottle
		if err := p.DecodeFromBytes(wire); err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if err := p.Unmarshal(&m); err != nil || m.ThrottlesLen != n {
			t.Errorf("%d bytes: len %d, %v", n, m.ThrottlesLen, err)
		}
	}
}

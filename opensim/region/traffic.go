package region

import (
	"fmt"
	"strings"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim"
)

// Activity is what the simulated avatar is doing; it sets the load the
// region offers each channel.
//
// The first five are load models: producers refill a channel's queue
// whenever it runs short, up to the channel's offered rate, as OpenSim's
// HandleQueueEmpty does (protocol.md §8.5), so the scheduler's buckets, not
// the model, set the pace when the load exceeds the throttle.
//
// The workloads after them (Terrain, Objects, Avatars, Textures; workload.go)
// are application-limited: each offers a fixed schedule of packets, named
// after what a region sends, whatever the throttle; what the scheduler's
// queue cannot hold is refused and counted. Demand states each one's mean.
type Activity uint8

const (
	Standing Activity = iota
	Walking
	Flying // into a busy region: every channel loaded
	LoginBurst
	Idle // nothing but pings and acks: lets resends finish
	// Terrain: LayerData patches resent after edits, a burst every 2 s.
	Terrain
	// Objects: ObjectUpdates in a burst on arrival, then a trickle.
	Objects
	// Avatars: terse updates of Config.Avatars moving avatars at 10 Hz.
	Avatars
	// Textures: ImagePackets over UDP, as old viewers fetch textures.
	Textures
)

var activityNames = [...]string{"standing", "walking", "flying", "login", "idle", "terrain", "objects", "avatars", "textures"}

func (a Activity) String() string {
	if int(a) < len(activityNames) {
		return activityNames[a]
	}
	return fmt.Sprintf("Activity(%d)", a)
}

// ParseActivity reads an activity name.
func ParseActivity(s string) (Activity, error) {
	for i, n := range activityNames {
		if n == s {
			return Activity(i), nil
		}
	}
	return 0, fmt.Errorf("unknown activity %q: want %s", s, ActivityNames())
}

// ActivityNames lists every activity ParseActivity reads, for help and
// error texts, from the one list they are parsed by.
func ActivityNames() string {
	last := len(activityNames) - 1
	return strings.Join(activityNames[:last], ", ") + " or " + activityNames[last]
}

// channelLoad is the offered load of one channel: bytes/s in packets of
// Size bytes.
type channelLoad struct {
	Rate int64
	Size int
}

// Packet sizes (bytes of payload), with their sources:
//   - terse avatar updates: ImprovedTerseObjectUpdate with one 60-byte
//     record, ~80 B (the record is 60 bytes for avatars, LLClientView.cs);
//   - object updates: hand-built batches up to MAXPAYLOAD = 1200 B
//     (LLUDPServer.cs);
//   - textures: 1000 B per ImagePacket (J2KImage.cs);
//   - terrain: LayerData of a patch group, ~1000 B (the real OpenSim
//     datagrams in ../shared: 1,014–1,069 B);
//   - assets: TransferPacket of 1000 B of data (libomv/OpenSim chunking).
var loads = [...][opensim.NumChannels]channelLoad{
	Standing: {
		opensim.Avatar:  {Rate: 2_000, Size: 80},   // a few avatars at 10 Hz
		opensim.Task:    {Rate: 2_000, Size: 1200}, // occasional object changes
		opensim.Texture: {},
		opensim.Layer:   {},
		opensim.Asset:   {},
	},
	Walking: {
		opensim.Avatar:  {Rate: 8_000, Size: 80},
		opensim.Task:    {Rate: 40_000, Size: 1200},
		opensim.Texture: {Rate: 60_000, Size: 1000},
		opensim.Layer:   {Rate: 5_000, Size: 1000},
		opensim.Asset:   {Rate: 5_000, Size: 1000},
	},
	Flying: {
		opensim.Avatar:  {Rate: 20_000, Size: 80},
		opensim.Task:    {Rate: 300_000, Size: 1200},
		opensim.Texture: {Rate: 400_000, Size: 1000},
		opensim.Layer:   {Rate: 60_000, Size: 1000},
		opensim.Asset:   {Rate: 60_000, Size: 1000},
	},
	LoginBurst: {
		opensim.Avatar:  {Rate: 10_000, Size: 80},
		opensim.Task:    {Rate: 500_000, Size: 1200},
		opensim.Texture: {Rate: 500_000, Size: 1000},
		opensim.Layer:   {Rate: 120_000, Size: 1000},
		opensim.Asset:   {Rate: 100_000, Size: 1000},
	},
	Idle: {},
}

// message builds the channel's next payload (message number and body,
// uncoded) and its flags.
func message(ch opensim.Channel, size int, n uint32, buf []byte) ([]byte, lludp.Flags, error) {
	var m lludp.Typed
	flags := lludp.FlagReliable
	switch ch {
	case opensim.Avatar:
		m = &lludp.ImprovedTerseObjectUpdate{RegionHandle: regionHandle, TimeDilation: 65535,
			Objects: []lludp.TerseObjectData{{Data: fill(buf, max(size-18, 1), n)}}}
		flags |= lludp.FlagZeroCoded
	case opensim.Task:
		m = &lludp.ObjectUpdate{RegionHandle: regionHandle, TimeDilation: 65535,
			Objects: []lludp.ObjectData{{ID: n, PCode: 9, TextureEntry: fill(buf, max(size-180, 1), n)}}}
		flags |= lludp.FlagZeroCoded
	case opensim.Texture:
		m = &lludp.ImagePacket{ID: lludp.UUID{byte(n)}, Packet: uint16(n), Data: fill(buf, max(size-30, 1), n)}
	case opensim.Layer:
		m = &lludp.LayerData{Type: lludp.LayerLand, Data: fill(buf, max(size-12, 1), n)}
	default:
		m = &lludp.TransferPacket{TransferID: lludp.UUID{byte(n)}, ChannelType: 2, Packet: int32(n), Data: fill(buf, max(size-40, 1), n)}
	}
	out, err := lludp.AppendMessage(nil, lludp.Header{}, m, nil)
	if err != nil {
		return nil, 0, err
	}
	return out[lludp.HeaderSize:], flags, nil
}

// fill makes n bytes of varied, mostly non-zero content.
func fill(buf []byte, n int, seed uint32) []byte {
	buf = buf[:0]
	for i := range n {
		buf = append(buf, byte(int(seed)+i*7)|1)
	}
	return buf
}

// regionHandle is the handle of the region at (256000, 256000).
const regionHandle = uint64(256000)<<32 | 256000

package lludp

import "strconv"

// Category is an OpenSim throttle category, in the order of the seven floats
// of AgentThrottle (opensim ThrottleOutPacketType.cs; viewer llthrottle.h).
type Category uint8

const (
	Resend Category = iota
	Land
	Wind
	Cloud
	Task
	Texture
	Asset
	// NumCategories sizes per-category arrays.
	NumCategories = 7
	// Unthrottled marks messages a simulator sends at once, outside every
	// bucket (OpenSim's ThrottleOutPacketType.Unknown): acks, pings, the
	// handshake, chat, IM and teleport control.
	Unthrottled Category = 0xFF
)

var categoryNames = [NumCategories]string{"Resend", "Land", "Wind", "Cloud", "Task", "Texture", "Asset"}

func (c Category) String() string {
	if c < NumCategories {
		return categoryNames[c]
	}
	if c == Unthrottled {
		return "Unthrottled"
	}
	return "Category(" + strconv.Itoa(int(c)) + ")"
}

// categoryByMessage is the one table that maps messages to throttle
// categories, as OpenSim's LLClientView.cs sends them (protocol.md §8.1).
// Every message not listed is Task: OpenSim sends object updates, properties,
// animations, appearance, CoarseLocationUpdate, SimStats and most other
// replies through Task. A simulator throttles only what it sends, so for a
// viewer-to-simulator message the category is the one a simulator would use.
//
// LayerData is listed as Land; its wind and cloud layers are Wind and Cloud,
// which only the packet's LayerID.Type tells (see LayerCategory).
var categoryByMessage = map[string]Category{
	// Unthrottled: sent immediately, outside the buckets.
	"PacketAck":              Unthrottled,
	"OpenCircuit":            Unthrottled,
	"CloseCircuit":           Unthrottled,
	"StartPingCheck":         Unthrottled,
	"CompletePingCheck":      Unthrottled,
	"RegionHandshake":        Unthrottled,
	"AgentMovementComplete":  Unthrottled,
	"ChatFromSimulator":      Unthrottled,
	"ImprovedInstantMessage": Unthrottled,
	"TeleportStart":          Unthrottled,
	"TeleportProgress":       Unthrottled,
	"TeleportFinish":         Unthrottled,
	"TeleportLocal":          Unthrottled,
	"TeleportFailed":         Unthrottled,
	"DisableSimulator":       Unthrottled,
	"KickUser":               Unthrottled,
	// Land: terrain, parcel overlay, map blocks.
	"LayerData":     Land,
	"ParcelOverlay": Land,
	"MapBlockReply": Land,
	"MapItemReply":  Land,
	"MapLayerReply": Land,
	// Texture: images over UDP (opensim J2KImage.cs).
	"ImageData":          Texture,
	"ImagePacket":        Texture,
	"ImageNotInDatabase": Texture,
	// Asset: transfers, xfers, inventory descendents.
	"TransferInfo":         Asset,
	"TransferPacket":       Asset,
	"SendXferPacket":       Asset,
	"InventoryDescendents": Asset,
}

func categoryOf(name string) Category {
	if c, ok := categoryByMessage[name]; ok {
		return c
	}
	return Task
}

// LayerData layer types (viewer llpatchvertexarray / OpenSim
// TerrainCompressor.cs): the extended types are OpenSim's var-region forms.
const (
	LayerLand          = 0x4C // 'L'
	LayerLandExtended  = 0x4D // 'M'
	LayerWater         = 0x57 // 'W'
	LayerWaterExtended = 0x58 // 'X'
	LayerWind          = 0x37 // '7'
	LayerWindExtended  = 0x39 // '9'
	LayerCloud         = 0x38 // '8'
	LayerCloudExtended = 0x3A // ':'
)

// LayerCategory is the throttle category of a LayerData packet with the
// given LayerID.Type: OpenSim sends wind layers through Wind (and would send
// cloud layers through Cloud), everything else through Land.
func LayerCategory(layerType uint8) Category {
	switch layerType {
	case LayerWind, LayerWindExtended:
		return Wind
	case LayerCloud, LayerCloudExtended:
		return Cloud
	}
	return Land
}

package lludp

// Typed structs for the messages fairgrid reads and writes on its hot
// paths. Each lists its fields once, in template order (code); layouts are
// those of message_template.msg (protocol.md §6.1) and have been stable since
// 2007. Unless a comment says otherwise, numbers are as on the wire.

// Message IDs of the typed messages (message_template.msg).
var (
	PacketAckID                 = MessageID{Fixed, 0xFFFFFFFB}
	CloseCircuitID              = MessageID{Fixed, 0xFFFFFFFD}
	StartPingCheckID            = MessageID{High, 1}
	CompletePingCheckID         = MessageID{High, 2}
	AgentUpdateID               = MessageID{High, 4}
	ImageDataID                 = MessageID{High, 9}
	ImagePacketID               = MessageID{High, 10}
	LayerDataID                 = MessageID{High, 11}
	ObjectUpdateID              = MessageID{High, 12}
	ImprovedTerseObjectUpdateID = MessageID{High, 15}
	TransferPacketID            = MessageID{High, 17}
	CoarseLocationUpdateID      = MessageID{Medium, 6}
	UseCircuitCodeID            = MessageID{Low, 3}
	AgentThrottleID             = MessageID{Low, 81}
	RegionHandshakeID           = MessageID{Low, 148}
	RegionHandshakeReplyID      = MessageID{Low, 149}
	CompleteAgentMovementID     = MessageID{Low, 249}
	AgentMovementCompleteID     = MessageID{Low, 250}
	LogoutRequestID             = MessageID{Low, 252}
	LogoutReplyID               = MessageID{Low, 253}
)

// PacketAck acknowledges reliable packets. Its IDs are little-endian U32s,
// unlike appended acks, which are big-endian (protocol.md §2.5).
type PacketAck struct{ IDs []uint32 }

func (*PacketAck) MessageID() MessageID { return PacketAckID }
func (m *PacketAck) code(c *codec) {
	m.IDs = resize(m.IDs, c.count(len(m.IDs)))
	for i := range m.IDs {
		c.u32(&m.IDs[i])
	}
}

// CloseCircuit has no body.
type CloseCircuit struct{}

func (*CloseCircuit) MessageID() MessageID { return CloseCircuitID }
func (*CloseCircuit) code(*codec)          {}

// StartPingCheck asks the peer for a CompletePingCheck with the same PingID.
// OldestUnacked is the sender's oldest unacknowledged reliable sequence.
type StartPingCheck struct {
	PingID        uint8
	OldestUnacked uint32
}

func (*StartPingCheck) MessageID() MessageID { return StartPingCheckID }
func (m *StartPingCheck) code(c *codec)      { c.u8(&m.PingID); c.u32(&m.OldestUnacked) }

// CompletePingCheck answers a StartPingCheck.
type CompletePingCheck struct{ PingID uint8 }

func (*CompletePingCheck) MessageID() MessageID { return CompletePingCheckID }
func (m *CompletePingCheck) code(c *codec)      { c.u8(&m.PingID) }

// UseCircuitCode opens a circuit; AgentID is the template's CircuitCode.ID.
type UseCircuitCode struct {
	Code      uint32
	SessionID UUID
	AgentID   UUID
}

func (*UseCircuitCode) MessageID() MessageID { return UseCircuitCodeID }
func (m *UseCircuitCode) code(c *codec) {
	c.u32(&m.Code)
	c.uuid(&m.SessionID)
	c.uuid(&m.AgentID)
}

// AgentData is the AgentID/SessionID pair that OpenSim checks against the
// circuit on every message that carries both (protocol.md §8.8).
type AgentData struct {
	AgentID   UUID
	SessionID UUID
}

func (a *AgentData) code(c *codec) { c.uuid(&a.AgentID); c.uuid(&a.SessionID) }

// CompleteAgentMovement is the viewer's arrival in a region.
type CompleteAgentMovement struct {
	AgentData
	CircuitCode uint32
}

func (*CompleteAgentMovement) MessageID() MessageID { return CompleteAgentMovementID }
func (m *CompleteAgentMovement) code(c *codec)      { m.AgentData.code(c); c.u32(&m.CircuitCode) }

// AgentMovementComplete is the simulator's answer to CompleteAgentMovement.
type AgentMovementComplete struct {
	AgentData
	Position       Vector3
	LookAt         Vector3
	RegionHandle   uint64
	Timestamp      uint32
	ChannelVersion []byte
}

func (*AgentMovementComplete) MessageID() MessageID { return AgentMovementCompleteID }
func (m *AgentMovementComplete) code(c *codec) {
	m.AgentData.code(c)
	c.f32s(m.Position[:])
	c.f32s(m.LookAt[:])
	c.u64(&m.RegionHandle)
	c.u32(&m.Timestamp)
	c.variable(&m.ChannelVersion, 2)
}

// AgentUpdate is the viewer's camera and control state, sent up to 125
// times a second; it carries the agent's IDs in clear text.
type AgentUpdate struct {
	AgentData
	BodyRotation   Quaternion
	HeadRotation   Quaternion
	State          uint8
	CameraCenter   Vector3
	CameraAtAxis   Vector3
	CameraLeftAxis Vector3
	CameraUpAxis   Vector3
	Far            float32
	ControlFlags   uint32
	Flags          uint8
}

func (*AgentUpdate) MessageID() MessageID { return AgentUpdateID }
func (m *AgentUpdate) code(c *codec) {
	m.AgentData.code(c)
	c.f32s(m.BodyRotation[:])
	c.f32s(m.HeadRotation[:])
	c.u8(&m.State)
	c.f32s(m.CameraCenter[:])
	c.f32s(m.CameraAtAxis[:])
	c.f32s(m.CameraLeftAxis[:])
	c.f32s(m.CameraUpAxis[:])
	c.f32(&m.Far)
	c.u32(&m.ControlFlags)
	c.u8(&m.Flags)
}

// ThrottlesSize is the length of AgentThrottle's Throttles field: seven
// little-endian F32 in bits per second (viewer llviewerthrottle.cpp sendToSim;
// protocol.md §7.1).
const ThrottlesSize = 4 * NumCategories

// AgentThrottle asks the simulator for per-category rates.
//
// Throttles holds bits per second by Category (Resend, Land, Wind, Cloud,
// Task, Texture, Asset). On decode, ThrottlesLen is the length of the field
// as received: a well-formed request has ThrottlesSize bytes; a shorter one
// leaves the missing categories 0 and a longer one has its excess ignored,
// so a receiver can count and clamp malformed requests. On encode the field
// is always ThrottlesSize bytes and ThrottlesLen is not used.
type AgentThrottle struct {
	AgentData
	CircuitCode  uint32
	GenCounter   uint32 // always 0 in practice; nobody gives it a meaning
	Throttles    [NumCategories]float32
	ThrottlesLen int
}

func (*AgentThrottle) MessageID() MessageID { return AgentThrottleID }
func (m *AgentThrottle) code(c *codec) {
	m.AgentData.code(c)
	c.u32(&m.CircuitCode)
	c.u32(&m.GenCounter)
	if !c.dec {
		c.buf = append(c.buf, ThrottlesSize)
		c.f32s(m.Throttles[:])
		return
	}
	n := c.take(1)
	if n == nil {
		return
	}
	m.ThrottlesLen = int(n[0])
	blob := c.take(m.ThrottlesLen)
	m.Throttles = [NumCategories]float32{}
	for i := 0; i < NumCategories && 4*i+4 <= len(blob); i++ {
		m.Throttles[i] = f32(blob[4*i:])
	}
}

// Total returns the sum of the seven throttles, in bits per second.
func (m *AgentThrottle) Total() float64 {
	var sum float64
	for _, t := range m.Throttles {
		sum += float64(t)
	}
	return sum
}

// RegionInfo4 is one entry of RegionHandshake's RegionInfo4 block.
type RegionInfo4 struct {
	RegionFlagsExtended uint64
	RegionProtocols     uint64
}

// RegionHandshake describes the region to a new viewer.
type RegionHandshake struct {
	RegionFlags        uint32
	SimAccess          uint8
	SimName            []byte
	SimOwner           UUID
	IsEstateManager    bool
	WaterHeight        float32
	BillableFactor     float32
	CacheID            UUID
	TerrainBase        [4]UUID
	TerrainDetail      [4]UUID
	TerrainStartHeight [4]float32 // 00, 01, 10, 11
	TerrainHeightRange [4]float32 // 00, 01, 10, 11
	RegionID           UUID
	CPUClassID         int32
	CPURatio           int32
	ColoName           []byte
	ProductSKU         []byte
	ProductName        []byte
	RegionInfo4        []RegionInfo4
}

func (*RegionHandshake) MessageID() MessageID { return RegionHandshakeID }
func (m *RegionHandshake) code(c *codec) {
	c.u32(&m.RegionFlags)
	c.u8(&m.SimAccess)
	c.variable(&m.SimName, 1)
	c.uuid(&m.SimOwner)
	c.boolean(&m.IsEstateManager)
	c.f32(&m.WaterHeight)
	c.f32(&m.BillableFactor)
	c.uuid(&m.CacheID)
	for i := range m.TerrainBase {
		c.uuid(&m.TerrainBase[i])
	}
	for i := range m.TerrainDetail {
		c.uuid(&m.TerrainDetail[i])
	}
	c.f32s(m.TerrainStartHeight[:])
	c.f32s(m.TerrainHeightRange[:])
	c.uuid(&m.RegionID)
	c.s32(&m.CPUClassID)
	c.s32(&m.CPURatio)
	c.variable(&m.ColoName, 1)
	c.variable(&m.ProductSKU, 1)
	c.variable(&m.ProductName, 1)
	m.RegionInfo4 = resize(m.RegionInfo4, c.count(len(m.RegionInfo4)))
	for i := range m.RegionInfo4 {
		c.u64(&m.RegionInfo4[i].RegionFlagsExtended)
		c.u64(&m.RegionInfo4[i].RegionProtocols)
	}
}

// RegionHandshakeReply is the viewer's answer to RegionHandshake.
type RegionHandshakeReply struct {
	AgentData
	Flags uint32
}

func (*RegionHandshakeReply) MessageID() MessageID { return RegionHandshakeReplyID }
func (m *RegionHandshakeReply) code(c *codec)      { m.AgentData.code(c); c.u32(&m.Flags) }

// LayerData carries compressed terrain, wind or cloud patches; Type is one
// of the Layer* constants.
type LayerData struct {
	Type uint8
	Data []byte
}

func (*LayerData) MessageID() MessageID { return LayerDataID }
func (m *LayerData) code(c *codec)      { c.u8(&m.Type); c.variable(&m.Data, 2) }

// ObjectData is one object of an ObjectUpdate.
type ObjectData struct {
	ID                uint32
	State             uint8
	FullID            UUID
	CRC               uint32
	PCode             uint8
	Material          uint8
	ClickAction       uint8
	Scale             Vector3
	ObjectData        []byte
	ParentID          uint32
	UpdateFlags       uint32
	PathCurve         uint8
	ProfileCurve      uint8
	PathBegin         uint16
	PathEnd           uint16
	PathScaleX        uint8
	PathScaleY        uint8
	PathShearX        uint8
	PathShearY        uint8
	PathTwist         int8
	PathTwistBegin    int8
	PathRadiusOffset  int8
	PathTaperX        int8
	PathTaperY        int8
	PathRevolutions   uint8
	PathSkew          int8
	ProfileBegin      uint16
	ProfileEnd        uint16
	ProfileHollow     uint16
	TextureEntry      []byte
	TextureAnim       []byte
	NameValue         []byte
	Data              []byte
	Text              []byte
	TextColor         [4]byte
	MediaURL          []byte
	PSBlock           []byte
	ExtraParams       []byte
	Sound             UUID
	OwnerID           UUID
	Gain              float32
	Flags             uint8
	Radius            float32
	JointType         uint8
	JointPivot        Vector3
	JointAxisOrAnchor Vector3
}

func (o *ObjectData) code(c *codec) {
	c.u32(&o.ID)
	c.u8(&o.State)
	c.uuid(&o.FullID)
	c.u32(&o.CRC)
	c.u8(&o.PCode)
	c.u8(&o.Material)
	c.u8(&o.ClickAction)
	c.f32s(o.Scale[:])
	c.variable(&o.ObjectData, 1)
	c.u32(&o.ParentID)
	c.u32(&o.UpdateFlags)
	c.u8(&o.PathCurve)
	c.u8(&o.ProfileCurve)
	c.u16(&o.PathBegin)
	c.u16(&o.PathEnd)
	c.u8(&o.PathScaleX)
	c.u8(&o.PathScaleY)
	c.u8(&o.PathShearX)
	c.u8(&o.PathShearY)
	c.s8(&o.PathTwist)
	c.s8(&o.PathTwistBegin)
	c.s8(&o.PathRadiusOffset)
	c.s8(&o.PathTaperX)
	c.s8(&o.PathTaperY)
	c.u8(&o.PathRevolutions)
	c.s8(&o.PathSkew)
	c.u16(&o.ProfileBegin)
	c.u16(&o.ProfileEnd)
	c.u16(&o.ProfileHollow)
	c.variable(&o.TextureEntry, 2)
	c.variable(&o.TextureAnim, 1)
	c.variable(&o.NameValue, 2)
	c.variable(&o.Data, 2)
	c.variable(&o.Text, 1)
	c.fixed(o.TextColor[:])
	c.variable(&o.MediaURL, 1)
	c.variable(&o.PSBlock, 1)
	c.variable(&o.ExtraParams, 1)
	c.uuid(&o.Sound)
	c.uuid(&o.OwnerID)
	c.f32(&o.Gain)
	c.u8(&o.Flags)
	c.f32(&o.Radius)
	c.u8(&o.JointType)
	c.f32s(o.JointPivot[:])
	c.f32s(o.JointAxisOrAnchor[:])
}

// ObjectUpdate carries full object descriptions.
type ObjectUpdate struct {
	RegionHandle uint64
	TimeDilation uint16
	Objects      []ObjectData
}

func (*ObjectUpdate) MessageID() MessageID { return ObjectUpdateID }
func (m *ObjectUpdate) code(c *codec) {
	c.u64(&m.RegionHandle)
	c.u16(&m.TimeDilation)
	m.Objects = resize(m.Objects, c.count(len(m.Objects)))
	for i := range m.Objects {
		m.Objects[i].code(c)
	}
}

// TerseObjectData is one entry of an ImprovedTerseObjectUpdate: Data is the
// packed position/velocity/rotation record.
type TerseObjectData struct {
	Data         []byte
	TextureEntry []byte
}

// ImprovedTerseObjectUpdate carries compact motion updates, mostly of
// avatars.
type ImprovedTerseObjectUpdate struct {
	RegionHandle uint64
	TimeDilation uint16
	Objects      []TerseObjectData
}

func (*ImprovedTerseObjectUpdate) MessageID() MessageID { return ImprovedTerseObjectUpdateID }
func (m *ImprovedTerseObjectUpdate) code(c *codec) {
	c.u64(&m.RegionHandle)
	c.u16(&m.TimeDilation)
	m.Objects = resize(m.Objects, c.count(len(m.Objects)))
	for i := range m.Objects {
		c.variable(&m.Objects[i].Data, 1)
		c.variable(&m.Objects[i].TextureEntry, 2)
	}
}

// ImageData is the first packet of a texture sent over UDP.
type ImageData struct {
	ID      UUID
	Codec   uint8
	Size    uint32
	Packets uint16
	Data    []byte
}

func (*ImageData) MessageID() MessageID { return ImageDataID }
func (m *ImageData) code(c *codec) {
	c.uuid(&m.ID)
	c.u8(&m.Codec)
	c.u32(&m.Size)
	c.u16(&m.Packets)
	c.variable(&m.Data, 2)
}

// ImagePacket is a later packet of a texture.
type ImagePacket struct {
	ID     UUID
	Packet uint16
	Data   []byte
}

func (*ImagePacket) MessageID() MessageID { return ImagePacketID }
func (m *ImagePacket) code(c *codec)      { c.uuid(&m.ID); c.u16(&m.Packet); c.variable(&m.Data, 2) }

// TransferPacket is one packet of an asset transfer.
type TransferPacket struct {
	TransferID  UUID
	ChannelType int32
	Packet      int32
	Status      int32
	Data        []byte
}

func (*TransferPacket) MessageID() MessageID { return TransferPacketID }
func (m *TransferPacket) code(c *codec) {
	c.uuid(&m.TransferID)
	c.s32(&m.ChannelType)
	c.s32(&m.Packet)
	c.s32(&m.Status)
	c.variable(&m.Data, 2)
}

// CoarseLocation is one avatar's position in CoarseLocationUpdate: X and Y
// in metres, Z in units of 4 m.
type CoarseLocation struct{ X, Y, Z uint8 }

// CoarseLocationUpdate lists nearby avatars for the mini-map. You and Prey
// index Locations, or are -1.
type CoarseLocationUpdate struct {
	Locations []CoarseLocation
	You, Prey int16
	AgentIDs  []UUID
}

func (*CoarseLocationUpdate) MessageID() MessageID { return CoarseLocationUpdateID }
func (m *CoarseLocationUpdate) code(c *codec) {
	m.Locations = resize(m.Locations, c.count(len(m.Locations)))
	for i := range m.Locations {
		l := &m.Locations[i]
		c.u8(&l.X)
		c.u8(&l.Y)
		c.u8(&l.Z)
	}
	you, prey := uint16(m.You), uint16(m.Prey)
	c.u16(&you)
	c.u16(&prey)
	m.You, m.Prey = int16(you), int16(prey)
	m.AgentIDs = resize(m.AgentIDs, c.count(len(m.AgentIDs)))
	for i := range m.AgentIDs {
		c.uuid(&m.AgentIDs[i])
	}
}

// LogoutRequest ends the viewer's session.
type LogoutRequest struct{ AgentData }

func (*LogoutRequest) MessageID() MessageID { return LogoutRequestID }
func (m *LogoutRequest) code(c *codec)      { m.AgentData.code(c) }

package lludp

import "strconv"

// Channel is a scheduler channel of the St Andrews server design (thesis
// ch. 8): resends stay in the channel of their original packet, and avatar
// updates are separated from bulk object data. It belongs beside the
// throttle categories it refines: package opensim schedules by it, and
// the capture's tracker (package circuit) counts bytes by it.
type Channel uint8

const (
	ChannelAvatar Channel = iota
	ChannelTask
	ChannelTexture
	ChannelLayer
	ChannelAsset
	// NumChannels sizes per-channel arrays.
	NumChannels = 5
	// NoChannel is the channel of Unthrottled messages, which a
	// simulator sends at once, outside every bucket.
	NoChannel Channel = 0xFF
)

var channelNames = [NumChannels]string{"Avatar", "Task", "Texture", "Layer", "Asset"}

func (c Channel) String() string {
	if c < NumChannels {
		return channelNames[c]
	}
	if c == NoChannel {
		return "None"
	}
	return "Channel(" + strconv.Itoa(int(c)) + ")"
}

// channelByCategory is the one map from the seven AgentThrottle categories
// to channels. Land, Wind and Cloud share Layer, as they share the terrain
// LayerData message. Resend has no channel: a resend is queued in its
// original packet's channel, so ChannelRates spreads the Resend rate over
// all five. Task is the Task channel except for the avatar-state messages
// ChannelOf moves to ChannelAvatar.
var channelByCategory = [NumCategories]Channel{
	Resend:  NoChannel,
	Land:    ChannelLayer,
	Wind:    ChannelLayer,
	Cloud:   ChannelLayer,
	Task:    ChannelTask,
	Texture: ChannelTexture,
	Asset:   ChannelAsset,
}

// ChannelOfCategory is the channel of a message sent through category c
// (NoChannel for Unthrottled and Resend). A Task message may instead
// belong to ChannelAvatar; ChannelOf decides that.
func ChannelOfCategory(c Category) Channel {
	if c < NumCategories {
		return channelByCategory[c]
	}
	return NoChannel
}

// ChannelOf is the channel the scheduler queues message m in: the channel
// of its simulator throttle category (Message.Category), with the
// avatar-state messages of Task moved to ChannelAvatar. Those are the messages of
// OpenSim's former State sub-category of Task (protocol.md §8.1), which the
// thesis schedules ahead of bulk object data. It is two loads and, for Task
// messages, one string switch, cheap enough for every datagram.
func ChannelOf(m *Message) Channel {
	c := m.Category()
	if c == Task && isAvatarState(m.Name) {
		return ChannelAvatar
	}
	return ChannelOfCategory(c)
}

// avatarStateMessages are the Task messages of the Avatar channel; the test
// holds isAvatarState to this list over the whole template.
var avatarStateMessages = [...]string{
	"ImprovedTerseObjectUpdate", "AvatarAnimation", "AvatarAppearance",
	"CoarseLocationUpdate", "AvatarSitResponse",
}

// isAvatarState reports whether the named Task message carries avatar state
// (avatarStateMessages). A switch rather than a map: the names differ in
// length, so the compiled switch is a length test and at most one
// comparison, where a map would hash every Task datagram's name.
func isAvatarState(name string) bool {
	switch name {
	case "ImprovedTerseObjectUpdate", "AvatarAnimation", "AvatarAppearance",
		"CoarseLocationUpdate", "AvatarSitResponse":
		return true
	}
	return false
}

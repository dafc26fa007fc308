package opensim

import "github.com/fairgrid/fairgrid/lludp"

// Channel is a scheduler channel of the St Andrews server design (thesis
// ch. 8): lludp.Channel, whose home is beside the throttle categories it
// refines; the scheduler names its channels short.
type Channel = lludp.Channel

const (
	Avatar  = lludp.ChannelAvatar
	Task    = lludp.ChannelTask
	Texture = lludp.ChannelTexture
	Layer   = lludp.ChannelLayer
	Asset   = lludp.ChannelAsset
	// NumChannels sizes per-channel arrays.
	NumChannels = lludp.NumChannels
	// NoChannel is the channel of lludp.Unthrottled messages, which a
	// simulator sends at once, outside every bucket.
	NoChannel = lludp.NoChannel
)

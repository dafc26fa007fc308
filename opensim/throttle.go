package opensim

import (
	"encoding/binary"
	"math"

	"github.com/fairgrid/fairgrid/lludp"
)

// ThrottleReport says what SetThrottle made of a request.
type ThrottleReport struct {
	// Malformed: the Throttles block was not 28 bytes; missing categories
	// count as 0 (then raised to the minimum), extra bytes are ignored.
	Malformed bool
	// Invalid counts categories that were NaN, infinite or negative.
	Invalid int
	// Clamped counts channels raised to their minimum or cut to their
	// maximum, and the client total if it was scaled down to ClientMax.
	Clamped int
}

// ChannelRates maps an AgentThrottle's seven categories (bits/s, in the
// order Resend, Land, Wind, Cloud, Task, Texture, Asset) to the five
// channels' rates in bytes/s:
//
//	Layer   = Land + Wind + Cloud
//	Texture = Texture
//	Asset   = Asset
//	Avatar  = Task × avatarShare
//	Task    = Task × (1 − avatarShare)
//
// and Resend spread over the five in proportion to those values, because a
// resend is queued in the channel of its original packet. Values that are
// NaN, infinite or negative count as 0. No clamping happens here; see
// Config.clamp.
func ChannelRates(categories [lludp.NumCategories]float32, avatarShare float64) (rates [NumChannels]float64, invalid int) {
	var bytes [lludp.NumCategories]float64
	for i, v := range categories {
		x := float64(v) / 8 // bits/s → bytes/s
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			x = 0
			invalid++
		}
		bytes[i] = x
	}
	for cat := range lludp.Category(lludp.NumCategories) {
		if ch := lludp.ChannelOfCategory(cat); ch < NumChannels {
			rates[ch] += bytes[cat]
		}
	}
	task := rates[Task]
	rates[Avatar] = task * avatarShare
	rates[Task] = task * (1 - avatarShare)
	var sum float64
	for _, r := range rates {
		sum += r
	}
	if resend := bytes[lludp.Resend]; resend > 0 {
		for ch := range rates {
			if sum > 0 {
				rates[ch] += resend * rates[ch] / sum
			} else {
				rates[ch] += resend / NumChannels
			}
		}
	}
	return rates, invalid
}

// ParseThrottles reads an AgentThrottle's Throttles field: seven
// little-endian F32. It reports whether the block had exactly 28 bytes;
// missing values are 0 and extra bytes are ignored.
func ParseThrottles(raw []byte) (categories [lludp.NumCategories]float32, wellFormed bool) {
	for i := range categories {
		if 4*i+4 <= len(raw) {
			categories[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	}
	return categories, len(raw) == lludp.ThrottlesSize
}

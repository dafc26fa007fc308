package opensim

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
)

// Config configures a Scheduler. Rates are bytes per second. Zero fields
// take the defaults named on each, chosen to match OpenSim's own
// (protocol.md §8.2–§8.4).
type Config struct {
	// SceneMax caps all clients together; they share it in proportion to
	// their rates. Default 6,250,000 B/s (50 Mbit/s, OpenSim's
	// scene_throttle_max_bps).
	SceneMax int64
	// ClientMax caps one client's total; a larger request is scaled down
	// in proportion. Default 640,000 B/s (OpenSim's client_throttle_max_bps).
	ClientMax int64
	// ChannelMin and ChannelMax clamp each channel's rate. Defaults: 500
	// B/s (OpenSim's bucket floor, MINDRIPRATE) and ClientMax.
	ChannelMin, ChannelMax [NumChannels]int64
	// DefaultRates is what a client gets before its first AgentThrottle.
	// Default: OpenSim's per-category defaults (Resend 6625, Land 9125,
	// Wind 1750, Cloud 1750, Task 18500, Texture 18500, Asset 10500 B/s,
	// ThrottleRates.cs) mapped to channels.
	DefaultRates [NumChannels]int64
	// AvatarShare is the part of Task that goes to the Avatar channel.
	// Default 0.8: OpenSim's State sub-category of Task took 80 % when the
	// thesis was written (protocol.md §8.1).
	AvatarShare float64
	// AvatarPriority gives the Avatar channel strict priority up to its
	// own rate; beyond that it competes like any channel.
	AvatarPriority bool
	// ChannelBuckets gives each of OpenSim's throttle categories that the
	// channels gather a token bucket of its own, as OpenSim's
	// LLUDPClient does (one TokenBucket per category, no lending): Layer
	// (Land + Wind + Cloud), Texture, Asset, and one Task bucket that the
	// Avatar and Task channels share at their sum, since OpenSim's Task
	// category carries both. A packet leaves only while its bucket holds
	// tokens, so an idle category's rate is lost instead of lent to the
	// busy ones. Each bucket's depth is its rate × BurstTime, at most
	// OpenSim's MAXBURST (7,500 bytes) and at least MinBurst. The client
	// and scene buckets apply as in the default mode. Default false:
	// idle channels lend their share (doc.go).
	ChannelBuckets bool
	// BurstTime sets bucket depths: rate × BurstTime, at least MinBurst.
	// Default 10 ms (OpenSim's BurstTime).
	BurstTime time.Duration
	// MinBurst is the smallest bucket depth. Default 1500 bytes, so a full
	// datagram can leave a nearly idle bucket at once.
	MinBurst int64
	// QueueBytes and QueuePackets bound each channel's queue. Defaults
	// 256 KiB and 512 packets.
	QueueBytes   int64
	QueuePackets int
	// MaxPacket is the largest packet accepted. Default 8192 bytes (the
	// LLUDP receive bound).
	MaxPacket int
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("invalid scheduler configuration")

// openSimDefaultCategories are OpenSim's per-category rates before any
// AgentThrottle (ThrottleRates.cs), in bytes/s.
var openSimDefaultCategories = [lludp.NumCategories]float32{6625, 9125, 1750, 1750, 18500, 18500, 10500}

func (c Config) withDefaults() (Config, error) {
	c.SceneMax = cmp.Or(c.SceneMax, 6_250_000)
	c.ClientMax = cmp.Or(c.ClientMax, 640_000)
	c.AvatarShare = cmp.Or(c.AvatarShare, 0.8)
	c.BurstTime = cmp.Or(c.BurstTime, 10*time.Millisecond)
	c.MinBurst = cmp.Or(c.MinBurst, 1500)
	c.QueueBytes = cmp.Or(c.QueueBytes, 256<<10)
	c.QueuePackets = cmp.Or(c.QueuePackets, 512)
	c.MaxPacket = cmp.Or(c.MaxPacket, lludp.MaxPacketSize)
	for ch := range NumChannels {
		c.ChannelMin[ch] = cmp.Or(c.ChannelMin[ch], 500)
		c.ChannelMax[ch] = cmp.Or(c.ChannelMax[ch], c.ClientMax)
	}
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format+": %w", append(a, ErrConfig)...)) }
	const maxRate = 1 << 33 // 8 GB/s keeps every product in range
	if c.SceneMax < 1 || c.SceneMax > maxRate {
		bad("scene max %d B/s outside [1, %d]", c.SceneMax, int64(maxRate))
	}
	if c.ClientMax < 1 || c.ClientMax > maxRate {
		bad("client max %d B/s outside [1, %d]", c.ClientMax, int64(maxRate))
	}
	for ch := range NumChannels {
		if c.ChannelMin[ch] < 1 || c.ChannelMax[ch] < c.ChannelMin[ch] || c.ChannelMax[ch] > maxRate {
			bad("channel %v: min %d, max %d B/s: want 1 ≤ min ≤ max ≤ %d", Channel(ch), c.ChannelMin[ch], c.ChannelMax[ch], int64(maxRate))
		}
	}
	if math.IsNaN(c.AvatarShare) || c.AvatarShare < 0 || c.AvatarShare > 1 {
		bad("avatar share %v outside [0, 1]", c.AvatarShare)
	}
	if c.BurstTime < time.Millisecond || c.BurstTime > 10*time.Second {
		bad("burst time %v outside [1ms, 10s]", c.BurstTime)
	}
	if c.MinBurst < 1 || c.MinBurst > 1<<20 {
		bad("min burst %d bytes outside [1, 1 MiB]", c.MinBurst)
	}
	if c.MaxPacket < 1 || c.MaxPacket > 1<<16 {
		bad("max packet %d bytes outside [1, 65536]", c.MaxPacket)
	}
	if c.QueuePackets < 1 || c.QueueBytes < int64(c.MaxPacket) {
		bad("queue limits %d packets, %d bytes: want at least one packet of MaxPacket", c.QueuePackets, c.QueueBytes)
	}
	if len(errs) > 0 {
		return c, errors.Join(errs...)
	}
	if c.DefaultRates == ([NumChannels]int64{}) {
		c.DefaultRates, _ = c.clamp(ChannelRates(scaleToBits(openSimDefaultCategories), c.AvatarShare))
	}
	return c, nil
}

func scaleToBits(bytes [lludp.NumCategories]float32) (bits [lludp.NumCategories]float32) {
	for i, b := range bytes {
		bits[i] = b * 8
	}
	return bits
}

// clamp bounds each channel to [ChannelMin, ChannelMax], then scales the
// total down to ClientMax in proportion, as OpenSim's SetThrottles does
// (never below the minima). It returns the rates and how many were clamped.
func (c Config) clamp(rates [NumChannels]float64, _ int) (out [NumChannels]int64, clamped int) {
	var sum float64
	for ch, r := range rates {
		lo, hi := float64(c.ChannelMin[ch]), float64(c.ChannelMax[ch])
		switch {
		case !(r >= lo):
			r = lo
			clamped++
		case r > hi:
			r = hi
			clamped++
		}
		rates[ch] = r
		sum += r
	}
	if sum > float64(c.ClientMax) {
		clamped++
		scale := float64(c.ClientMax) / sum
		for ch := range rates {
			rates[ch] = max(rates[ch]*scale, float64(c.ChannelMin[ch]))
		}
	}
	for ch, r := range rates {
		out[ch] = int64(r)
	}
	return out, clamped
}

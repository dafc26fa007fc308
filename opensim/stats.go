package opensim

// ChannelStats counts one channel of one client.
type ChannelStats struct {
	EnqueuedBytes  uint64
	SentPackets    uint64
	SentBytes      uint64
	DroppedPackets uint64 // refused for a full queue, or queued when the client left
	DroppedBytes   uint64
	Resends        uint64
}

// ClientStats counts one client.
type ClientStats struct {
	Channels [NumChannels]ChannelStats
}

// Stats counts the whole scheduler.
type Stats struct {
	Clients           int
	EnqueuedBytes     uint64
	SentBytes         uint64
	DroppedBytes      uint64
	UnknownClient     uint64 // calls naming a client that does not exist
	BadPackets        uint64 // sizes outside [1, MaxPacket], channels out of range
	ThrottleMalformed uint64 // Throttles blocks that were not 28 bytes
	ThrottleInvalid   uint64 // categories that were NaN, infinite or negative
	ThrottleClamped   uint64 // channels (and totals) clamped to the limits
	TimeBackwards     uint64 // calls whose time was before an earlier call's
}

// Stats returns the scheduler's counters.
func (s *Scheduler[P]) Stats() Stats { return s.stats }

// ClientStats returns one client's counters, with what is queued now.
func (s *Scheduler[P]) ClientStats(id ClientID) (st ClientStats, queuedBytes [NumChannels]int64, ok bool) {
	c := s.lookup(id)
	if c == nil {
		return st, queuedBytes, false
	}
	for ch := range c.queues {
		queuedBytes[ch] = c.queues[ch].bytes
	}
	return c.stats, queuedBytes, true
}

package opensim

// ChannelStats counts one channel of one client.
type ChannelStats struct {
	EnqueuedBytes uint64
	SentPackets   uint64
	SentBytes     uint64
	// Refused: tail drops of new packets at a full queue (never queued).
	RefusedPackets uint64
	RefusedBytes   uint64
	// Discarded: queued packets thrown away when the client was removed.
	DiscardedPackets uint64
	DiscardedBytes   uint64
	Resends          uint64
}

// ClientStats counts one client.
type ClientStats struct {
	Channels [NumChannels]ChannelStats
}

// Stats counts the whole scheduler.
type Stats struct {
	Clients int
	// Bytes are conserved: EnqueuedBytes = SentBytes + DiscardedBytes +
	// what is queued; RefusedBytes were never enqueued.
	EnqueuedBytes     uint64
	SentBytes         uint64
	RefusedBytes      uint64
	DiscardedBytes    uint64
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
	st = s.cold[id.slot()].stats
	for ch := range c.queues {
		q := &c.queues[ch]
		cs := &st.Channels[ch]
		queuedBytes[ch] = q.bytes
		cs.SentPackets, cs.SentBytes = q.sentPackets, q.sentBytes
		// Bytes are conserved, so what was enqueued need not be counted
		// on the hot path.
		cs.EnqueuedBytes = q.sentBytes + cs.DiscardedBytes + uint64(q.bytes)
	}
	return st, queuedBytes, true
}

package region

import (
	"net"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim"
)

// handle processes one datagram, in OpenSim's order (protocol.md §8.8):
// decode; from an unknown endpoint only UseCircuitCode; acks; queue an ack
// for a reliable packet — duplicates too — then drop reliable duplicates;
// check the agent's IDs; act on the message.
func (s *Server) handle(in inbound) {
	p := &s.packet
	if err := p.DecodeFromBytes(in.data); err != nil {
		s.counters.Malformed++
		return
	}
	c := s.clients[in.from]
	if c == nil {
		if p.ID != lludp.UseCircuitCodeID {
			s.counters.Orphans++
			return
		}
		s.login(in)
		return
	}
	c.lastRecv = in.at
	for i := range p.Acks.Len() {
		delete(c.unacked, p.Acks.At(i))
	}
	if p.Flags.Reliable() {
		c.acks = append(c.acks, p.Sequence)
		c.ackBytes += len(in.data)
		if _, dup := c.archive[p.Sequence]; dup {
			s.counters.Duplicates++
			s.maybeFlushAcks(c)
			return
		}
		s.archive(c, p.Sequence)
	}
	switch p.ID {
	case lludp.PacketAckID:
		var m lludp.PacketAck
		if p.Unmarshal(&m) == nil {
			for _, id := range m.IDs {
				delete(c.unacked, id)
			}
		}
	case lludp.StartPingCheckID:
		var m lludp.StartPingCheck
		if p.Unmarshal(&m) == nil {
			s.sendNow(c, &lludp.CompletePingCheck{PingID: m.PingID}, 0, in.at)
		}
	case lludp.CompletePingCheckID:
		var m lludp.CompletePingCheck
		if p.Unmarshal(&m) == nil && m.PingID == c.pingID && !c.pingSent.IsZero() {
			ms := float64(in.at.Sub(c.pingSent)) / float64(time.Millisecond)
			c.pingMS = 0.8*c.pingMS + 0.2*ms
			c.rto = min(max(time.Duration(rtoFactor*c.pingMS*float64(time.Millisecond)), minRTO), maxRTO)
			c.pingSent = time.Time{}
		}
	case lludp.UseCircuitCodeID:
		// A repeat from a known endpoint: its ack went missing; acked above.
	case lludp.CompleteAgentMovementID:
		var m lludp.CompleteAgentMovement
		if p.Unmarshal(&m) != nil || !s.owns(c, m.AgentData) {
			break
		}
		if !c.moved {
			c.moved = true
			s.pending--
		}
		s.sendNow(c, &lludp.AgentMovementComplete{AgentData: m.AgentData, Position: s.cfg.Position,
			LookAt: lludp.Vector3{1, 0, 0}, RegionHandle: regionHandle, Timestamp: uint32(in.at.Unix()),
			ChannelVersion: []byte("fairgrid sim\x00")}, lludp.FlagReliable, in.at)
	case lludp.AgentThrottleID:
		var m lludp.AgentThrottle
		if p.Unmarshal(&m) != nil || !s.owns(c, m.AgentData) {
			break
		}
		msg := p.Message()
		bi := msg.BlockIndex("Throttle")
		raw := p.Field(bi, 0, msg.Blocks[bi].FieldIndex("Throttles"))
		if _, err := s.sched.SetThrottle(c.id, raw, in.at); err == nil {
			c.stats.Throttles++
			if s.cfg.OnThrottle != nil {
				_, total, _ := s.sched.Rates(c.id)
				s.cfg.OnThrottle(c.addr, m.Total(), total, in.at)
			}
			if len(s.children) > 0 {
				cats, _ := opensim.ParseThrottles(raw)
				s.rootThrottleAll(c.login.AgentID, cats, in.at)
			}
		}
	case lludp.RegionHandshakeReplyID:
		// A neighbour's circuit is complete here: the viewer sends it no
		// CompleteAgentMovement (protocol.md §11.2).
		var m lludp.RegionHandshakeReply
		if s.cfg.Child == nil || p.Unmarshal(&m) != nil || !s.owns(c, m.AgentData) || c.moved {
			break
		}
		c.moved = true
		s.pending--
		s.applyRootThrottle(c, in.at)
	case lludp.AgentUpdateID:
		var m lludp.AgentUpdate
		if p.Unmarshal(&m) == nil && s.owns(c, m.AgentData) && s.cfg.Stress.Enabled {
			s.stressMove(c, &m, in.at)
		}
	case lludp.LogoutRequestID:
		var m lludp.LogoutRequest
		if p.Unmarshal(&m) == nil && s.owns(c, m.AgentData) {
			s.flushAcks(c)
			s.logoutReply(c, m.AgentData, in.at)
			s.remove(c, in.at)
			s.counters.LoggedOut++
			return
		}
	case lludp.CloseCircuitID:
		s.remove(c, in.at)
		s.counters.LoggedOut++
		return
	}
	s.maybeFlushAcks(c)
}

// owns checks a message's agent IDs against the circuit's, as OpenSim
// does for every message that carries both (protocol.md §8.8 step 6).
func (s *Server) owns(c *client, ad lludp.AgentData) bool {
	if ad.AgentID == c.login.AgentID && ad.SessionID == c.login.SessionID {
		return true
	}
	s.counters.BadIDs++
	return false
}

// login opens a circuit for a UseCircuitCode from a new endpoint: ack it at
// once with sequence 0, out of band, then send RegionHandshake. Admission
// control comes first (doc.go): a refused UseCircuitCode is not acked, so
// a real viewer sends it again.
func (s *Server) login(in inbound) {
	var m lludp.UseCircuitCode
	if s.packet.Unmarshal(&m) != nil {
		s.counters.Malformed++
		return
	}
	login := Login{Code: m.Code, AgentID: m.AgentID, SessionID: m.SessionID}
	if len(s.cfg.Allowed) > 0 {
		ok := false
		for _, a := range s.cfg.Allowed {
			ok = ok || a == login
		}
		if !ok {
			s.counters.BadCircuitCodes++
			return
		}
	}
	// The cap before the limiter: a refusal for want of room costs the
	// prefix no token.
	if s.pending >= s.cfg.Admission.MaxPending {
		s.counters.PendingFull++
		return
	}
	if !s.limiter.allow(in.from.Addr(), in.at) {
		s.counters.RateLimited++
		return
	}
	s.pending++
	c := &client{addr: in.from, login: login, opened: in.at, unacked: map[uint32]*outPacket{}, archive: map[uint32]struct{}{},
		rto: initialRTO, pingMS: initialPingMS, lastRecv: in.at, udpAddr: net.UDPAddrFromAddrPort(in.from)}
	c.id = s.sched.AddClient(in.at)
	s.clients[in.from] = c
	s.byID[c.id] = c
	ack := s.queue(c.udpAddr)
	*ack, _ = lludp.AppendMessage((*ack)[:0], lludp.Header{}, &lludp.PacketAck{IDs: []uint32{s.packet.Sequence}}, nil)
	s.archive(c, s.packet.Sequence)
	s.sendNow(c, &lludp.RegionHandshake{RegionFlags: 0, SimAccess: 13, SimName: []byte("fairgrid\x00"), WaterHeight: 20,
		BillableFactor: 1, RegionID: lludp.UUID{0xFA, 0x12}, ProductName: []byte("fairgrid sim\x00")},
		lludp.FlagReliable|lludp.FlagZeroCoded, in.at)
}

func (s *Server) archive(c *client, seq uint32) {
	if old := c.archived[c.nextArch]; old != 0 {
		delete(c.archive, old)
	}
	c.archived[c.nextArch] = seq
	c.nextArch = (c.nextArch + 1) % archiveLen
	c.archive[seq] = struct{}{}
}

func (s *Server) maybeFlushAcks(c *client) {
	if c.ackBytes >= s.cfg.AckBytes {
		s.flushAcks(c)
	}
}

// flushAcks sends the pending acks in PacketAck messages of at most 255.
// The list is taken first: a PacketAck carries no appended acks.
func (s *Server) flushAcks(c *client) {
	pending := c.acks
	c.acks, c.ackBytes = nil, 0
	for len(pending) > 0 {
		n := min(len(pending), 255)
		s.sendNow(c, &lludp.PacketAck{IDs: pending[:n]}, 0, time.Time{})
		pending = pending[n:]
	}
}

func (s *Server) remove(c *client, now time.Time) {
	if !c.moved {
		s.pending--
	}
	s.grid.remove(c)
	s.sched.RemoveClient(c.id, now)
	delete(s.clients, c.addr)
	delete(s.byID, c.id)
}

// produce refills each channel's queue at its offered load, never past
// QueueTarget packets: the scheduler paces production.
func (s *Server) produce(now time.Time) {
	if w, ok := workloads[s.cfg.Activity]; ok {
		s.produceWorkload(w, now)
		return
	}
	if loads[s.cfg.Activity] == ([opensim.NumChannels]channelLoad{}) {
		return // nothing to offer: no need to visit every client 100 times a second
	}
	dt := tick.Seconds()
	var buf []byte
	for _, c := range s.clients {
		if !c.moved || s.stalled(c) {
			continue
		}
		for ch, load := range loads[s.cfg.Activity] {
			if load.Rate == 0 {
				continue
			}
			c.credit[ch] = min(c.credit[ch]+float64(load.Rate)*dt, float64(load.Size*s.cfg.QueueTarget))
			for c.credit[ch] >= float64(load.Size) && c.queued[ch] < s.cfg.QueueTarget {
				c.counter++
				payload, flags, err := message(opensim.Channel(ch), load.Size, c.counter, buf)
				if err != nil {
					s.log.Error("build traffic", "err", err)
					return
				}
				p := &outPacket{payload: payload, flags: flags, channel: opensim.Channel(ch), fresh: true}
				if s.sched.Enqueue(c.id, p.channel, len(payload)+lludp.HeaderSize, p, false, now) != nil {
					break
				}
				c.queued[ch]++
				c.credit[ch] -= float64(load.Size)
			}
		}
	}
}

// resend queues every reliable packet unacked for longer than the RTO again,
// at the head of its own channel, with its sequence number and the resent
// flag (protocol.md §8.6, but in its channel rather than a Resend queue).
func (s *Server) resend(now time.Time) {
	for _, c := range s.clients {
		if len(c.unacked) == 0 {
			continue // most, in stress mode: skip even setting up the range
		}
		for seq, p := range c.unacked {
			if now.Sub(p.sentAt) < c.rto {
				continue
			}
			delete(c.unacked, seq)
			if p.channel >= opensim.NumChannels { // unthrottled: resend at once
				s.transmit(c, p, true, now)
				c.stats.Resends++
				continue
			}
			s.sched.Enqueue(c.id, p.channel, len(p.payload)+lludp.HeaderSize, p, true, now)
		}
	}
}

// ping pings the clients that completed the handshake; a pending circuit
// gets its handshake and nothing else, so a flood of them costs no pings.
func (s *Server) ping(now time.Time) {
	for _, c := range s.clients {
		if !c.moved {
			continue
		}
		c.pingID++
		c.pingSent = now
		s.sendNow(c, &lludp.StartPingCheck{PingID: c.pingID, OldestUnacked: c.seq}, 0, now)
	}
}

func (s *Server) expire(now time.Time) {
	for _, c := range s.clients {
		switch {
		case !c.moved && now.Sub(c.opened) > s.cfg.Admission.PendingTimeout:
			s.remove(c, now)
			s.counters.HandshakeTimeouts++
		case now.Sub(c.lastRecv) > s.cfg.ClientTimeout:
			s.remove(c, now)
			s.counters.TimedOut++
		}
	}
}

// logoutReply answers LogoutRequest (reliable, zero-coded, as OpenSim's
// OutPacket sends it), with an empty inventory list.
func (s *Server) logoutReply(c *client, ad lludp.AgentData, now time.Time) {
	msg := lludp.Builtin().ByName("LogoutReply")
	payload, err := lludp.AppendBody(lludp.AppendMessageNumber(nil, msg.ID), msg, []lludp.DecodedBlock{
		{Name: "AgentData", Instances: [][]any{{ad.AgentID, ad.SessionID}}},
	})
	if err != nil {
		s.log.Error("encode LogoutReply", "err", err)
		return
	}
	s.transmit(c, &outPacket{payload: payload, flags: lludp.FlagReliable | lludp.FlagZeroCoded, channel: opensim.NoChannel}, false, now)
}

package viewer

import (
	"net/netip"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/throttle/circuit"
)

// Child circuits. A viewer holds a circuit to its agent's region (the
// root) and one to each neighbour region it is told of (EnableSimulator,
// over the event queue in the real viewer; Config.Children here), all
// from the one UDP socket (protocol.md §11.2, §11.3). A child circuit
// sends UseCircuitCode once the root circuit is complete and answers the
// RegionHandshake, but sends no CompleteAgentMovement — that is what
// makes a region the agent's root, in OpenSim and in throttle/circuit's
// ArrivedAt — and no AgentUpdate or AgentThrottle: a neighbour takes its
// throttle from the root region, scaled with distance (protocol.md §8.9).
// It acks, pings every PingInterval and resends its reliable packets, as
// the root circuit does. At logout the viewer sends each child
// CloseCircuit, so the neighbour closes it at once instead of after its
// 60 s timeout.

// childCircuit is the state of one child circuit; the viewer's mu guards
// it.
type childCircuit struct {
	sim        netip.AddrPort
	seq        uint32
	acks       []uint32
	ackSince   time.Time
	unacked    map[uint32]*pendingReliable
	pingID     uint8
	lastPing   time.Time
	opened     bool // UseCircuitCode sent
	loggedIn   bool // UseCircuitCode acknowledged
	handshaken bool // RegionHandshakeReply sent: the neighbour's circuit is complete
}

func newChildren(sims []netip.AddrPort) (list []*childCircuit, bySim map[netip.AddrPort]*childCircuit) {
	bySim = map[netip.AddrPort]*childCircuit{}
	for _, s := range sims {
		c := &childCircuit{sim: s, unacked: map[uint32]*pendingReliable{}}
		list = append(list, c)
		bySim[s] = c
	}
	return list, bySim
}

// openChildren starts every child circuit: the root circuit is complete.
func (v *Viewer) openChildren(now time.Time) {
	for _, c := range v.children {
		if !c.opened {
			c.opened = true
			v.childSend(c, &lludp.UseCircuitCode{Code: v.cfg.CircuitCode, SessionID: v.cfg.SessionID, AgentID: v.cfg.AgentID}, lludp.FlagReliable, now)
		}
	}
}

// childSend numbers and sends a message on a child circuit, with its
// pending acks appended.
func (v *Viewer) childSend(c *childCircuit, m lludp.Typed, flags lludp.Flags, now time.Time) {
	c.seq++
	acks := c.acks[:min(len(c.acks), 250)]
	b, err := lludp.AppendMessage(nil, lludp.Header{Flags: flags, Sequence: c.seq}, m, acks)
	if err != nil {
		v.log.Error("encode", "err", err)
		return
	}
	c.acks = c.acks[len(acks):]
	if flags.Reliable() {
		plain, _ := lludp.AppendMessage(nil, lludp.Header{Flags: flags | lludp.FlagResent, Sequence: c.seq}, m, nil)
		c.unacked[c.seq] = &pendingReliable{datagram: plain, sentAt: now}
		v.reliable.Sent++
	}
	v.childWrite(c, b, now)
}

func (v *Viewer) childWrite(c *childCircuit, b []byte, now time.Time) {
	v.conn.WriteToUDPAddrPort(b, c.sim)
	v.tracker.Observe(lludp.Datagram{At: now, Src: v.self, Dst: c.sim, Payload: b})
}

// handleChild processes one datagram from a child region.
func (v *Viewer) handleChild(c *childCircuit, d inbound) {
	v.tracker.Observe(lludp.Datagram{At: d.at, Src: c.sim, Dst: v.self, Payload: d.data})
	v.last = d.at
	p := &v.packet
	if p.DecodeFromBytes(d.data) != nil {
		return
	}
	for i := range p.Acks.Len() {
		v.childAcked(c, p.Acks.At(i))
	}
	if p.Flags.Reliable() {
		if len(c.acks) == 0 {
			c.ackSince = d.at
		}
		c.acks = append(c.acks, p.Sequence)
	}
	switch p.ID {
	case lludp.PacketAckID:
		var m lludp.PacketAck
		if p.Unmarshal(&m) == nil {
			for _, id := range m.IDs {
				v.childAcked(c, id)
			}
		}
	case lludp.StartPingCheckID:
		var m lludp.StartPingCheck
		if p.Unmarshal(&m) == nil {
			v.childSend(c, &lludp.CompletePingCheck{PingID: m.PingID}, 0, d.at)
		}
	case lludp.RegionHandshakeID:
		v.childSend(c, &lludp.RegionHandshakeReply{AgentData: v.agent(), Flags: 3}, lludp.FlagReliable|lludp.FlagZeroCoded, d.at)
		c.handshaken = true
	}
}

// childAcked removes an acknowledged packet; the ack of UseCircuitCode
// logs the circuit in (and, unlike the root's, asks for nothing more).
func (v *Viewer) childAcked(c *childCircuit, seq uint32) {
	if _, ok := c.unacked[seq]; !ok {
		return
	}
	delete(c.unacked, seq)
	v.reliable.Acked++
	if seq == 1 {
		c.loggedIn = true
	}
}

// childHousekeep pings, flushes acks and resends on every child circuit.
func (v *Viewer) childHousekeep(now time.Time) {
	for _, c := range v.children {
		if c.loggedIn && now.Sub(c.lastPing) >= v.cfg.PingInterval {
			c.pingID++
			v.childSend(c, &lludp.StartPingCheck{PingID: c.pingID, OldestUnacked: c.seq}, 0, now)
			c.lastPing = now
		}
		if len(c.acks) > 0 && now.Sub(c.ackSince) >= v.cfg.AckDelay {
			for len(c.acks) > 0 {
				n := min(len(c.acks), 251)
				c.seq++
				b, _ := lludp.AppendMessage(nil, lludp.Header{Sequence: c.seq}, &lludp.PacketAck{IDs: c.acks[:n]}, nil)
				v.childWrite(c, b, now)
				c.acks = c.acks[n:]
			}
		}
		if len(c.unacked) == 0 {
			continue
		}
		v.resendDue(c.unacked, v.tracker.Circuit(circuit.Key{Viewer: v.self, Sim: c.sim}), now,
			func(b []byte, now time.Time) { v.childWrite(c, b, now) })
	}
}

// closeChildren sends CloseCircuit on every child circuit opened.
func (v *Viewer) closeChildren(now time.Time) {
	for _, c := range v.children {
		if c.opened {
			v.childSend(c, &lludp.CloseCircuit{}, 0, now)
		}
	}
}

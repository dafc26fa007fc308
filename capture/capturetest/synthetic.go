package capturetest

import (
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
)

// Session describes synthetic viewer traffic for benchmarks: Circuits
// circuits, each a stream of simulator datagrams (a mix of object updates,
// terse updates, layer data and image packets) with random loss and
// spurious resends, and the viewer's agent updates, acks and pings.
type Session struct {
	Circuits  int
	Datagrams int     // in all
	Loss      float64 // probability a simulator datagram is missing
	Seed      uint64
}

// Datagrams generates the session's datagrams in time order.
func (s Session) Generate() ([]Datagram, error) {
	rng := rand.New(rand.NewPCG(s.Seed, 1))
	start := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	sim := netip.MustParseAddrPort("10.0.0.1:9000")
	type circ struct {
		viewer      netip.AddrPort
		down, up    uint32
		agent       lludp.AgentData
		lastPingsID uint8
	}
	cs := make([]circ, max(s.Circuits, 1))
	for i := range cs {
		cs[i].viewer = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 1, byte(i)}), uint16(40000+i))
		cs[i].agent = lludp.AgentData{AgentID: lludp.UUID{byte(i), 1}, SessionID: lludp.UUID{byte(i), 2}}
	}
	messages := []struct {
		m     lludp.Typed
		flags lludp.Flags
	}{
		{&lludp.ImprovedTerseObjectUpdate{RegionHandle: 1, Objects: []lludp.TerseObjectData{{Data: make([]byte, 60)}, {Data: make([]byte, 60)}}}, lludp.FlagReliable | lludp.FlagZeroCoded},
		{&lludp.ObjectUpdate{RegionHandle: 1, Objects: []lludp.ObjectData{{ID: 7, Text: []byte("x\x00")}}}, lludp.FlagReliable | lludp.FlagZeroCoded},
		{&lludp.LayerData{Type: lludp.LayerLand, Data: make([]byte, 900)}, lludp.FlagReliable},
		{&lludp.ImagePacket{Packet: 3, Data: make([]byte, 1000)}, lludp.FlagReliable},
	}
	var out []Datagram
	at := start
	for len(out) < s.Datagrams {
		c := &cs[rng.IntN(len(cs))]
		at = at.Add(time.Duration(rng.IntN(200)) * time.Microsecond)
		var b []byte
		var err error
		switch r := rng.IntN(100); {
		case r < 8: // the viewer: agent updates, acks, pings
			c.up++
			var m lludp.Typed = &lludp.AgentUpdate{AgentData: c.agent, Far: 64}
			switch {
			case r == 0:
				c.lastPingsID++
				m = &lludp.StartPingCheck{PingID: c.lastPingsID}
			case r < 3:
				m = &lludp.PacketAck{IDs: []uint32{c.down}}
			}
			b, err = lludp.AppendMessage(nil, lludp.Header{Flags: lludp.FlagZeroCoded, Sequence: c.up}, m, nil)
			if err == nil {
				out = append(out, Datagram{At: at, Src: c.viewer, Dst: sim, Payload: b})
			}
		case r == 8: // the simulator answers a ping
			c.down++
			b, err = lludp.AppendMessage(nil, lludp.Header{Sequence: c.down}, &lludp.CompletePingCheck{PingID: c.lastPingsID}, nil)
			if err == nil {
				out = append(out, Datagram{At: at.Add(30 * time.Millisecond), Src: sim, Dst: c.viewer, Payload: b})
			}
		default:
			c.down++
			msg := messages[rng.IntN(len(messages))]
			flags := msg.flags
			seq := c.down
			if rng.IntN(50) == 0 && c.down > 10 { // a spurious resend
				flags |= lludp.FlagResent
				seq = c.down - uint32(rng.IntN(5)) - 1
				c.down--
			}
			if rng.Float64() < s.Loss {
				continue
			}
			b, err = lludp.AppendMessage(nil, lludp.Header{Flags: flags, Sequence: seq}, msg.m, nil)
			if err == nil {
				out = append(out, Datagram{At: at, Src: sim, Dst: c.viewer, Payload: b})
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

package gateway

import (
	"net/netip"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/circuit"
)

// A simulation of one region, the gateway's Core and viewers on virtual
// time, in 1 ms steps: the region produces datagrams at the throttle it
// was last told, as OpenSim does, with resends after 1 s; the gateway
// schedules and measures; each viewer is behind its own link emulator
// pipes (internal/lab/link), acks what it receives every 100 ms in a
// PacketAck as the Second Life viewer does (AckCollectTime), answers the
// region's pings at once and sends ten AgentUpdates a second. The pipes
// are the ground truth: which of the region's reliable originals they
// dropped, and when.

const simStep = time.Millisecond

// simGateway is the gateway's public address in the simulation.
var simGateway = netip.MustParseAddrPort("127.0.0.1:9000")

var simT0 = time.Unix(1_000_000, 0)

// simKind is a kind of region datagram: message, size, reliability.
type simKind struct {
	id       lludp.MessageID
	size     int
	reliable bool
}

// simMix is what the simulated region sends, in turn: textures, object
// updates, terrain, and unreliable avatar updates.
var simMix = []simKind{
	{lludp.ImagePacketID, 1100, true},
	{lludp.ObjectUpdateID, 450, true},
	{lludp.ImprovedTerseObjectUpdateID, 120, false},
	{lludp.ObjectUpdateID, 380, true},
	{lludp.LayerDataID, 700, true},
	{lludp.ImagePacketID, 1100, true},
	{lludp.ImprovedTerseObjectUpdateID, 120, false},
}

// simWindow counts after the warm-up: bytes delivered, reliable
// originals sent and dropped.
type simWindow struct {
	bytes            uint64
	originals        uint64
	dropped          []time.Time
	from             time.Time
	deliveredOrigins uint64
	payload          float64
}

type simDatagram struct {
	at time.Time
	b  []byte
}

type simUnacked struct {
	b  []byte
	at time.Time
}

// simViewer is one viewer and the region's state for its circuit.
type simViewer struct {
	addr netip.AddrPort
	gv   *Viewer
	ask  ratecalc.Rate
	code uint32
	// The region's side.
	regionRate ratecalc.Rate
	tokens     float64
	seq        uint32
	next       int
	unacked    map[uint32]simUnacked
	order      []uint32 // unacked sequence numbers, oldest send first
	pingID     uint8
	// The link.
	down, up       *link.Pipe
	toViewer       []simDatagram
	toGateway      []simDatagram
	droppedAt      []time.Time // departures of reliable originals the down pipe dropped
	originalsSent  uint64
	delivered      uint64 // bytes delivered to the viewer
	deliveredPkts  uint64
	deliveredBytes float64 // payload bytes, for the mean s
	after          simWindow
	// The client side (simConfig.sidecar).
	tracker *circuit.Tracker
	ctl     ratecalc.Controller
	asks    []ratecalc.Rate // the sidecar's requests
	inForce []ratecalc.Rate // the gateway's rate in force at each of its decisions
	// The viewer's side.
	upSeq   uint32
	acks    []uint32
	lastAck time.Time
	lastUpd time.Time
}

type simConfig struct {
	loss    float64
	delay   time.Duration // one way
	viewers []ratecalc.Rate
	ctl     throttle.ControllerName
	segment throttle.Segment
	scene   int64         // bytes/s; 0: the scheduler's default
	hold    ratecalc.Rate // if set, the controller's Min and Max: the rate held there
	// sidecar, if set, runs fairgrid's client side at each viewer as well
	// (the sidecar or the proxy): it measures what the viewer receives
	// with the circuit tracker and asks for its own fair rate every 5 s,
	// half an interval after the gateway's decisions.
	sidecar throttle.ControllerName
	run     time.Duration
	warmup  time.Duration // what the viewers receive before this is not counted in After
	seed    uint64
}

type simResult struct {
	viewers []*simViewer
	core    *Core
	stats   []CircuitStats
}

func runSim(t *testing.T, sc simConfig) simResult {
	t.Helper()
	core, err := NewCore(Config{Routes: []Route{{Listen: netip.MustParseAddrPort("127.0.0.1:9000"), Region: netip.MustParseAddrPort("10.0.0.1:9000")}},
		Scheduler: opensim.Config{SceneMax: sc.scene}, Control: throttle.Config{Controller: sc.ctl, Segment: sc.segment, Min: sc.hold, Max: sc.hold}})
	if err != nil {
		t.Fatal(err)
	}
	var vs []*simViewer
	for i, ask := range sc.viewers {
		down, err1 := link.NewPipe(link.PipeConfig{Loss: sc.loss, Delay: sc.delay}, sc.seed+uint64(2*i))
		up, err2 := link.NewPipe(link.PipeConfig{Loss: sc.loss, Delay: sc.delay}, sc.seed+uint64(2*i+1))
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		sv := &simViewer{addr: netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(i + 1)}), 5000), ask: ask,
			code: uint32(100 + i), regionRate: 30_000, after: simWindow{from: simT0.Add(sc.warmup)}, unacked: map[uint32]simUnacked{}, down: down, up: up}
		if sc.sidecar != "" {
			tc := throttle.Config{Controller: sc.sidecar}
			sv.tracker = circuit.NewTracker(circuit.Config{Sims: []netip.AddrPort{simGateway}, NewController: func(circuit.Key) ratecalc.Controller {
				ctl, err := tc.NewController(sc.sidecar)
				if err != nil {
					t.Fatal(err)
				}
				sv.ctl = ctl
				return ctl
			}})
		}
		vs = append(vs, sv)
	}
	agent := func(v *simViewer) lludp.AgentData {
		return lludp.AgentData{AgentID: lludp.UUID{1, byte(v.code)}, SessionID: lludp.UUID{2, byte(v.code)}}
	}
	// The viewer's datagrams go up its pipe to the gateway.
	viewerSend := func(v *simViewer, m lludp.Typed, now time.Time) {
		v.upSeq++
		b, err := lludp.AppendMessage(nil, lludp.Header{Sequence: v.upSeq}, m, nil)
		if err != nil {
			t.Fatal(err)
		}
		if v.tracker != nil {
			v.tracker.Observe(lludp.Datagram{At: now, Src: v.addr, Dst: simGateway, Payload: b})
		}
		if at, cause := v.up.Offer(len(b)+28, now); cause == link.Forwarded {
			v.toGateway = append(v.toGateway, simDatagram{at, b})
		}
	}
	// The region hears what the gateway passes on at once (loopback).
	var packet lludp.Packet
	regionHears := func(v *simViewer, b []byte) {
		if packet.DecodeFromBytes(b) != nil {
			return
		}
		switch packet.ID {
		case lludp.AgentThrottleID:
			var m lludp.AgentThrottle
			if packet.Unmarshal(&m) == nil {
				v.regionRate = ratecalc.RateFromBits(m.Total())
			}
		case lludp.PacketAckID:
			var m lludp.PacketAck
			if packet.Unmarshal(&m) == nil {
				for _, id := range m.IDs {
					delete(v.unacked, id)
				}
			}
		}
	}
	var replies []Reply
	toGateway := func(v *simViewer, b []byte, now time.Time) {
		gv, out, drop := core.FromViewer(0, v.addr, b, now)
		// The gateway's probe of the viewer's address goes down its pipe.
		replies = core.Replies(replies[:0])
		for _, r := range replies {
			if at, cause := v.down.Offer(len(r.B)+28, now); cause == link.Forwarded {
				v.toViewer = append(v.toViewer, simDatagram{at, r.B})
			}
		}
		if drop == Passed {
			if v.gv == nil {
				// Proven: the viewer's login goes on, as a viewer's does
				// once its UseCircuitCode is acked.
				ad := agent(v)
				defer viewerSend(v, &lludp.AgentThrottle{AgentData: ad, CircuitCode: v.code, Throttles: throttle.ViewerSplit(v.ask)}, now)
				defer viewerSend(v, &lludp.CompleteAgentMovement{AgentData: ad, CircuitCode: v.code}, now)
			}
			v.gv = gv
			regionHears(v, out)
		}
	}
	departs := func(v *simViewer, b []byte, now time.Time) {
		h, _, _, _ := lludp.ParseHeader(b)
		at, cause := v.down.Offer(len(b)+28, now)
		counting := !now.Before(v.after.from)
		if cause == link.Forwarded {
			v.toViewer = append(v.toViewer, simDatagram{at, b})
		} else if h.Flags.Reliable() && !h.Flags.Resent() {
			v.droppedAt = append(v.droppedAt, now)
			if counting {
				v.after.dropped = append(v.after.dropped, now)
			}
		}
		if h.Flags.Reliable() && !h.Flags.Resent() {
			v.originalsSent++
			if counting {
				v.after.originals++
			}
		}
	}
	regionSend := func(v *simViewer, b []byte, now time.Time) {
		if v.gv == nil {
			return
		}
		b = append([]byte(nil), b...) // the core's from now on: it renumbers it
		if sendNow, _ := core.FromRegion(v.gv, b, now); sendNow {
			departs(v, b, now)
		}
	}
	byViewer := map[*Viewer]*simViewer{}
	var out [64]Out
	var asserts []Assert
	var closed []*Viewer
	end := simT0.Add(sc.run)
	lastPing, lastTick := simT0, simT0
	for now := simT0; now.Before(end); now = now.Add(simStep) {
		for _, v := range vs {
			if v.gv == nil && now.Sub(simT0)%time.Second == 0 {
				// The login, resent each second until the circuit opens
				// (the probe or its ack may be lost on the link).
				ad := agent(v)
				viewerSend(v, &lludp.UseCircuitCode{Code: v.code, SessionID: ad.SessionID, AgentID: ad.AgentID}, now)
			}
			// Up: datagrams reaching the gateway.
			for len(v.toGateway) > 0 && !v.toGateway[0].at.After(now) {
				toGateway(v, v.toGateway[0].b, now)
				v.toGateway = v.toGateway[1:]
			}
			if v.gv != nil {
				byViewer[v.gv] = v
			}
			// The region: resends, then new datagrams at its throttle.
			if v.gv != nil {
				for len(v.order) > 0 {
					seq := v.order[0]
					u, ok := v.unacked[seq]
					if ok && now.Sub(u.at) < time.Second {
						break
					}
					v.order = v.order[1:]
					if !ok {
						continue // acked
					}
					b := append([]byte(nil), u.b...)
					b[0] |= byte(lludp.FlagResent)
					v.unacked[seq] = simUnacked{u.b, now}
					v.order = append(v.order, seq)
					v.tokens -= float64(len(b))
					regionSend(v, b, now)
				}
				v.tokens = min(v.tokens+float64(v.regionRate)*simStep.Seconds(), float64(v.regionRate)*0.01+1500)
				for v.tokens > 0 && len(v.unacked) < 2000 {
					k := simMix[v.next%len(simMix)]
					v.next++
					v.seq++
					var flags lludp.Flags
					if k.reliable {
						flags = lludp.FlagReliable
					}
					payload := lludp.AppendMessageNumber(nil, k.id)
					payload = append(payload, make([]byte, k.size-len(payload)-lludp.HeaderSize)...)
					b := lludp.AppendPacket(nil, lludp.Header{Flags: flags, Sequence: v.seq}, payload, nil)
					if k.reliable {
						v.unacked[v.seq] = simUnacked{b, now}
						v.order = append(v.order, v.seq)
					}
					v.tokens -= float64(len(b))
					regionSend(v, b, now)
				}
				if now.Sub(lastPing) >= 5*time.Second {
					v.seq++
					v.pingID++
					b, _ := lludp.AppendMessage(nil, lludp.Header{Sequence: v.seq}, &lludp.StartPingCheck{PingID: v.pingID}, nil)
					regionSend(v, b, now)
				}
			}
		}
		if now.Sub(lastPing) >= 5*time.Second {
			lastPing = now
		}
		// The gateway sends what the scheduler lets go.
		for {
			n, _ := core.Next(out[:], now)
			for _, o := range out[:n] {
				departs(byViewer[o.V], o.B, now)
			}
			if n < len(out) {
				break
			}
		}
		if now.Sub(lastTick) >= 100*time.Millisecond {
			lastTick = now
			asserts, closed = core.Tick(now, asserts[:0], closed[:0])
			for _, a := range asserts {
				regionHears(byViewer[a.V], a.B)
			}
			for _, v := range vs {
				if v.gv != nil && v.gv.rate > 0 && now.Sub(simT0)%(5*time.Second) < 100*time.Millisecond {
					v.inForce = append(v.inForce, v.gv.rate)
				}
			}
		}
		// Down: the viewer receives, acks and answers pings.
		for _, v := range vs {
			for len(v.toViewer) > 0 && !v.toViewer[0].at.After(now) {
				b := v.toViewer[0].b
				v.toViewer = v.toViewer[1:]
				h, _, _, _ := lludp.ParseHeader(b)
				if v.tracker != nil {
					v.tracker.Observe(lludp.Datagram{At: now, Src: simGateway, Dst: v.addr, Payload: b})
				}
				v.delivered += uint64(len(b))
				if !now.Before(v.after.from) {
					v.after.bytes += uint64(len(b))
					if !h.Flags.Resent() {
						v.after.deliveredOrigins++
						v.after.payload += float64(len(b))
					}
				}
				if h.Flags.Reliable() {
					v.acks = append(v.acks, h.Sequence)
				}
				if !h.Flags.Resent() {
					v.deliveredPkts++
					v.deliveredBytes += float64(len(b))
				}
				if h.ID == lludp.StartPingCheckID {
					viewerSend(v, &lludp.CompletePingCheck{PingID: b[7]}, now)
				}
			}
			if now.Sub(v.lastAck) >= 100*time.Millisecond {
				v.lastAck = now
				for len(v.acks) > 0 {
					n := min(len(v.acks), 251)
					viewerSend(v, &lludp.PacketAck{IDs: v.acks[:n]}, now)
					v.acks = v.acks[n:]
				}
			}
			// The client side decides half an interval after the gateway.
			if v.ctl != nil && now.Sub(simT0)%(5*time.Second) == 2500*time.Millisecond {
				r := throttle.Config{}.Clamp(v.ctl.Rate(now))
				v.asks = append(v.asks, r)
				viewerSend(v, &lludp.AgentThrottle{AgentData: agent(v), CircuitCode: v.code, Throttles: throttle.ViewerSplit(r)}, now)
			}
			if now.Sub(v.lastUpd) >= 100*time.Millisecond {
				v.lastUpd = now
				ad := agent(v)
				viewerSend(v, &lludp.AgentUpdate{AgentData: ad}, now)
			}
		}
	}
	return simResult{viewers: vs, core: core, stats: core.Circuits()}
}

// truthEvents groups the dropped originals' departure times into loss
// events as RFC 5348 §5.2 does, with the link's round trip.
func truthEvents(dropped []time.Time, rtt time.Duration) int {
	events := 0
	var start time.Time
	for _, at := range dropped {
		if events == 0 || at.Sub(start) > rtt {
			events++
			start = at
		}
	}
	return events
}

// seeds are the simulations' seeds: all of them, or the first under the
// race detector, which runs the simulations ten times slower and has
// nothing to find in their single goroutine that one seed would not.
func seeds(all ...uint64) []uint64 {
	if raceBuild {
		return all[:1]
	}
	return all
}

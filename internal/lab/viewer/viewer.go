package viewer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim/region"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle/circuit"
	"github.com/fairgrid/fairgrid/throttle/proxy/socks5"
)

// Config configures a synthetic viewer. Zero fields take the defaults
// named, which follow the Second Life viewer (protocol.md §9.1–§9.2, §11.2).
type Config struct {
	Sim   netip.AddrPort
	Local netip.AddrPort // default: an ephemeral port on the sim's side of loopback
	// Identity; AgentID and SessionID default to values derived from
	// CircuitCode, which defaults to 1.
	AgentID, SessionID lludp.UUID
	CircuitCode        uint32
	// Throttle is the total the viewer asks for, split the viewer's way.
	// Default 1,500 kbps (1024 bit/s units): the classic viewer's request.
	Throttle ratecalc.Rate
	// FollowViewerRule makes the viewer adjust its throttle every 5 s by
	// the stock ±10 % rule, on the loss it measures itself.
	FollowViewerRule bool
	// AckDelay is how long acks wait to be batched (AckCollectTime, 100 ms).
	AckDelay time.Duration
	// AgentUpdateInterval: the avatar's state stream (default 100 ms: 10 Hz).
	AgentUpdateInterval time.Duration
	// PingInterval (default 5 s, circuit_heartbeat_interval).
	PingInterval time.Duration
	// Stress makes the viewer move once a second and time the region's
	// echo of each movement (region stress mode).
	Stress bool
	// StressWorld is the side, in metres, of the square the viewer walks
	// in under stress (default 256, one region). The density sweep makes
	// it larger as the viewers grow in number (WorldForNeighbours).
	StressWorld float32
	// SOCKS5, if set, is a SOCKS 5 proxy's address ("host:port"): every
	// datagram goes through a UDP association with it, wrapped in the
	// RFC 1928 §7 header, as the Second Life viewer sends with "Use SOCKS 5
	// proxy for UDP traffic" (llproxy.cpp). SOCKS5Auth, if set, is the
	// username and password it asks for (RFC 1929).
	SOCKS5     string
	SOCKS5Auth *socks5.Auth
	// Children are neighbour regions: once the root circuit to Sim is
	// complete the viewer opens a child circuit to each, from the same
	// socket (child.go). Not with Stress.
	Children []netip.AddrPort
}

// DefaultThrottle is the classic viewer's 1,500 kbps request.
var DefaultThrottle = ratecalc.RateFromBits(1500 * 1024)

func (c Config) withDefaults() Config {
	c.CircuitCode = cmp.Or(c.CircuitCode, 1)
	if c.AgentID.IsZero() {
		c.AgentID = lludp.UUID{0xA6, byte(c.CircuitCode >> 24), byte(c.CircuitCode >> 16), byte(c.CircuitCode >> 8), byte(c.CircuitCode), 1}
	}
	if c.SessionID.IsZero() {
		c.SessionID = lludp.UUID{0x5E, byte(c.CircuitCode >> 24), byte(c.CircuitCode >> 16), byte(c.CircuitCode >> 8), byte(c.CircuitCode), 2}
	}
	c.Throttle = cmp.Or(c.Throttle, DefaultThrottle)
	c.AckDelay = cmp.Or(c.AckDelay, 100*time.Millisecond)
	if c.AgentUpdateInterval == 0 {
		c.AgentUpdateInterval = 100 * time.Millisecond
		if c.Stress {
			c.AgentUpdateInterval = time.Second
		}
	}
	c.PingInterval = cmp.Or(c.PingInterval, 5*time.Second)
	c.StressWorld = cmp.Or(c.StressWorld, DefaultStressWorld)
	return c
}

// The viewer's reliable-send timeout: max(1 s, 5 × ping), 3 retries
// (message.h LL_RELIABLE_TIMEOUT_FACTOR, LL_DEFAULT_RELIABLE_RETRIES).
const (
	minReliableTimeout = time.Second
	reliableRetries    = 3
	ruleInterval       = 5 * time.Second // DYNAMIC_UPDATE_DURATION
)

type pendingReliable struct {
	datagram []byte
	sentAt   time.Time
	retries  int
}

// Viewer is a synthetic viewer: it logs in with UseCircuitCode, completes
// the handshake, streams AgentUpdate, pings, acks, asks for its throttle,
// and measures what it receives with the same circuit tracker the sidecar
// uses.
type Viewer struct {
	cfg  Config
	log  *slog.Logger
	conn datagramConn
	self netip.AddrPort

	// Close releases the socket once, whoever asks first (Close or Run's
	// return); closed ends a Run in progress.
	closeOnce sync.Once
	closeErr  error
	closed    chan struct{}

	mu         sync.Mutex // guards everything below
	tracker    *circuit.Tracker
	rule       *ratecalc.Viewer
	seq        uint32
	pingID     uint8
	acks       []uint32
	ackSince   time.Time
	unacked    map[uint32]*pendingReliable
	loggedIn   bool
	loggedOut  bool // the region answered our LogoutRequest
	moved      bool
	served     chan struct{} // closed at the first data after login
	servedOnce sync.Once
	throttle   ratecalc.Rate
	start      time.Time
	last       time.Time
	packet     lludp.Packet
	// when the AgentUpdate stream, pings and the throttle rule last ran
	lastUpdate, lastPing, lastRule time.Time
	// stress mode
	pos        lludp.Vector3
	moves      uint32
	moveSent   [16]time.Time // by counter mod 16
	echoes     []time.Duration
	terses     uint64    // terse updates received in stress mode, anyone's
	stressFrom time.Time // movements before this are not timed
	terse      lludp.ImprovedTerseObjectUpdate
	reliable   Reliability
	// child circuits (child.go); childBySim is fixed at construction, so
	// the reader may look a source up without the lock
	children   []*childCircuit
	childBySim map[netip.AddrPort]*childCircuit
}

// datagramConn is the viewer's socket: a plain UDP socket, or a UDP
// association through a SOCKS 5 proxy.
type datagramConn interface {
	ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error)
	WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error)
	LocalAddr() net.Addr
	Close() error
}

// socksDialTimeout bounds the handshake with the proxy: it runs before
// the viewer's first datagram, so a dead proxy is reported, not waited on.
const socksDialTimeout = 10 * time.Second

// Reliability counts the viewer's reliable packets: a path that breaks
// acks (a proxy rewriting datagrams, say) shows as resends and give-ups.
type Reliability struct {
	Sent    uint64 // reliable packets sent, each once
	Acked   uint64 // of those, acknowledged
	Resent  uint64 // copies resent for want of an ack
	GaveUp  uint64 // dropped unacked after the retries
	Pending int    // sent and still waiting for an ack
}

// Reliability returns the counts so far.
func (v *Viewer) Reliability() Reliability {
	v.mu.Lock()
	defer v.mu.Unlock()
	r := v.reliable
	r.Pending = len(v.unacked)
	return r
}

// New binds the viewer's socket; Run logs in and runs.
func New(cfg Config, log *slog.Logger) (*Viewer, error) {
	cfg = cfg.withDefaults()
	if !cfg.Sim.IsValid() {
		return nil, errors.New("viewer: simulator address required")
	}
	if err := checkChildren(cfg); err != nil {
		return nil, err
	}
	local := cfg.Local
	if !local.IsValid() {
		local = netip.AddrPortFrom(cfg.Sim.Addr(), 0)
		if cfg.Sim.Addr().IsUnspecified() {
			local = netip.AddrPort{}
		}
	}
	conn, err := dial(cfg, local)
	if err != nil {
		return nil, fmt.Errorf("viewer: %w", err)
	}
	v, err := newViewer(cfg, log, conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return v, nil
}

// newViewer builds a viewer around a socket already open: its own, or
// its address on a stress fleet's shared socket (sharedfleet_linux.go).
// cfg has its defaults.
func newViewer(cfg Config, log *slog.Logger, conn datagramConn) (*Viewer, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	v := &Viewer{cfg: cfg, log: log, conn: conn, self: conn.LocalAddr().(*net.UDPAddr).AddrPort(),
		unacked: map[uint32]*pendingReliable{}, throttle: cfg.Throttle, served: make(chan struct{}), closed: make(chan struct{})}
	v.children, v.childBySim = newChildren(cfg.Children)
	tcfg := circuit.Config{Sims: append([]netip.AddrPort{cfg.Sim}, cfg.Children...)}
	if cfg.FollowViewerRule {
		// The stock rule steps 10 % of the preference, which the request is
		// 1.5× of (protocol.md §7.3).
		rule, err := ratecalc.NewViewer(ratecalc.ViewerConfig{Setting: cfg.Throttle / 1.5})
		if err != nil {
			return nil, err
		}
		v.rule = rule
		tcfg.NewController = func(circuit.Key) ratecalc.Controller { return rule }
	}
	v.tracker = circuit.NewTracker(tcfg)
	return v, nil
}

// dial opens the viewer's socket: bound to local, or an association
// through the configured proxy.
func dial(cfg Config, local netip.AddrPort) (datagramConn, error) {
	if cfg.SOCKS5 != "" {
		ctx, cancel := context.WithTimeout(context.Background(), socksDialTimeout)
		defer cancel()
		return socks5.DialUDP(ctx, cfg.SOCKS5, cfg.SOCKS5Auth)
	}
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(local))
	if err != nil {
		return nil, err
	}
	conn.SetReadBuffer(2 << 20)
	return conn, nil
}

// maxChildren bounds Config.Children: a region has eight neighbours, and
// a viewer with a long draw distance sees a few rings of them.
const maxChildren = 64

// checkChildren refuses child regions that are not addresses, repeat, are
// the root's, or come with Stress.
func checkChildren(cfg Config) error {
	if len(cfg.Children) > maxChildren {
		return fmt.Errorf("viewer: %d child regions: want at most %d", len(cfg.Children), maxChildren)
	}
	if len(cfg.Children) > 0 && cfg.Stress {
		return errors.New("viewer: child regions do not apply to stress mode")
	}
	seen := map[netip.AddrPort]bool{cfg.Sim: true}
	for _, c := range cfg.Children {
		if !c.IsValid() || c.Port() == 0 {
			return fmt.Errorf("viewer: child region %v: want ip:port", c)
		}
		if seen[c] {
			return fmt.Errorf("viewer: child region %v named twice, or the root's", c)
		}
		seen[c] = true
	}
	return nil
}

// Addr is the viewer's UDP endpoint.
func (v *Viewer) Addr() netip.AddrPort { return v.self }

// Close releases the viewer's socket, whether Run ran or not, and ends a
// Run in progress without logging out. Run's return closes it too; Close
// may be called any number of times, and returns the socket's close
// error each time.
func (v *Viewer) Close() error {
	v.closeOnce.Do(func() {
		close(v.closed)
		v.closeErr = v.conn.Close()
	})
	return v.closeErr
}

// Run logs in, then serves until ctx ends, and logs out; or until Close.
func (v *Viewer) Run(ctx context.Context) error {
	defer v.Close()
	in := make(chan inbound, 1024)
	go v.read(in)
	v.login(time.Now())
	tick := 10 * time.Millisecond
	if v.cfg.Stress {
		tick = 50 * time.Millisecond // thousands of viewers share the machine
	}
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			v.logout(in)
			return nil
		case <-v.closed:
			return nil
		case d := <-in:
			v.mu.Lock()
			v.dispatch(d)
			v.mu.Unlock()
		case now := <-ticker.C:
			v.mu.Lock()
			if v.moved && now.Sub(v.lastUpdate) >= v.cfg.AgentUpdateInterval {
				v.sendUpdate(now)
				v.lastUpdate = now
			}
			v.housekeep(now)
			v.mu.Unlock()
		}
	}
}

// login sends UseCircuitCode: the start of the handshake.
func (v *Viewer) login(now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.start = now
	v.sendReliable(&lludp.UseCircuitCode{Code: v.cfg.CircuitCode, SessionID: v.cfg.SessionID, AgentID: v.cfg.AgentID}, 0, now)
}

// dispatch hands a datagram to the circuit it came on. v.mu is held.
func (v *Viewer) dispatch(d inbound) {
	if d.from.IsValid() && d.from != v.cfg.Sim {
		if c := v.childBySim[d.from]; c != nil {
			v.handleChild(c, d)
		}
		return
	}
	v.handle(d)
}

// housekeep does what is due by now apart from the AgentUpdate stream:
// pings, the ack flush, the throttle rule, resends, on the root circuit
// and the children. v.mu is held.
func (v *Viewer) housekeep(now time.Time) {
	if len(v.children) > 0 {
		v.childHousekeep(now)
	}
	if v.loggedIn && now.Sub(v.lastPing) >= v.cfg.PingInterval {
		v.pingID++
		v.send(&lludp.StartPingCheck{PingID: v.pingID, OldestUnacked: v.seq}, 0, now)
		v.lastPing = now
	}
	if len(v.acks) > 0 && now.Sub(v.ackSince) >= v.cfg.AckDelay {
		v.flushAcks(now)
	}
	if v.rule != nil && v.moved && now.Sub(v.lastRule) >= ruleInterval {
		if !v.lastRule.IsZero() {
			if r := v.rule.Rate(now); r != v.throttle {
				v.throttle = r
				v.sendThrottle(now)
			}
		}
		v.lastRule = now
	}
	if len(v.unacked) > 0 {
		v.retransmit(now)
	}
}

type inbound struct {
	data []byte
	at   time.Time
	from netip.AddrPort // zero: the root's simulator
}

func (v *Viewer) read(in chan<- inbound) {
	buf := make([]byte, 65536)
	for {
		n, from, err := v.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // a refused send reports here; keep reading
		}
		if from != v.cfg.Sim && v.childBySim[from] == nil {
			continue
		}
		in <- inbound{data: append([]byte(nil), buf[:n]...), at: time.Now(), from: from}
	}
}

func (v *Viewer) agent() lludp.AgentData {
	return lludp.AgentData{AgentID: v.cfg.AgentID, SessionID: v.cfg.SessionID}
}

// observe feeds a datagram to the viewer's own measurement.
func (v *Viewer) observe(b []byte, at time.Time, up bool) {
	src, dst := v.cfg.Sim, v.self
	if up {
		src, dst = v.self, v.cfg.Sim
	}
	v.tracker.Observe(lludp.Datagram{At: at, Src: src, Dst: dst, Payload: b})
	v.last = at
}

// send numbers and sends a message, with the pending acks appended.
func (v *Viewer) send(m lludp.Typed, flags lludp.Flags, now time.Time) {
	v.seq++
	acks := v.acks[:min(len(v.acks), 250)]
	b, err := lludp.AppendMessage(nil, lludp.Header{Flags: flags, Sequence: v.seq}, m, acks)
	if err != nil {
		v.log.Error("encode", "err", err)
		return
	}
	v.acks = v.acks[len(acks):]
	if flags.Reliable() {
		// Resends carry no appended acks (the viewer stores the copy first).
		plain, _ := lludp.AppendMessage(nil, lludp.Header{Flags: flags | lludp.FlagResent, Sequence: v.seq}, m, nil)
		v.unacked[v.seq] = &pendingReliable{datagram: plain, sentAt: now}
		v.reliable.Sent++
	}
	v.write(b, now)
}

func (v *Viewer) sendReliable(m lludp.Typed, flags lludp.Flags, now time.Time) {
	v.send(m, flags|lludp.FlagReliable, now)
}

func (v *Viewer) write(b []byte, now time.Time) {
	v.conn.WriteToUDPAddrPort(b, v.cfg.Sim)
	v.observe(b, now, true)
}

// flushAcks sends pending acks as PacketAck messages.
func (v *Viewer) flushAcks(now time.Time) {
	for len(v.acks) > 0 {
		n := min(len(v.acks), 251) // LLCircuit::sendAcks
		v.seq++
		b, _ := lludp.AppendMessage(nil, lludp.Header{Sequence: v.seq}, &lludp.PacketAck{IDs: v.acks[:n]}, nil)
		v.write(b, now)
		v.acks = v.acks[n:]
	}
}

// retransmit resends the root circuit's reliable packets unacked for
// max(1 s, 5 × RTT).
func (v *Viewer) retransmit(now time.Time) {
	v.resendDue(v.unacked, v.circuit(), now, v.write)
}

// resendDue resends the reliable packets of unacked, one circuit's (tc,
// nil before its first datagram), unacked for max(1 s, 5 × its RTT), by
// write, and gives up on one after reliableRetries resends.
func (v *Viewer) resendDue(unacked map[uint32]*pendingReliable, tc *circuit.Circuit, now time.Time, write func([]byte, time.Time)) {
	timeout := minReliableTimeout
	if tc != nil && tc.RTT().Samples() > 0 {
		timeout = max(timeout, 5*tc.RTT().SRTT())
	}
	for seq, p := range unacked {
		if now.Sub(p.sentAt) < timeout {
			continue
		}
		if p.retries == reliableRetries {
			delete(unacked, seq)
			v.reliable.GaveUp++
			continue
		}
		p.retries++
		v.reliable.Resent++
		p.sentAt = now
		write(p.datagram, now)
	}
}

func (v *Viewer) circuit() *circuit.Circuit {
	return v.tracker.Circuit(circuit.Key{Viewer: v.self, Sim: v.cfg.Sim})
}

func (v *Viewer) sendThrottle(now time.Time) {
	v.sendReliable(&lludp.AgentThrottle{AgentData: v.agent(), CircuitCode: v.cfg.CircuitCode,
		Throttles: lludp.ViewerSplit(v.throttle.BitsPerSecond())}, lludp.FlagZeroCoded, now)
}

// Served is closed once the viewer has logged in and received data.
func (v *Viewer) Served() <-chan struct{} { return v.served }

// SetThrottle asks the simulator for a new total at once.
func (v *Viewer) SetThrottle(r ratecalc.Rate) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.throttle = r
	if v.moved {
		v.sendThrottle(time.Now())
	}
}

// handle processes one datagram from the simulator.
func (v *Viewer) handle(d inbound) {
	v.observe(d.data, d.at, false)
	p := &v.packet
	if p.DecodeFromBytes(d.data) != nil {
		return
	}
	for i := range p.Acks.Len() {
		v.acked(p.Acks.At(i))
	}
	if p.Flags.Reliable() {
		if len(v.acks) == 0 {
			v.ackSince = d.at
		}
		v.acks = append(v.acks, p.Sequence)
		if v.moved {
			v.servedOnce.Do(func() { close(v.served) })
		}
	}
	switch p.ID {
	case lludp.PacketAckID:
		var m lludp.PacketAck
		if p.Unmarshal(&m) == nil {
			for _, id := range m.IDs {
				v.acked(id)
			}
		}
	case lludp.StartPingCheckID:
		var m lludp.StartPingCheck
		if p.Unmarshal(&m) == nil {
			v.send(&lludp.CompletePingCheck{PingID: m.PingID}, 0, d.at)
		}
	case lludp.RegionHandshakeID:
		v.sendReliable(&lludp.RegionHandshakeReply{AgentData: v.agent(), Flags: 3}, lludp.FlagZeroCoded, d.at)
	case lludp.ImprovedTerseObjectUpdateID:
		if v.cfg.Stress && p.Unmarshal(&v.terse) == nil {
			v.terses++
			v.echo(d.at)
		}
	case lludp.LogoutReplyID:
		v.loggedOut = true
	case lludp.AgentMovementCompleteID:
		if !v.moved {
			v.moved = true
			v.sendThrottle(d.at)
			v.openChildren(d.at)
		}
	}
}

// acked removes an acknowledged reliable packet; the ack of UseCircuitCode
// is the cue to send CompleteAgentMovement.
func (v *Viewer) acked(seq uint32) {
	if _, ok := v.unacked[seq]; !ok {
		return
	}
	delete(v.unacked, seq)
	v.reliable.Acked++
	if seq == 1 && !v.loggedIn {
		v.loggedIn = true
		v.sendReliable(&lludp.CompleteAgentMovement{AgentData: v.agent(), CircuitCode: v.cfg.CircuitCode}, 0, time.Now())
	}
}

// sendUpdate sends the avatar's state; in stress mode it also moves, with a
// counter the region echoes back.
func (v *Viewer) sendUpdate(now time.Time) {
	m := &lludp.AgentUpdate{AgentData: v.agent(), Far: 64, CameraAtAxis: lludp.Vector3{1, 0, 0}}
	if v.cfg.Stress {
		w := v.cfg.StressWorld
		if v.moves == 0 { // start somewhere of the viewer's own, spread over the world
			v.pos = lludp.Vector3{spread(v.cfg.CircuitCode, 0) * w, spread(v.cfg.CircuitCode, 1) * w, 25}
		}
		v.moves++
		step := float32(v.moves%5) - 2 // a walk of a couple of metres a second
		v.pos[0] = min(max(v.pos[0]+step, 0), w)
		v.pos[1] = min(max(v.pos[1]-step/2, 0), w)
		m.CameraCenter, m.ControlFlags = v.pos, v.moves
		v.moveSent[v.moves%uint32(len(v.moveSent))] = now
	}
	v.send(m, lludp.FlagZeroCoded, now)
}

// spread maps a circuit code to a fraction in [0, 1) for each axis, the
// same every run. The codes go through MurmurHash3's 32-bit finaliser
// (fmix32): consecutive codes land independently, as uniform random
// positions would; a plain multiplicative hash spaces them on a lattice,
// more evenly than chance, and gave each a tenth fewer neighbours than the
// density sweep aims for.
func spread(code uint32, axis int) float32 {
	h := code*2 + uint32(axis)
	h ^= h >> 16
	h *= 0x85EBCA6B
	h ^= h >> 13
	h *= 0xC2B2AE35
	h ^= h >> 16
	return float32(h>>8) / (1 << 24)
}

// echo times the region's echo of the viewer's own movement.
func (v *Viewer) echo(at time.Time) {
	for _, o := range v.terse.Objects {
		e, ok := region.DecodeStressEcho(o.Data)
		if !ok || e.Mover != v.cfg.CircuitCode || e.Counter == 0 || e.Counter > v.moves || v.moves-e.Counter >= uint32(len(v.moveSent)) {
			continue
		}
		slot := &v.moveSent[e.Counter%uint32(len(v.moveSent))]
		if !slot.IsZero() && !slot.Before(v.stressFrom) {
			v.echoes = append(v.echoes, at.Sub(*slot))
			*slot = time.Time{}
		}
	}
}

// EchoDelays returns the delays from each movement to its echo.
func (v *Viewer) EchoDelays() []time.Duration {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]time.Duration(nil), v.echoes...)
}

// logoutWait bounds how long the viewer waits for LogoutReply.
const logoutWait = time.Second

// logout sends LogoutRequest and, like the viewer, waits for LogoutReply
// (at most logoutWait) before the circuit closes.
func (v *Viewer) logout(in <-chan inbound) {
	v.mu.Lock()
	moved := v.moved
	if moved {
		v.closeChildren(time.Now())
		v.sendReliable(&lludp.LogoutRequest{AgentData: v.agent()}, 0, time.Now())
	}
	v.mu.Unlock()
	if !moved {
		return
	}
	deadline := time.NewTimer(logoutWait)
	defer deadline.Stop()
	for {
		select {
		case d := <-in:
			v.mu.Lock()
			v.dispatch(d)
			done := v.loggedOut
			v.mu.Unlock()
			if done {
				return
			}
		case <-deadline.C:
			return
		}
	}
}

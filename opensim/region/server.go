package region

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim"
)

// Login is a circuit a restricted region accepts.
type Login struct {
	Code      uint32
	AgentID   lludp.UUID
	SessionID lludp.UUID
}

// Config configures a region. Zero durations take OpenSim's values
// (protocol.md §8.5–§8.7, §9.3).
type Config struct {
	Listen    netip.AddrPort
	Scheduler opensim.Config
	// Allowed, if not empty, restricts UseCircuitCode to these circuits;
	// otherwise any code is accepted (it is a test simulator).
	Allowed  []Login
	Activity Activity
	// Avatars is the number of moving avatars of the Avatars workload
	// (default DefaultAvatars, at most 10,000).
	Avatars int
	// Position is where the agent stands, as AgentMovementComplete says
	// (default 128, 128, 25: the centre); neighbours scale their throttles
	// by the distance from it (child.go).
	Position lludp.Vector3
	// Child, if set, makes the region a neighbour of the agent's region
	// (child.go): its circuits are child agents, complete on
	// RegionHandshakeReply, throttled at the root's throttle times
	// ChildThrottleFactor once the root has AddChild'ed it.
	Child *ChildConfig
	// PingInterval: the region pings each client (OpenSim: 5 s).
	PingInterval time.Duration
	// ClientTimeout: a client silent this long is dropped (OpenSim's
	// AckTimeout, 60 s).
	ClientTimeout time.Duration
	// AckFlush and AckBytes: pending acks go out every AckFlush, or at once
	// after AckBytes of reliable data (OpenSim: 500 ms, 2 × MTU = 2800 B).
	AckFlush time.Duration
	AckBytes int
	// QueueTarget is how many packets producers keep queued per channel.
	QueueTarget int
	// AckStall: with more reliable packets than this unacked, producers
	// stop feeding a client until acks bring it back to AckStall or
	// fewer; resends still leave. 0 is OpenSim's 50 (protocol.md §8.5,
	// LLUDPClient.DequeueOutgoing's AckStall, since OpenSim commit
	// 066a6fba); negative is no stall, the region's throttle alone sets
	// its rate (fairgrid's own scheduler: doc.go, "The 50-unacked
	// stall").
	AckStall int
	// Admission bounds what a flood of UseCircuitCode can cost (doc.go).
	Admission AdmissionConfig
	// Stress turns on stress mode (stress.go).
	Stress StressConfig
	// OnThrottle, if set, is called each time an AgentThrottle is applied,
	// with the client's address, the total the message asked for (bits/s,
	// as sent) and the total the scheduler applies after its clamps
	// (bytes/s). It runs on the region's loop and must not block.
	OnThrottle func(addr netip.AddrPort, requestedBPS float64, applied int64, at time.Time)
}

func (c Config) withDefaults() Config {
	c.PingInterval = cmp.Or(c.PingInterval, 5*time.Second)
	c.ClientTimeout = cmp.Or(c.ClientTimeout, 60*time.Second)
	c.AckFlush = cmp.Or(c.AckFlush, 500*time.Millisecond)
	c.AckBytes = cmp.Or(c.AckBytes, 2800)
	c.QueueTarget = cmp.Or(c.QueueTarget, 8)
	c.AckStall = cmp.Or(c.AckStall, DefaultAckStall)
	c.Avatars = cmp.Or(c.Avatars, DefaultAvatars)
	if c.Position == (lludp.Vector3{}) {
		c.Position = lludp.Vector3{128, 128, 25}
	}
	c.Stress.ViewDistance = cmp.Or(c.Stress.ViewDistance, 32)
	c.Admission = c.Admission.withDefaults()
	return c
}

// AdmissionConfig bounds the circuits that have not completed the
// handshake, and how fast each source prefix may open new ones. Zero
// fields take the defaults (doc.go says why these).
type AdmissionConfig struct {
	// MaxPending caps circuits opened by UseCircuitCode whose
	// CompleteAgentMovement has not arrived; beyond it a UseCircuitCode
	// from a new endpoint is refused, unacked, so a viewer retries it
	// (default 1024).
	MaxPending int
	// PendingTimeout closes a circuit that has not completed the
	// handshake in this long (default 10 s).
	PendingTimeout time.Duration
	// CircuitRate and CircuitBurst are the token bucket of new circuits
	// per source /24 (IPv4) or /64 (IPv6): CircuitRate a second, at most
	// CircuitBurst at once (defaults 50 and 1000).
	CircuitRate  float64
	CircuitBurst int
	// MaxPrefixes bounds the prefixes the limiter tracks; the least
	// recently used makes room (default 16384).
	MaxPrefixes int
}

// Admission defaults; doc.go explains the choice.
const (
	DefaultMaxPending     = 1024
	DefaultPendingTimeout = 10 * time.Second
	DefaultCircuitRate    = 50
	DefaultCircuitBurst   = 1000
	DefaultMaxPrefixes    = 16384
)

func (a AdmissionConfig) withDefaults() AdmissionConfig {
	a.MaxPending = cmp.Or(a.MaxPending, DefaultMaxPending)
	a.PendingTimeout = cmp.Or(a.PendingTimeout, DefaultPendingTimeout)
	a.CircuitRate = cmp.Or(a.CircuitRate, DefaultCircuitRate)
	a.CircuitBurst = cmp.Or(a.CircuitBurst, DefaultCircuitBurst)
	a.MaxPrefixes = cmp.Or(a.MaxPrefixes, DefaultMaxPrefixes)
	return a
}

func (a AdmissionConfig) validate() error {
	errs := a.check([4]string{"max pending circuits", "pending timeout", "circuit rate", "circuit burst"})
	if a.MaxPrefixes < 1 {
		errs = append(errs, fmt.Errorf("max prefixes %d: want at least 1", a.MaxPrefixes))
	}
	return errors.Join(errs...)
}

// check refuses the zero or negative MaxPending, PendingTimeout,
// CircuitRate and CircuitBurst, each error naming its field by names
// (the configuration's words, or fairgrid sim's flags).
func (a AdmissionConfig) check(names [4]string) []error {
	var errs []error
	if a.MaxPending < 1 {
		errs = append(errs, fmt.Errorf("%s %d: want at least 1", names[0], a.MaxPending))
	}
	if a.PendingTimeout <= 0 {
		errs = append(errs, fmt.Errorf("%s %v: want more than 0", names[1], a.PendingTimeout))
	}
	if !(a.CircuitRate > 0) || math.IsInf(a.CircuitRate, 0) {
		errs = append(errs, fmt.Errorf("%s %v: want a finite number of circuits a second above 0", names[2], a.CircuitRate))
	}
	if a.CircuitBurst < 1 {
		errs = append(errs, fmt.Errorf("%s %d: want at least 1", names[3], a.CircuitBurst))
	}
	return errs
}

// DefaultAckStall is OpenSim's 50-unacked stall (Config.AckStall,
// protocol.md §8.5).
const DefaultAckStall = 50

// stalled reports whether producers skip c: it has more reliable packets
// unacked than Config.AckStall allows.
func (s *Server) stalled(c *client) bool {
	return s.cfg.AckStall >= 0 && len(c.unacked) > s.cfg.AckStall
}

// OpenSim's retransmission timeout: 5 × the smoothed ping, within 250 ms
// and 3 s, 1 s before the first ping; the ping filter starts at 20 ms
// (LLUDPClient.UpdateRoundTrip; protocol.md §9.3). No backoff.
const (
	rtoFactor     = 5
	minRTO        = 250 * time.Millisecond
	maxRTO        = 3 * time.Second
	initialRTO    = time.Second
	initialPingMS = 20
	// resendScan: how often unacked packets and silent clients are
	// looked for. Visiting every client each 10 ms tick was a fifth of the
	// region's CPU at 4,000 viewers (issue #15's profile); timeouts of
	// seconds lose nothing to 100 ms.
	resendScan = 100 * time.Millisecond
	tick       = 10 * time.Millisecond
	archiveLen = 1024 // OpenSim's PacketArchive of reliable sequence numbers
	// maxDatagram bounds a datagram with appended acks: the viewer's
	// MTUBYTES (protocol.md §2.6).
	maxDatagram = 1200
	// summaryInterval: refused circuits are logged as one line at most
	// this often, never one per datagram.
	summaryInterval = 10 * time.Second
)

// outPacket is a message waiting in the scheduler or for its ack.
type outPacket struct {
	payload []byte // message number and body, uncoded
	flags   lludp.Flags
	seq     uint32 // 0 until first sent
	channel opensim.Channel
	sentAt  time.Time
	fresh   bool // counted in its producer's queue until first sent
}

type client struct {
	id       opensim.ClientID
	addr     netip.AddrPort
	login    Login
	opened   time.Time
	moved    bool // CompleteAgentMovement arrived: the handshake is complete
	seq      uint32
	unacked  map[uint32]*outPacket
	acks     []uint32
	ackBytes int
	archive  map[uint32]struct{}
	archived [archiveLen]uint32
	nextArch int
	pingID   uint8
	pingSent time.Time
	pingMS   float64
	rto      time.Duration
	lastRecv time.Time
	credit   [opensim.NumChannels]float64
	queued   [opensim.NumChannels]int
	counter  uint32
	stats    ClientInfo
	// workloads: when this client's began (zero: at the next tick) and
	// how many packets it has offered since
	workFrom    time.Time
	workMade    int64
	workSkipped uint64 // bytes due after a stall beyond what the queue holds
	// stress mode: where the client is in the grid
	cell      cellKey
	gridIndex int
	inGrid    bool
	udpAddr   *net.UDPAddr
}

// ClientInfo describes a client, for tests and metrics.
type ClientInfo struct {
	Addr      netip.AddrPort
	AgentID   lludp.UUID
	Rates     [opensim.NumChannels]int64 // applied by the scheduler, bytes/s
	Total     int64
	SentBytes [opensim.NumChannels]uint64
	Resends   uint64
	Unacked   int
	RTO       time.Duration
	Throttles uint64 // AgentThrottles applied
	// Queued is the bytes waiting per channel; Refused the bytes tail-dropped.
	Queued  [opensim.NumChannels]int64
	Refused uint64
}

// Counters of what the region refused.
type Counters struct {
	Malformed       uint64 // not LLUDP
	Orphans         uint64 // from endpoints with no circuit
	BadCircuitCodes uint64 // UseCircuitCode the region does not accept
	BadIDs          uint64 // AgentID/SessionID not the circuit's
	Duplicates      uint64 // reliable packets seen before
	TimedOut        uint64
	LoggedOut       uint64
	// Admission: UseCircuitCode refused because the pending circuits were
	// at their cap or the source prefix had used its budget; circuits
	// closed for not completing the handshake in time; prefixes evicted
	// from the limiter's table before their bucket had refilled.
	PendingFull       uint64
	RateLimited       uint64
	HandshakeTimeouts uint64
	LimiterEvictions  uint64
	// Overflow: datagrams dropped on arrival because the bytes waiting for
	// the region's loop were at their bound (maxInboundBytes).
	Overflow uint64
}

// Admission is the state of the region's admission control.
type Admission struct {
	Pending  int // circuits that have not completed the handshake
	Prefixes int // source prefixes the limiter tracks
}

// Server is a test region: an LLUDP endpoint that behaves like OpenSim
// where fairgrid's measurements depend on it, and schedules its traffic
// with package opensim.
type Server struct {
	cfg   Config
	log   *slog.Logger
	conn  *net.UDPConn
	sched *opensim.Scheduler[*outPacket]
	in    chan []inbound // batches from the reader, in arrival order
	// inbound bounds the bytes read but not yet handled: the channel's
	// 65536 slots alone would hold 4 GB of 64 KB datagrams if the loop
	// fell behind a flood of them.
	inbound inboundBudget
	packet  lludp.Packet
	out     [64]opensim.Item[*outPacket] // a batch from the scheduler

	// closeOnce closes the socket once, whoever asks first (Close or
	// Run's return); closed ends a Run in progress.
	closeOnce sync.Once
	closeErr  error
	closed    chan struct{}

	// received counts datagrams read from the socket (the reader runs
	// outside mu).
	received atomic.Uint64

	mu           sync.Mutex // guards everything below; the loop holds it while it works
	grid         *grid
	batch        *batchWriter
	stressEchoes uint64
	stressMoves  uint64
	sent         uint64 // datagrams handed to the kernel
	clients      map[netip.AddrPort]*client
	byID         map[opensim.ClientID]*client
	counters     Counters
	pending      int // clients not yet moved
	limiter      *prefixLimiter
	summarised   Counters // as of the last summary logged
	scratch      []byte   // a workload's datagram, encoded to learn its size
	// neighbours (child.go): a root's child regions, and a child's
	// latest root throttles by agent, already scaled
	children      []*Server
	rootThrottles map[lludp.UUID][lludp.NumCategories]float32
}

type inbound struct {
	from netip.AddrPort
	data []byte
	at   time.Time
}

// New binds the region's socket; Run serves.
func New(cfg Config, log *slog.Logger) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Admission.validate(); err != nil {
		return nil, fmt.Errorf("region: %w", err)
	}
	if cfg.Avatars < 0 || cfg.Avatars > maxAvatars {
		return nil, fmt.Errorf("region: %d avatars: want 0 to %d", cfg.Avatars, maxAvatars)
	}
	if int(cfg.Activity) >= len(activityNames) {
		return nil, fmt.Errorf("region: %v: no such activity", cfg.Activity)
	}
	if err := cfg.Child.validate(); err != nil {
		return nil, fmt.Errorf("region: %w", err)
	}
	for _, v := range cfg.Position {
		if math.IsNaN(float64(v)) || v < 0 || v > regionSize*16 {
			return nil, fmt.Errorf("region: position %v: want coordinates from 0 to %d m", cfg.Position, regionSize*16)
		}
	}
	sched, err := opensim.New[*outPacket](cfg.Scheduler)
	if err != nil {
		return nil, fmt.Errorf("region: %w", err)
	}
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(cfg.Listen))
	if err != nil {
		return nil, fmt.Errorf("region: listen: %w", err)
	}
	conn.SetReadBuffer(4 << 20)
	conn.SetWriteBuffer(4 << 20)
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{cfg: cfg, log: log, conn: conn, sched: sched, in: make(chan []inbound, 4096), closed: make(chan struct{}),
		grid: newGrid(cfg.Stress.ViewDistance), batch: newBatchWriter(conn),
		clients: map[netip.AddrPort]*client{}, byID: map[opensim.ClientID]*client{},
		limiter: newPrefixLimiter(cfg.Admission.CircuitRate, cfg.Admission.CircuitBurst, cfg.Admission.MaxPrefixes)}, nil
}

// Addr is the region's UDP address.
func (s *Server) Addr() netip.AddrPort { return s.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// Counters returns what the region refused.
func (s *Server) Counters() Counters {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.counters
	k.LimiterEvictions = s.limiter.evicted
	k.Overflow = s.inbound.dropped.Load()
	return k
}

// Admission returns the state of the admission control.
func (s *Server) Admission() Admission {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Admission{Pending: s.pending, Prefixes: s.limiter.len()}
}

// Clients describes the connected clients.
func (s *Server) Clients() []ClientInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ClientInfo, 0, len(s.clients))
	for _, c := range s.clients {
		info := c.stats
		info.Addr, info.AgentID, info.Unacked, info.RTO = c.addr, c.login.AgentID, len(c.unacked), c.rto
		info.Rates, info.Total, _ = s.sched.Rates(c.id)
		st, queued, _ := s.sched.ClientStats(c.id)
		info.Queued = queued
		for _, ch := range st.Channels {
			info.Refused += ch.RefusedBytes
		}
		info.Refused += c.workSkipped
		out = append(out, info)
	}
	return out
}

// Close releases the region's socket, whether Run ran or not, and ends a
// Run in progress. Run's return closes it too; Close may be called any
// number of times, and returns the socket's close error each time.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		close(s.closed)
		s.closeErr = s.conn.Close()
	})
	return s.closeErr
}

// Run serves until ctx ends or Close is called, and closes the socket
// when it returns.
func (s *Server) Run(ctx context.Context) error {
	go s.read()
	defer s.Close()
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var lastResend, lastAck, lastPing, lastSummary time.Time
	for {
		select {
		case <-ctx.Done():
			s.mu.Lock()
			s.summariseRefusals()
			s.mu.Unlock()
			return nil
		case <-s.closed:
			return nil
		case batch := <-s.in:
			s.mu.Lock()
			for _, p := range batch {
				s.inbound.release(len(p.data))
				s.handle(p)
			}
			s.mu.Unlock()
		case now := <-ticker.C:
			s.mu.Lock()
			s.produce(now)
			if now.Sub(lastResend) >= resendScan {
				s.resend(now)
				s.expire(now)
				lastResend = now
			}
			if now.Sub(lastAck) >= s.cfg.AckFlush {
				for _, c := range s.clients {
					s.flushAcks(c)
				}
				lastAck = now
			}
			if now.Sub(lastPing) >= s.cfg.PingInterval {
				s.ping(now)
				lastPing = now
			}
			if now.Sub(lastSummary) >= summaryInterval {
				s.summariseRefusals()
				lastSummary = now
			}
			s.mu.Unlock()
		case <-timer.C:
		}
		s.mu.Lock()
		wait := s.drain(time.Now())
		// Everything this turn sent leaves now, in as few system calls
		// as the kernel takes: a sendto each cost five times a datagram
		// in a sendmmsg on this machine (issue #15's profile).
		s.sent += uint64(s.batch.flush())
		s.mu.Unlock()
		if wait >= 0 {
			timer.Reset(wait)
		}
	}
}

// read hands the loop what the socket receives, a batch per wake-up: on
// Linux one recvmmsg takes up to readBatch datagrams, so a burst costs one
// system call and one channel hand-off rather than one of each per
// datagram (issue #15's profile).
func (s *Server) read() {
	r := newBatchReader(s)
	for {
		batch, err := r.read()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if len(batch) == 0 {
			continue
		}
		s.in <- batch
	}
}

// admit counts a datagram read and takes its bytes from the inbound
// budget; false: drop it.
func (s *Server) admit(n int) bool {
	s.received.Add(1)
	return s.inbound.take(n)
}

// drain sends everything the scheduler lets leave now and returns how long
// until more may (Idle: nothing queued).
func (s *Server) drain(now time.Time) time.Duration {
	for {
		n, wait := s.sched.NextBatch(s.out[:], now)
		for _, it := range s.out[:n] {
			s.sendItem(it, now)
		}
		clear(s.out[:n]) // the packets are sent: let them go
		if n < len(s.out) {
			return wait
		}
	}
}

func (s *Server) sendItem(it opensim.Item[*outPacket], now time.Time) {
	c := s.byID[it.Client]
	if c == nil {
		return
	}
	p := it.Packet
	if p.fresh {
		p.fresh = false
		c.queued[p.channel]--
	}
	if it.Resend {
		c.stats.Resends++
	}
	c.stats.SentBytes[p.channel] += uint64(len(p.payload))
	s.transmit(c, p, it.Resend, now)
}

// transmit numbers (first time only) and sends a packet; a reliable one
// waits for its ack.
func (s *Server) transmit(c *client, p *outPacket, resend bool, now time.Time) {
	flags := p.flags
	if p.seq == 0 {
		c.seq++
		p.seq = c.seq
	}
	var acks []uint32
	if resend {
		flags |= lludp.FlagResent
	} else if len(c.acks) > 0 {
		// Pending acks ride on the packet while it stays within the
		// viewer's 1200-byte MTU; resends never carry any.
		room := (maxDatagram - lludp.HeaderSize - len(p.payload) - 1) / 4
		n := min(len(c.acks), max(room, 0), lludp.MaxAppendedAcks)
		acks, c.acks = c.acks[:n], c.acks[n:]
		if len(c.acks) == 0 {
			c.ackBytes = 0
		}
	}
	b := s.queue(c.udpAddr)
	*b = lludp.AppendPacket((*b)[:0], lludp.Header{Flags: flags, Sequence: p.seq}, p.payload, acks)
	if flags.Reliable() {
		p.sentAt = now
		c.unacked[p.seq] = p
	}
}

// queue returns a buffer for a datagram to addr, which leaves with the
// loop's next flush.
func (s *Server) queue(addr *net.UDPAddr) *[]byte {
	b, flushed := s.batch.add(addr)
	s.sent += uint64(flushed)
	return b
}

// sendNow sends a message outside the scheduler, as OpenSim sends its
// Unknown category: acks, pings, the handshake.
func (s *Server) sendNow(c *client, m lludp.Typed, flags lludp.Flags, now time.Time) {
	b, err := lludp.AppendMessage(nil, lludp.Header{}, m, nil)
	if err != nil {
		s.log.Error("encode", "err", err)
		return
	}
	s.transmit(c, &outPacket{payload: b[lludp.HeaderSize:], flags: flags, channel: opensim.NoChannel}, false, now)
}

// Traffic counts the datagrams the region received and sent, and what
// stress mode did, since it started.
type Traffic struct {
	DatagramsIn  uint64 // read from the socket, refused ones included
	DatagramsOut uint64 // handed to the kernel, stress echoes included
	StressMoves  uint64 // movement AgentUpdates handled in stress mode
	StressEchoes uint64 // terse updates those sent, the mover's own included
}

// Traffic returns the counts so far.
func (s *Server) Traffic() Traffic {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Traffic{DatagramsIn: s.received.Load(), DatagramsOut: s.sent, StressMoves: s.stressMoves, StressEchoes: s.stressEchoes}
}

// SetActivity changes the load the region offers (Standing to stop
// producing all but a trickle). A workload starts anew for every client,
// its arrival burst included. An activity out of range is ignored.
func (s *Server) SetActivity(a Activity) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if int(a) >= len(activityNames) {
		return
	}
	s.cfg.Activity = a
	for _, c := range s.clients {
		c.workFrom = time.Time{} // a workload starts anew
	}
}

// SchedulerStats returns the scheduler's counters.
func (s *Server) SchedulerStats() opensim.Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sched.Stats()
}

// summariseRefusals logs, in one line, the circuits refused or closed by
// admission control since the last summary, if any were.
func (s *Server) summariseRefusals() {
	k, last := s.counters, s.summarised
	k.LimiterEvictions, k.Overflow = s.limiter.evicted, s.inbound.dropped.Load()
	if k.PendingFull == last.PendingFull && k.RateLimited == last.RateLimited && k.HandshakeTimeouts == last.HandshakeTimeouts &&
		k.LimiterEvictions == last.LimiterEvictions && k.Overflow == last.Overflow {
		return
	}
	s.log.Warn("new circuits refused",
		"pending_full", k.PendingFull-last.PendingFull, "rate_limited", k.RateLimited-last.RateLimited,
		"handshake_timeouts", k.HandshakeTimeouts-last.HandshakeTimeouts,
		"limiter_evictions", k.LimiterEvictions-last.LimiterEvictions, "inbound_overflow", k.Overflow-last.Overflow,
		"pending", s.pending, "prefixes", s.limiter.len())
	s.summarised = k
}

// maxInboundBytes bounds the datagrams read but not yet handled. The loop
// handles refused and malformed datagrams at hundreds of thousands a
// second, so this fills only when it stalls; 16 MB is then four times the
// socket's own receive buffer.
const maxInboundBytes = 16 << 20

// inboundBudget counts the bytes between the reader and the loop; the
// reader drops a datagram that would exceed maxInboundBytes, as a full
// socket buffer would.
type inboundBudget struct {
	bytes   atomic.Int64
	dropped atomic.Uint64
}

func (b *inboundBudget) take(n int) bool {
	if b.bytes.Add(int64(n)) > maxInboundBytes {
		b.bytes.Add(-int64(n))
		b.dropped.Add(1)
		return false
	}
	return true
}

func (b *inboundBudget) release(n int) { b.bytes.Add(-int64(n)) }

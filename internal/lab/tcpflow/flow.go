package tcpflow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
)

// CongestionControl names one of gVisor's congestion controls, as
// tcpip.CongestionControlOption does.
type CongestionControl string

const (
	// Reno is NewReno with SACK-based recovery (RFC 5681, RFC 6675), as
	// gVisor has it: its congestion avoidance grows the window as fast
	// as slow start (see the package doc).
	Reno CongestionControl = "reno"
	// CUBIC is RFC 8312's, Linux's default.
	CUBIC CongestionControl = "cubic"
)

// Valid reports whether gVisor has this congestion control.
func (c CongestionControl) Valid() bool { return c == Reno || c == CUBIC }

// Direction is the way a bulk flow's data goes.
type Direction uint8

const (
	// Download sends from the server to the client (down the link).
	Download Direction = iota
	// Upload sends from the client to the server (up the link).
	Upload
)

func (d Direction) String() string {
	if d == Upload {
		return "upload"
	}
	return "download"
}

// linkDir is the bottleneck direction the data takes.
func (d Direction) linkDir() link.Direction {
	if d == Upload {
		return link.Up
	}
	return link.Down
}

// FlowConfig describes one TCP connection between the client and the
// server.
type FlowConfig struct {
	// Name labels the flow; its packets cross the bottleneck as flows
	// "NAME up" and "NAME down".
	Name string
	// CC is the congestion control of both ends; "" means CUBIC.
	CC CongestionControl
	// Start delays the connection's opening after Run begins.
	Start time.Duration
	// Dir is which way a bulk flow sends (ignored when App is set): as
	// fast as TCP allows, the receiver reading all it gets.
	Dir Direction
	// App, if set, makes the flow application-limited instead: data both
	// ways at fixed rates, like a game's.
	App *AppConfig
	// ReceiveBuffer, if set, is both ends' receive buffer in bytes, set
	// before the handshake, which bounds what the other end may have in
	// flight: gVisor advertises about half of it (the rest is kept for
	// its segments' overhead, as Linux does with tcp_adv_win_scale 1). 0
	// is the net's 4 MiB, which never limits a flow.
	ReceiveBuffer int
}

// AppConfig describes an application-limited flow: each end writes at a
// fixed rate in messages, the way a game client and server exchange
// updates. With a Period, the sender gathers the messages generated during
// each period and writes them at its end, so a message waits between 0 and
// Period before TCP sees it: the sawtooth multiplexing delay of a server
// that serves many clients in rounds.
type AppConfig struct {
	// UpRate and DownRate are what the client and the server write, in
	// bytes/s; 0 is nothing that way.
	UpRate, DownRate int64
	// Message is the size of one update in bytes; 0 means 100.
	Message int
	// Period is the multiplexing round; 0 writes each message as soon as
	// it is generated.
	Period time.Duration
}

// defaultMessage is a game update's size when none is given: small
// against a 1,460-byte segment, as the application-limited flows of the
// multiplexing study are.
const defaultMessage = 100

func (c *FlowConfig) validate() error {
	var errs []error
	if c.Name == "" {
		errs = append(errs, errors.New("no name"))
	}
	if c.CC == "" {
		c.CC = CUBIC
	}
	if !c.CC.Valid() {
		errs = append(errs, fmt.Errorf("congestion control %q: want reno or cubic", c.CC))
	}
	if c.Start < 0 {
		errs = append(errs, fmt.Errorf("start %v is negative", c.Start))
	}
	if c.Dir != Download && c.Dir != Upload {
		errs = append(errs, fmt.Errorf("direction %d", c.Dir))
	}
	if a := c.App; a != nil {
		if a.UpRate < 0 || a.DownRate < 0 {
			errs = append(errs, fmt.Errorf("application rates %d and %d B/s: negative", a.UpRate, a.DownRate))
		}
		if a.UpRate == 0 && a.DownRate == 0 {
			errs = append(errs, errors.New("application flow sends nothing either way"))
		}
		if a.Message < 0 || a.Message > 1<<20 {
			errs = append(errs, fmt.Errorf("message %d bytes outside [0, 1 MiB]", a.Message))
		}
		if a.Period < 0 {
			errs = append(errs, fmt.Errorf("period %v is negative", a.Period))
		}
	}
	if c.ReceiveBuffer < 0 || c.ReceiveBuffer > bufferMax {
		errs = append(errs, fmt.Errorf("receive buffer %d bytes outside [0, %d]", c.ReceiveBuffer, bufferMax))
	}
	return errors.Join(errs...)
}

// Flow is one TCP connection of a Net, with byte counters at both ends.
type Flow struct {
	cfg   FlowConfig
	index int
	links [2]link.Flow // by link.Direction

	// written and read count application bytes by link.Direction: what
	// the sending end wrote and what the receiving end read.
	written, read [2]atomic.Uint64

	mu        sync.Mutex // guards the endpoints and established
	endpoints [2]tcpip.Endpoint
	// established is closed once both ends are connected; made on first
	// use, so that a Flow built by any of the net's constructors has one.
	established chan struct{}
}

// AddFlow adds a connection to the net; Run opens it.
func (n *Net) AddFlow(cfg FlowConfig) (*Flow, error) {
	return n.addFlow(cfg, [2]func([]byte){link.Up: n.server.inject, link.Down: n.client.inject})
}

// addFlow checks cfg and registers the flow on the bottleneck, whose
// deliveries each way go to deliver[dir].
func (n *Net) addFlow(cfg FlowConfig, deliver [2]func([]byte)) (*Flow, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("tcpflow: flow %q: %w", cfg.Name, err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.running {
		return nil, fmt.Errorf("tcpflow: flow %q: the net is running", cfg.Name)
	}
	for _, g := range n.flows {
		if g.cfg.Name == cfg.Name {
			return nil, fmt.Errorf("tcpflow: flow %q already exists", cfg.Name)
		}
	}
	if len(n.flows) >= MaxFlows {
		return nil, fmt.Errorf("tcpflow: flow %q: already %d flows", cfg.Name, MaxFlows)
	}
	f := &Flow{cfg: cfg, index: len(n.flows)}
	for _, dir := range []link.Direction{link.Up, link.Down} {
		var err error
		if f.links[dir], err = n.bottleneck.AddFlow(link.FlowConfig{Name: cfg.Name + " " + dir.String(), Dir: dir, Deliver: deliver[dir]}); err != nil {
			return nil, fmt.Errorf("tcpflow: %w", err)
		}
	}
	n.flows = append(n.flows, f)
	return f, nil
}

// Name is the flow's name.
func (f *Flow) Name() string { return f.cfg.Name }

// Config is the flow's configuration, defaults filled in.
func (f *Flow) Config() FlowConfig { return f.cfg }

// Written is the number of application bytes the sending end of dir has
// handed to TCP.
func (f *Flow) Written(dir link.Direction) uint64 { return f.written[dir].Load() }

// Read is the number of application bytes the receiving end of dir has
// read: the flow's goodput that way.
func (f *Flow) Read(dir link.Direction) uint64 { return f.read[dir].Load() }

// Link is the bottleneck's label for the flow's packets going dir.
func (f *Flow) Link(dir link.Direction) link.Flow { return f.links[dir] }

// Established is closed once the connection is open at both ends, which
// may be well after its Start when the handshake's packets meet a full
// queue (a lost SYN is sent again after the initial RTO of 1 s, RFC 6298
// §2.1, and after 2 s more if lost again, §5.5): a measurement of the
// flow's steady state counts from here, not from Start.
func (f *Flow) Established() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.establishedLocked()
}

func (f *Flow) establishedLocked() chan struct{} {
	if f.established == nil {
		f.established = make(chan struct{})
	}
	return f.established
}

// TCPInfo is a connection's congestion state as one end sees it.
type TCPInfo struct {
	RTT, RTTVar, RTO time.Duration
	// Cwnd and Ssthresh are in segments.
	Cwnd, Ssthresh uint32
}

// Info returns the congestion state of the end that sends data dir (the
// client for up), and false before the connection is open.
func (f *Flow) Info(dir link.Direction) (TCPInfo, bool) {
	f.mu.Lock()
	ep := f.endpoints[dir]
	f.mu.Unlock()
	if ep == nil {
		return TCPInfo{}, false
	}
	var i tcpip.TCPInfoOption
	if err := ep.GetSockOpt(&i); err != nil {
		return TCPInfo{}, false
	}
	return TCPInfo{RTT: i.RTT, RTTVar: i.RTTVar, RTO: i.RTO, Cwnd: i.SndCwnd, Ssthresh: i.SndSsthresh}, true
}

// Run opens every flow (each after its Start), moves their data until ctx
// ends, then closes them. It returns the flows' errors other than their
// closing.
func (n *Net) Run(ctx context.Context) error {
	n.mu.Lock()
	if n.running {
		n.mu.Unlock()
		return errors.New("tcpflow: already running")
	}
	n.running = true
	flows := n.flows
	n.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(flows))
	for i, f := range flows {
		wg.Go(func() {
			if err := n.runFlow(ctx, f); err != nil && ctx.Err() == nil {
				errs[i] = fmt.Errorf("tcpflow: flow %q: %w", f.cfg.Name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (n *Net) runFlow(ctx context.Context, f *Flow) error {
	if f.cfg.Start > 0 {
		t := time.NewTimer(f.cfg.Start)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
	serverAddr := tcpip.FullAddress{NIC: nicID, Addr: ServerAddr, Port: uint16(serverPortBase + f.index)}
	clientAddr := tcpip.FullAddress{NIC: nicID, Addr: ClientAddr, Port: uint16(clientPortBase + f.index)}
	ln, lwq, err := listen(n.server.stack, serverAddr, f.cfg.ReceiveBuffer)
	if err != nil {
		return err
	}
	defer ln.Close()
	acceptCtx, cancelAccept := context.WithCancel(ctx)
	defer cancelAccept()
	var (
		sep      tcpip.Endpoint
		sconn    *gonet.TCPConn
		acceptEr error
		acceptWG sync.WaitGroup
	)
	acceptWG.Go(func() {
		ep, wq, err := accept(acceptCtx, ln, lwq, f.cfg.CC)
		if err != nil {
			acceptEr = err
			return
		}
		sep, sconn = ep, gonet.NewTCPConn(wq, ep)
	})
	cep, cwq, err := dial(ctx, n.client.stack, f.cfg.CC, clientAddr, serverAddr, f.cfg.ReceiveBuffer)
	if err != nil {
		cancelAccept()
		acceptWG.Wait()
		if sconn != nil {
			sconn.Close()
		}
		return err
	}
	cconn := gonet.NewTCPConn(cwq, cep)
	acceptWG.Wait()
	if acceptEr != nil {
		cconn.Close()
		return acceptEr
	}
	f.mu.Lock()
	f.endpoints[link.Up], f.endpoints[link.Down] = cep, sep
	close(f.establishedLocked())
	f.mu.Unlock()

	// Both ends close when ctx ends, which unblocks their reads and
	// writes.
	stop := context.AfterFunc(ctx, func() {
		cconn.Close()
		sconn.Close()
	})
	defer stop()
	conns := [2]net.Conn{link.Up: cconn, link.Down: sconn}
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var errs []error
	fail := func(err error) {
		if err == nil || ctx.Err() != nil || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
			return
		}
		errMu.Lock()
		errs = append(errs, err)
		errMu.Unlock()
	}
	for dir := range conns {
		rate := int64(0)
		switch {
		case f.cfg.App != nil && dir == int(link.Up):
			rate = f.cfg.App.UpRate
		case f.cfg.App != nil:
			rate = f.cfg.App.DownRate
		}
		sending := f.cfg.App == nil && link.Direction(dir) == f.cfg.Dir.linkDir() || rate > 0
		if !sending {
			continue
		}
		from, to := conns[dir], conns[1-dir]
		wg.Go(func() { fail(f.sink(to, link.Direction(dir))) })
		if f.cfg.App == nil {
			wg.Go(func() { fail(f.bulk(from, link.Direction(dir))) })
		} else {
			wg.Go(func() { fail(f.paced(ctx, from, link.Direction(dir), rate)) })
		}
	}
	wg.Wait()
	cconn.Close()
	sconn.Close()
	return errors.Join(errs...)
}

// bulkWrite is what a bulk sender hands TCP per call: enough that the
// send buffer never runs dry between calls.
const bulkWrite = 64 << 10

// patternLen is the period of the bytes every sender writes: byte i of a
// direction's stream is i mod patternLen, a prime so that no segment
// size lines up with it. The sink checks it, so a recovery that delivered
// the wrong bytes, or the right ones twice, fails the flow.
const patternLen = 251

var pattern = func() []byte {
	b := make([]byte, bulkWrite+patternLen)
	for i := range b {
		b[i] = byte(i % patternLen)
	}
	return b
}()

// bulk writes as fast as TCP takes it until the connection closes.
func (f *Flow) bulk(c net.Conn, dir link.Direction) error {
	var off uint64
	for {
		n, err := c.Write(pattern[off%patternLen:][:bulkWrite])
		off += uint64(n)
		f.written[dir].Add(uint64(n))
		if err != nil {
			return err
		}
	}
}

// ErrCorrupt is a sink's error when the stream differs from what was
// written.
var ErrCorrupt = errors.New("tcpflow: the bytes read differ from those written")

// sink reads, checks and counts until the connection closes.
func (f *Flow) sink(c net.Conn, dir link.Direction) error {
	buf := make([]byte, bulkWrite)
	var off uint64
	for {
		n, err := c.Read(buf)
		for i, b := range buf[:n] {
			if b != byte((off+uint64(i))%patternLen) {
				return fmt.Errorf("%w: byte %d of the %v stream", ErrCorrupt, off+uint64(i), dir)
			}
		}
		off += uint64(n)
		f.read[dir].Add(uint64(n))
		if err != nil {
			return err
		}
	}
}

// paced writes rate bytes/s in messages, each period's together (or each
// message on its own without a period), until ctx ends. What is owed is
// computed from the start time, so timer lateness does not lower the rate.
func (f *Flow) paced(ctx context.Context, c net.Conn, dir link.Direction, rate int64) error {
	a := f.cfg.App
	msg := int64(a.Message)
	if msg == 0 {
		msg = defaultMessage
	}
	tick := a.Period
	if tick == 0 {
		tick = time.Duration(msg * int64(time.Second) / rate)
	}
	tick = max(tick, time.Microsecond)
	start := time.Now()
	var sentMsgs int64
	var off uint64
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			// Messages generated by now, whole ones only.
			// Messages generated by now, whole ones only, in one write:
			// the round's updates leave together.
			due := int64(now.Sub(start)) * rate / int64(time.Second) / msg
			if due <= sentMsgs {
				continue
			}
			size := (due - sentMsgs) * msg
			sentMsgs = due
			for size > 0 {
				chunk := min(size, bulkWrite)
				n, err := c.Write(pattern[off%patternLen:][:chunk])
				off += uint64(n)
				size -= int64(n)
				f.written[dir].Add(uint64(n))
				if err != nil {
					return err
				}
			}
		}
	}
}

package link

import (
	"bytes"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Config configures a Relay.
type Config struct {
	// Listen is where viewers send: the simulator's address as they know it.
	Listen netip.AddrPort
	// Upstream is the simulator.
	Upstream netip.AddrPort
	// Down is simulator to viewer, Up viewer to simulator. Both must be
	// zero with Shared, whose directions apply instead.
	Down, Up PipeConfig
	// Shared, if set, carries the relay's datagrams instead of pipes of
	// its own, as flows "lludp VIEWER up" and "lludp VIEWER down" (each
	// datagram costing its payload plus 28 bytes of IPv4 and UDP headers),
	// so that viewers share one queue with whatever else crosses it. Its
	// owner runs it: the relay's Run does not.
	Shared *Bottleneck
	// Name, if set, goes into the names of the relay's flows through
	// Shared, "lludp VIEWER NAME up" and "lludp VIEWER NAME down": relays
	// that carry one viewer's circuits to several simulators over one
	// bottleneck (a root region and its neighbours) each need their own.
	Name string
	// Seed makes the loss processes repeatable (each direction derives its
	// own stream from it).
	Seed uint64
	// Tap, if set, sees every datagram as the viewer's host does: what a
	// viewer sends, once it is on its way, and what reaches it, when it
	// does. Up datagrams go from the viewer to Listen, down ones back. The
	// payload is only valid during the call, and the tap must not block.
	Tap func(d Datagram)
	// OnDrop, if set, sees every datagram the link drops, when it drops it.
	OnDrop func(d Datagram, cause Cause)
}

// Datagram is a datagram seen by the tap.
type Datagram struct {
	At       time.Time
	Src, Dst netip.AddrPort
	Payload  []byte
	Up       bool
}

// Relay is a UDP relay between viewers and a simulator that emulates a
// link: per direction a rate limit, a FIFO in datagrams, a delay and random
// or bursty loss (Pipe). Each viewer endpoint gets its own upstream socket,
// so the simulator sees one client per viewer, as it would without the
// relay.
type Relay struct {
	cfg    Config
	log    *slog.Logger
	conn   *net.UDPConn // viewers ↔ relay
	up     *Pipe
	down   *Pipe
	mu     sync.Mutex // guards the pipes, the circuits, the flows and the timeline
	viewer map[netip.AddrPort]*net.UDPConn
	flows  map[netip.AddrPort][2]Flow // the viewers' flows through Shared, by Direction
	// sharedRefused is set once Shared has refused a viewer's flow.
	sharedRefused bool
	queue         deliveries
	wake          chan struct{}
	wg            sync.WaitGroup // the delivery loop (Run's)
	readers       sync.WaitGroup // the viewers' upstream sockets' readers

	// Close releases the sockets once, whoever asks first (Close or
	// Run's return); closed ends a Run in progress, and shut (under mu)
	// stops a viewer's upstream socket from opening after it.
	closeOnce sync.Once
	closeErr  error
	closed    chan struct{}
	shut      bool
}

type delivery struct {
	at      time.Time
	payload []byte
	up      bool
	viewer  netip.AddrPort
}

type deliveries []delivery

func (d deliveries) Len() int           { return len(d) }
func (d deliveries) Less(i, j int) bool { return d[i].at.Before(d[j].at) }
func (d deliveries) Swap(i, j int)      { d[i], d[j] = d[j], d[i] }
func (d *deliveries) Push(x any)        { *d = append(*d, x.(delivery)) }
func (d *deliveries) Pop() any {
	old := *d
	x := old[len(old)-1]
	*d = old[:len(old)-1]
	return x
}

// New binds the relay's listening socket; Run starts relaying.
func New(cfg Config, log *slog.Logger) (*Relay, error) {
	if !cfg.Upstream.IsValid() {
		return nil, errors.New("link: upstream address required")
	}
	var up, down *Pipe
	if cfg.Shared != nil {
		if cfg.Down != (PipeConfig{}) || cfg.Up != (PipeConfig{}) {
			return nil, errors.New("link: up and down configure the relay's own pipes: with a shared bottleneck, set its directions instead")
		}
	} else {
		var err error
		if down, err = NewPipe(cfg.Down, cfg.Seed); err != nil {
			return nil, fmt.Errorf("link: down: %w", err)
		}
		if up, err = NewPipe(cfg.Up, cfg.Seed^0xA5A5A5A5); err != nil {
			return nil, fmt.Errorf("link: up: %w", err)
		}
	}
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(cfg.Listen))
	if err != nil {
		return nil, fmt.Errorf("link: listen: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	setBuffers(conn)
	return &Relay{cfg: cfg, log: log, conn: conn, up: up, down: down, viewer: map[netip.AddrPort]*net.UDPConn{}, flows: map[netip.AddrPort][2]Flow{}, wake: make(chan struct{}, 1),
		closed: make(chan struct{})}, nil
}

// Addr is where viewers should send.
func (r *Relay) Addr() netip.AddrPort { return r.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// Stats returns each direction's counters: with a shared bottleneck, the
// relay's own flows' through it.
func (r *Relay) Stats() (down, up PipeStats) {
	if r.cfg.Shared == nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.down.Stats(), r.up.Stats()
	}
	r.mu.Lock()
	ours := map[Flow]bool{}
	for _, f := range r.flows {
		ours[f[Up]], ours[f[Down]] = true, true
	}
	r.mu.Unlock()
	var dirs [2]PipeStats
	for _, f := range r.cfg.Shared.Stats().Flows {
		if !ours[f.Flow] {
			continue
		}
		d := &dirs[f.Dir]
		d.DroppedRandom += f.DroppedRandom
		d.DroppedQueue += f.DroppedQueue
		d.Forwarded += f.Arrived - f.Dropped()
		d.QueueDelay += f.QueueDelay.Sum
	}
	return dirs[Down], dirs[Up]
}

// Close releases every socket, whether Run ran or not (InjectUp opens a
// viewer's upstream socket without it), and ends a Run in progress: it
// returns once the upstream sockets' readers have stopped, so the sockets
// are released by then. Run's return closes them too; Close may be called
// any number of times, and returns the listening socket's close error
// each time.
func (r *Relay) Close() error {
	r.closeOnce.Do(func() {
		close(r.closed)
		r.closeErr = r.conn.Close()
		r.mu.Lock()
		r.shut = true
		for _, c := range r.viewer {
			c.Close()
		}
		r.mu.Unlock()
		r.readers.Wait()
	})
	return r.closeErr
}

// Run relays until ctx ends or Close is called, then closes every
// socket. It returns nil then, or the listening socket's failure before:
// a relay that cannot read its viewers relays nothing.
func (r *Relay) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if r.cfg.Shared == nil {
		r.wg.Add(1)
		go func() { defer r.wg.Done(); r.deliverLoop(ctx) }()
	}
	errc := make(chan error, 1)
	go func() { errc <- r.readViewers() }()
	var err error
	select {
	case <-ctx.Done():
	case <-r.closed:
	case err = <-errc:
		select {
		case <-r.closed:
			err = nil // Close's
		default:
			err = fmt.Errorf("link: read: %w", err)
		}
		errc <- nil
	}
	cancel()
	r.Close()
	<-errc // the close's, or the failure's, already taken
	r.wg.Wait()
	return err
}

// readViewers takes datagrams from viewers into the up pipe.
func (r *Relay) readViewers() error {
	buf := make([]byte, 65536)
	for {
		n, from, err := r.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			return err
		}
		r.offer(true, from, buf[:n], time.Now())
	}
}

// InjectUp sends a datagram towards the simulator as if viewer had sent
// it, through the up pipe: how the sidecar's demo sends its AgentThrottle
// without a raw socket.
func (r *Relay) InjectUp(viewer netip.AddrPort, payload []byte) {
	r.offer(true, viewer, payload, time.Now())
}

func (r *Relay) offer(up bool, viewer netip.AddrPort, payload []byte, now time.Time) {
	r.mu.Lock()
	pipe := r.down
	if up {
		pipe = r.up
		if _, ok := r.viewer[viewer]; !ok {
			if err := r.openUpstreamLocked(viewer); err != nil {
				r.mu.Unlock()
				r.log.Warn("cannot open an upstream socket", "viewer", viewer, "err", err)
				return
			}
		}
	}
	if r.cfg.Shared != nil {
		r.offerSharedLocked(up, viewer, payload, now)
		return
	}
	at, cause := pipe.Offer(len(payload), now)
	if cause == Forwarded {
		heap.Push(&r.queue, delivery{at: at, payload: append([]byte(nil), payload...), up: up, viewer: viewer})
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
	r.mu.Unlock()
	r.offered(up, viewer, payload, now, cause)
}

// udpOverhead is what a UDP payload adds on an IPv4 link: the IPv4 header
// without options (RFC 791) and the UDP header (RFC 768).
const udpOverhead = 20 + 8

// offerSharedLocked sends a datagram through the shared bottleneck as its
// viewer's flow, opening the flows at the viewer's first datagram; it
// unlocks r.mu.
func (r *Relay) offerSharedLocked(up bool, viewer netip.AddrPort, payload []byte, now time.Time) {
	flows, ok := r.flows[viewer]
	if !ok {
		for _, dir := range []Direction{Up, Down} {
			// Endpoints as on the viewer's host, as the relay's own tap
			// has them.
			ep := UDPEndpoints{Src: viewer, Dst: r.Addr()}
			if dir == Down {
				ep.Src, ep.Dst = ep.Dst, ep.Src
			}
			name := fmt.Sprintf("lludp %v %v", viewer, dir)
			if r.cfg.Name != "" {
				name = fmt.Sprintf("lludp %v %s %v", viewer, r.cfg.Name, dir)
			}
			f, err := r.cfg.Shared.AddFlow(FlowConfig{Name: name, Dir: dir, Overhead: udpOverhead, UDP: ep,
				Deliver: func(p []byte) { r.send(delivery{payload: p, up: dir == Up, viewer: viewer}) }})
			if err != nil {
				// Only a name another relay on the same bottleneck took
				// fails: said once, and the viewer's datagrams go nowhere.
				first := !r.sharedRefused
				r.sharedRefused = true
				r.mu.Unlock()
				if first {
					r.log.Warn("cannot add a viewer's flow to the shared bottleneck; its datagrams are not relayed", "viewer", viewer, "err", err)
				}
				return
			}
			flows[dir] = f
		}
		r.flows[viewer] = flows
	}
	f := flows[Down]
	if up {
		f = flows[Up]
	}
	// The bottleneck owns what it is sent.
	// Send fails only for a flow it did not hand out; these all came from
	// it.
	cause, _ := r.cfg.Shared.Send(f, bytes.Clone(payload))
	r.mu.Unlock()
	r.offered(up, viewer, payload, now, cause)
}

// offered shows an offered datagram to the tap and, if it was dropped, to
// OnDrop.
func (r *Relay) offered(up bool, viewer netip.AddrPort, payload []byte, now time.Time, cause Cause) {
	// The tap sees an up datagram once it has its place in the pipe, as a
	// capture on the viewer's host sees it once sent: whatever the tap's
	// owner injects in answer queues behind it.
	if up && r.cfg.Tap != nil {
		r.cfg.Tap(Datagram{At: now, Src: viewer, Dst: r.Addr(), Payload: payload, Up: true})
	}
	if cause != Forwarded && r.cfg.OnDrop != nil {
		d := Datagram{At: now, Src: r.cfg.Upstream, Dst: viewer, Payload: payload, Up: up}
		if up {
			d.Src, d.Dst = viewer, r.cfg.Upstream
		}
		r.cfg.OnDrop(d, cause)
	}
}

// openUpstreamLocked opens the socket a viewer's datagrams reach the
// simulator from, and starts reading the simulator's answers on it.
func (r *Relay) openUpstreamLocked(viewer netip.AddrPort) error {
	if r.shut {
		return net.ErrClosed
	}
	local := netip.AddrPortFrom(r.cfg.Upstream.Addr(), 0)
	if r.cfg.Upstream.Addr().IsUnspecified() {
		local = netip.AddrPort{}
	}
	c, err := net.DialUDP("udp", net.UDPAddrFromAddrPort(local), net.UDPAddrFromAddrPort(r.cfg.Upstream))
	if err != nil {
		return err
	}
	setBuffers(c)
	r.viewer[viewer] = c
	r.readers.Add(1)
	go func() {
		defer r.readers.Done()
		buf := make([]byte, 65536)
		for {
			n, err := c.Read(buf)
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					r.log.Debug("upstream read", "viewer", viewer, "err", err)
					if isTemporary(err) {
						continue
					}
				}
				return
			}
			r.offer(false, viewer, buf[:n], time.Now())
		}
	}()
	return nil
}

// isTemporary: a refused send to a simulator that is not up yet reports
// on the next read; the relay keeps reading.
func isTemporary(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !errors.Is(err, net.ErrClosed)
}

// deliverLoop sends each datagram when it reaches the far end of its pipe.
func (r *Relay) deliverLoop(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		r.mu.Lock()
		now := time.Now()
		var due []delivery
		for r.queue.Len() > 0 && !r.queue[0].at.After(now) {
			due = append(due, heap.Pop(&r.queue).(delivery))
		}
		next := time.Hour
		if r.queue.Len() > 0 {
			next = r.queue[0].at.Sub(now)
		}
		r.mu.Unlock()
		for _, d := range due {
			r.send(d)
		}
		timer.Reset(next)
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		case <-timer.C:
		}
	}
}

func (r *Relay) send(d delivery) {
	if d.up {
		r.mu.Lock()
		c := r.viewer[d.viewer]
		r.mu.Unlock()
		if c != nil {
			c.Write(d.payload)
		}
		return
	}
	if r.cfg.Tap != nil {
		r.cfg.Tap(Datagram{At: time.Now(), Src: r.Addr(), Dst: d.viewer, Payload: d.payload})
	}
	r.conn.WriteToUDPAddrPort(d.payload, d.viewer)
}

// socketBuffer is what the relay asks the kernel for (it may grant less):
// bursts must queue in the emulated FIFO, not vanish in the socket.
const socketBuffer = 4 << 20

func setBuffers(c *net.UDPConn) {
	c.SetReadBuffer(socketBuffer)
	c.SetWriteBuffer(socketBuffer)
}

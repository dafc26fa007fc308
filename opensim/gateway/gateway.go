package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
)

// tick is how often circuits are looked at for decisions and timeouts:
// decisions come every Interval (seconds) and timeouts are seconds, so
// 100 ms loses nothing.
const tick = 100 * time.Millisecond

// maxDatagram bounds what is read: LLUDP's receive buffer (MaxPacketSize).
const maxDatagram = 8192

// maxFresh is how many datagrams from unknown endpoints the loop handles
// before it lets the scheduler send.
const maxFresh = 8

// freshCap bounds the datagrams from unknown endpoints waiting: beyond it
// they are dropped at the reader (counted), as a full socket buffer would.
const freshCap = 1024

// event is a datagram a reader handles or hands the loop.
type event struct {
	route int     // from a viewer, on this route's public socket; -1: from the region
	v     *Viewer // from the region, on this circuit's socket
	from  netip.AddrPort
	b     []byte
	at    time.Time
}

// Gateway is the shell around Core: a public socket per route, a socket
// per viewer circuit towards its region, and one loop that opens circuits,
// decides and sends what waited in the scheduler. The readers handle the
// datagrams of known circuits and the regions' themselves, under the
// core's lock; what leaves towards viewers is sent once the lock is let
// go (sendQueue), so the readers do not wait for each other's system
// calls. New binds the public sockets; Run serves.
type Gateway struct {
	log    *slog.Logger
	public []*net.UDPConn
	send   []*sendQueue  // per public socket: what leaves towards viewers
	fresh  chan event    // datagrams from endpoints with no circuit
	wake   chan struct{} // a reader left what must wait in the scheduler: drain and set the timer
	// known holds the circuitKey of every circuit the core carries, for
	// the public socket's reader to tell a flood from fresh endpoints
	// apart without the core's lock, which serving takes.
	known sync.Map

	mu   sync.Mutex // guards core; the loop and the readers hold it while they work
	core *Core

	gone    []*Viewer      // scratch for Core.Gone (under mu)
	replies []Reply        // scratch for Core.Replies (under mu)
	readers sync.WaitGroup // every reader, so Run returns after them
	dropped atomic.Uint64  // datagrams from unknown endpoints dropped at a full channel
	errs    uint64         // send errors towards regions (under mu)

	regions  []regionHealth // by route (under mu)
	logs     eventLog       // circuits opened and closed, rate-limited (under mu)
	identify bool           // Config.IdentifyViewers

	// Close releases the sockets once, whoever asks first (Close or
	// Run's return); closed ends a Run in progress, and shut (under mu)
	// stops a reader from opening a circuit's socket after it.
	closeOnce sync.Once
	closeErr  error
	closed    chan struct{}
	shut      bool
}

// New validates cfg and binds each route's public socket.
func New(cfg Config, log *slog.Logger) (*Gateway, error) {
	core, err := NewCore(cfg)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g := &Gateway{log: log, core: core, fresh: make(chan event, freshCap), wake: make(chan struct{}, 1),
		regions: make([]regionHealth, len(core.cfg.Routes)), logs: eventLog{every: logEvery, burst: logBurst},
		identify: core.cfg.IdentifyViewers, closed: make(chan struct{})}
	for _, w := range RouteWarnings(core.cfg.Routes) {
		log.Warn("gateway: " + w)
	}
	if err := g.fitFiles(openFiles{}); err != nil {
		return nil, err
	}
	for _, r := range core.cfg.Routes {
		c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(r.Listen))
		if err != nil {
			g.closePublic()
			return nil, fmt.Errorf("gateway: listen %v: %w", r.Listen, err)
		}
		c.SetReadBuffer(4 << 20)
		c.SetWriteBuffer(4 << 20)
		g.public = append(g.public, c)
		g.send = append(g.send, newSendQueue(c))
	}
	return g, nil
}

func (g *Gateway) closePublic() {
	for _, c := range g.public {
		c.Close()
	}
}

// Addr is route i's public address as bound (a port 0 resolved).
func (g *Gateway) Addr(i int) netip.AddrPort {
	return g.public[i].LocalAddr().(*net.UDPAddr).AddrPort()
}

// Close releases every socket, whether Run ran or not, and ends a Run in
// progress. Run's return closes them too; Close may be called any number
// of times, and returns the public sockets' close errors each time.
func (g *Gateway) Close() error {
	g.closeOnce.Do(func() {
		close(g.closed)
		var errs []error
		for _, c := range g.public {
			errs = append(errs, c.Close())
		}
		g.closeErr = errors.Join(errs...)
		g.mu.Lock()
		g.shut = true
		for _, v := range g.core.viewers {
			g.closeConn(v)
		}
		for _, v := range g.core.Gone(nil) {
			g.closeConn(v)
		}
		g.mu.Unlock()
	})
	return g.closeErr
}

// Run serves until ctx ends or Close is called, then closes every socket
// and returns once every reader has stopped.
func (g *Gateway) Run(ctx context.Context) error {
	for i, c := range g.public {
		g.readers.Add(1)
		go g.readPublic(i, c)
	}
	defer func() {
		g.Close()
		g.readers.Wait()
	}()
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var out [64]Out
	var asserts []Assert
	var closed []*Viewer
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-g.closed:
			return nil
		case e := <-g.fresh:
			g.mu.Lock()
			g.handle(e)
			g.handleBatch()
			g.mu.Unlock()
		case now := <-ticker.C:
			g.mu.Lock()
			asserts, closed = g.core.Tick(now, asserts[:0], closed[:0])
			g.watch(now)
			for _, a := range asserts {
				g.toRegion(a.V, a.B, now)
			}
			for _, v := range closed {
				g.closeConn(v)
			}
			clear(closed)
			g.mu.Unlock()
		case <-timer.C:
		case <-g.wake:
		}
		g.mu.Lock()
		wait := g.drain(out[:], time.Now())
		g.mu.Unlock()
		g.flush()
		if wait >= 0 {
			timer.Reset(max(wait, 50*time.Microsecond))
		}
	}
}

// handleBatch handles up to maxFresh more datagrams from endpoints with
// no circuit before the scheduler runs. Opening a circuit costs a socket,
// so a flood of UseCircuitCode from fresh addresses is served only at
// that pace, and never ahead of the scheduler's sending; the viewers
// already carried are handled on the reader, between the loop's turns.
func (g *Gateway) handleBatch() {
	for more := maxFresh; more > 0; more-- {
		select {
		case e := <-g.fresh:
			g.handle(e)
		default:
			more = 0
		}
	}
}

// drain sends what the scheduler lets leave now and returns how long until
// more may (negative: nothing queued). g.mu is held.
func (g *Gateway) drain(out []Out, now time.Time) time.Duration {
	for {
		n, wait := g.core.Next(out, now)
		for i := range out[:n] {
			g.toViewer(out[i].V, out[i].B)
		}
		clear(out[:n])
		if n < len(out) {
			return wait
		}
	}
}

func (g *Gateway) handle(e event) {
	if e.route < 0 {
		sendNow, _ := g.core.FromRegion(e.v, e.b, e.at)
		if sendNow {
			g.toViewer(e.v, e.b)
		}
		return
	}
	if tap := g.core.cfg.Tap; tap != nil {
		tap(lludp.Datagram{At: e.at, Src: e.from, Dst: g.Addr(e.route), Payload: e.b})
	}
	v, out, drop := g.core.FromViewer(e.route, e.from, e.b, e.at)
	// A probe to send; a circuit closed by a new login at its endpoint.
	g.replies = g.core.Replies(g.replies[:0])
	for _, r := range g.replies {
		g.send[r.Route].add(r.B, r.To)
	}
	clear(g.replies)
	g.gone = g.core.Gone(g.gone[:0])
	for _, old := range g.gone {
		g.closeConn(old)
	}
	clear(g.gone)
	if drop != Passed {
		return
	}
	if v.Conn == nil {
		if err := g.dial(v); err != nil {
			g.errs++
			g.log.Error("gateway: circuit socket", "route", v.Route, "err", err)
			g.core.Remove(v, e.at)
			g.core.Gone(nil)
			return
		}
		g.known.Store(circuitKey{v.Route, v.Addr}, v)
	}
	g.toRegion(v, out, e.at)
}

// dial opens circuit v's socket towards its region and starts its reader.
// g.mu is held.
func (g *Gateway) dial(v *Viewer) error {
	if g.shut {
		return net.ErrClosed
	}
	region := g.core.cfg.Routes[v.Route].Region
	bind := g.core.cfg.Bind
	if !bind.IsValid() {
		bind = netip.IPv6Unspecified()
		if region.Addr().Is4() {
			bind = netip.IPv4Unspecified()
		}
	}
	c, err := net.DialUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(bind, 0)), net.UDPAddrFromAddrPort(region))
	if err != nil {
		return err
	}
	v.Conn = c
	g.readers.Add(1)
	go g.readRegion(v, c)
	return nil
}

// closeConn closes circuit v's socket, which ends its reader, and
// forgets it as known (unless a new circuit of the same endpoint has
// taken its place).
func (g *Gateway) closeConn(v *Viewer) {
	if c, ok := v.Conn.(*net.UDPConn); ok {
		c.Close()
	}
	g.known.CompareAndDelete(circuitKey{v.Route, v.Addr}, v)
}

// toRegion sends b to v's region from v's socket, at now: from then the
// region owes the gateway an answer (regionHealth).
func (g *Gateway) toRegion(v *Viewer, b []byte, now time.Time) {
	if b == nil {
		return
	}
	if h := &g.regions[v.Route]; h.waiting.IsZero() {
		h.waiting = now
	}
	if c, ok := v.Conn.(*net.UDPConn); ok {
		if _, err := c.Write(b); err != nil {
			g.errs++ // a region that is down answers with ICMP: not the viewer's fault
		}
	}
}

func (g *Gateway) toViewer(v *Viewer, b []byte) {
	if tap := g.core.cfg.Tap; tap != nil {
		tap(lludp.Datagram{At: time.Now(), Src: g.Addr(v.Route), Dst: v.Addr, Payload: b})
	}
	g.send[v.Route].add(b, v.Addr)
}

// flush sends what the core let leave towards viewers; g.mu is not held.
func (g *Gateway) flush() {
	for _, q := range g.send {
		q.flush()
	}
}

// readPublic reads viewers' datagrams on route i's public socket.
func (g *Gateway) readPublic(route int, c *net.UDPConn) {
	defer g.readers.Done()
	buf := make([]byte, maxDatagram)
	var out [8]Out
	for {
		n, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if _, ok := g.known.Load(circuitKey{route, from}); !ok {
			g.push(g.fresh, event{route: route, from: from, b: append([]byte(nil), buf[:n]...), at: time.Now()})
			continue
		}
		// A known circuit's datagram is handled here, under the lock, as
		// the region's are (readRegion), and goes on to the region at
		// once: nothing keeps it once handled, so buf serves again. The
		// loop is left the fresh endpoints, at its pace. (One clock
		// reading serves the datagram and the scheduler's turn: they are
		// microseconds apart.)
		g.mu.Lock()
		now := time.Now()
		g.handle(event{route: route, from: from, b: buf[:n], at: now})
		wait := g.drain(out[:], now)
		g.mu.Unlock()
		g.flush()
		if wait > 0 {
			g.wakeLoop()
		}
	}
}

// readRegion reads the region's datagrams for circuit v.
func (g *Gateway) readRegion(v *Viewer, c *net.UDPConn) {
	defer g.readers.Done()
	buf := make([]byte, maxDatagram)
	var out [8]Out
	for {
		n, err := c.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // ICMP port unreachable while the region restarts
		}
		// The copy is the core's from now on: it may wait in the
		// scheduler. (make and copy, which the compiler does without
		// clearing the new slice first; append clears it.)
		b := make([]byte, n)
		copy(b, buf[:n])
		// The region's datagrams are handled here, under the lock, and
		// what may leave at once leaves: a hand-off to the loop per
		// datagram costs a goroutine switch each, which make
		// bench-gateway shows in datagrams per CPU-second. The loop is
		// woken for what must wait.
		g.mu.Lock()
		now := time.Now()
		g.regions[v.Route].heard(now)
		g.handle(event{route: -1, v: v, b: b, at: now})
		wait := g.drain(out[:], now)
		g.mu.Unlock()
		g.flush()
		if wait > 0 {
			g.wakeLoop()
		}
	}
}

// wakeLoop has the loop drain and set its timer for what a reader left
// waiting in the scheduler.
func (g *Gateway) wakeLoop() {
	select {
	case g.wake <- struct{}{}:
	default: // the loop has a wake-up pending, and will look again
	}
}

func (g *Gateway) push(to chan event, e event) {
	select {
	case to <- e:
	default:
		g.dropped.Add(1)
	}
}

// Circuits describes every circuit, with the endpoint the region sees.
func (g *Gateway) Circuits() []CircuitStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.core.Circuits()
	for i := range out {
		v := g.core.viewers[circuitKey{out[i].Route, out[i].Viewer}]
		if c, ok := v.Conn.(*net.UDPConn); ok {
			out[i].Local = c.LocalAddr().(*net.UDPAddr).AddrPort()
		}
	}
	return out
}

// Counters returns the gateway's totals.
func (g *Gateway) Counters() Counters {
	g.mu.Lock()
	defer g.mu.Unlock()
	k := g.core.Counters()
	k.InboundDropped, k.SendErrors = g.dropped.Load(), g.errs
	for _, q := range g.send {
		k.SendErrors += q.errs.Load()
	}
	return k
}

// Reconfigure applies what can change live (Core.Reconfigure) and returns
// what needs a restart.
func (g *Gateway) Reconfigure(cfg Config) (restart []string, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.core.Reconfigure(cfg, time.Now())
}

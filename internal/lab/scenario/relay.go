package scenario

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/lludp"
)

// udpOverhead is an IPv4 and a UDP header: what a datagram costs on the
// wire beyond its payload (RFC 791, RFC 768).
const udpOverhead = 28

// Relay relays one viewer's LLUDP datagrams to a simulator across a
// shared link.Bottleneck, as flows "lludp up" and "lludp down". The lab's
// rigs use link.Relay with Config.Shared instead; this remains only for
// internal/lab/demo, whose fairgrid half still builds its own rig, and
// goes when the demo runs on RunRig (issue #21).
type Relay struct {
	b        *link.Bottleneck
	log      *slog.Logger
	conn     *net.UDPConn // viewer ↔ relay
	upstream *net.UDPConn // relay ↔ simulator
	up, down link.Flow
	// tap sees what the viewer's host sees: up datagrams when sent, down
	// ones when they arrive. It must not block.
	tap func(lludp.Datagram)

	mu     sync.Mutex
	viewer netip.AddrPort // the one viewer, once it has sent
}

// The bottleneck's names for the viewer's flows, for link.BottleneckStats.Flow.
const (
	ViewerUpFlow   = "lludp up"
	ViewerDownFlow = "lludp down"
)

// NewRelay binds the relay's sockets and adds its two flows to b; Run
// relays. tap, if set, sees the viewer's datagrams as its host does: up
// ones when sent, down ones when they arrive; it must not block, and it
// owns each datagram's payload.
func NewRelay(b *link.Bottleneck, sim netip.AddrPort, tap func(lludp.Datagram), log *slog.Logger) (*Relay, error) {
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		return nil, fmt.Errorf("relay: listen: %w", err)
	}
	upstream, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(sim))
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("relay: dial the simulator: %w", err)
	}
	for _, c := range []*net.UDPConn{conn, upstream} {
		// Bursts must queue in the emulated FIFO, not in the socket.
		c.SetReadBuffer(4 << 20)
		c.SetWriteBuffer(4 << 20)
	}
	r := &Relay{b: b, log: log, conn: conn, upstream: upstream, tap: tap}
	// Captures give the datagrams the addresses of tcpflow's hosts.
	upUDP := link.UDPEndpoints{Src: pcapViewer, Dst: pcapRegion}
	downUDP := link.UDPEndpoints{Src: pcapRegion, Dst: pcapViewer}
	if r.up, err = b.AddFlow(link.FlowConfig{Name: ViewerUpFlow, Dir: link.Up, Overhead: udpOverhead, UDP: upUDP, Deliver: r.deliverUp}); err == nil {
		r.down, err = b.AddFlow(link.FlowConfig{Name: ViewerDownFlow, Dir: link.Down, Overhead: udpOverhead, UDP: downUDP, Deliver: r.deliverDown})
	}
	if err != nil {
		r.close()
		return nil, fmt.Errorf("relay: %w", err)
	}
	return r, nil
}

// Addr is where the viewer sends: the simulator as it knows it.
func (r *Relay) Addr() netip.AddrPort { return r.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

func (r *Relay) close() {
	r.conn.Close()
	r.upstream.Close()
}

// Run relays until ctx ends, then closes the sockets.
func (r *Relay) Run(ctx context.Context) error {
	stop := context.AfterFunc(ctx, r.close)
	defer stop()
	var wg sync.WaitGroup
	wg.Go(func() { r.read(r.conn, true) })
	wg.Go(func() { r.read(r.upstream, false) })
	wg.Wait()
	return nil
}

func (r *Relay) read(c *net.UDPConn, up bool) {
	buf := make([]byte, 65536)
	for {
		n, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// A refused send to a simulator not yet up reports on the next
			// read; keep reading.
			continue
		}
		payload := append([]byte(nil), buf[:n]...)
		if up {
			r.mu.Lock()
			r.viewer = from
			r.mu.Unlock()
			r.InjectUp(from, payload)
			continue
		}
		r.b.Send(r.down, payload)
	}
}

// InjectUp sends payload towards the simulator as the viewer, across the
// bottleneck: how the sidecar's AgentThrottle leaves the viewer's host.
func (r *Relay) InjectUp(viewer netip.AddrPort, payload []byte) {
	if r.tap != nil {
		r.tap(lludp.Datagram{At: time.Now(), Src: viewer, Dst: r.Addr(), Payload: append([]byte(nil), payload...)})
	}
	r.b.Send(r.up, payload)
}

func (r *Relay) deliverUp(p []byte) { r.upstream.Write(p) }

func (r *Relay) deliverDown(p []byte) {
	r.mu.Lock()
	v := r.viewer
	r.mu.Unlock()
	if !v.IsValid() {
		return
	}
	if r.tap != nil {
		r.tap(lludp.Datagram{At: time.Now(), Src: r.Addr(), Dst: v, Payload: p})
	}
	r.conn.WriteToUDPAddrPort(p, v)
}

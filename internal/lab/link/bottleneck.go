package link

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Direction is the way a packet crosses the bottleneck.
type Direction uint8

const (
	// Up is from the client side (viewers, TCP clients) to the server side.
	Up Direction = iota
	// Down is from the server side to the client side.
	Down
)

func (d Direction) String() string {
	if d == Up {
		return "up"
	}
	return "down"
}

// BottleneckConfig describes the shared link: one pipe per direction.
type BottleneckConfig struct {
	// Up and Down are each direction's rate, drop-tail buffer (datagrams
	// or bytes), delay and loss. Sizes are what a packet takes on the
	// wire from the IP header on: an IP packet's length, or a UDP
	// payload's plus its flow's Overhead.
	Up, Down PipeConfig
	// Seed makes the loss processes repeatable (each direction derives its
	// own stream from it).
	Seed uint64
	// Tap, if set, sees every packet when it arrives, is dropped and is
	// delivered. The packet is only valid during the call; the tap must not
	// block, since it runs under the bottleneck's lock.
	Tap func(Event)
}

// EventKind says what a tapped Event is.
type EventKind uint8

const (
	Arrived EventKind = iota
	Dropped
	Delivered
)

// Event is a packet the tap sees.
type Event struct {
	Kind EventKind
	At   time.Time
	Flow Flow
	Dir  Direction
	// Cause says why a Dropped packet was.
	Cause  Cause
	Packet []byte
	// UDP is the flow's UDPEndpoints: set if Packet is a UDP payload.
	UDP UDPEndpoints
}

// FlowConfig registers a flow with a bottleneck.
type FlowConfig struct {
	// Name labels the flow in statistics ("cubic download data", "lludp
	// 127.0.0.1:5000 up"); names are unique per bottleneck.
	Name string
	Dir  Direction
	// Overhead is added to each packet's length for the rate and the
	// buffer in bytes: 0 for IP packets, 28 (IPv4 and UDP headers) for UDP
	// payloads, so that a datagram costs what it would on the wire.
	Overhead int
	// UDP, for a flow of UDP payloads rather than IP packets, names the
	// endpoints a capture gives them (see PcapWriter); set Overhead to 28
	// as well.
	UDP UDPEndpoints
	// Deliver receives each packet at the far end when it arrives there,
	// and owns it from then on. It runs on the bottleneck's Run goroutine
	// and must not block: it should hand the packet on (to a TUN device, a
	// userspace stack, a socket) and return.
	Deliver func(packet []byte)
}

// FlowReport is one flow's statistics, with what identifies it.
type FlowReport struct {
	Flow Flow
	Name string
	Dir  Direction
	FlowStats
}

// BottleneckStats is a snapshot of a bottleneck: each direction's totals
// and every flow's share.
type BottleneckStats struct {
	Up, Down FlowStats
	Flows    []FlowReport // in the order the flows were added
}

// Flow returns the report of the flow called name.
func (s BottleneckStats) Flow(name string) (FlowReport, bool) {
	for _, f := range s.Flows {
		if f.Name == name {
			return f, true
		}
	}
	return FlowReport{}, false
}

// Since returns what happened between earlier, a snapshot of the same
// bottleneck, and s; flows added in between count from their start.
func (s BottleneckStats) Since(earlier BottleneckStats) BottleneckStats {
	out := BottleneckStats{Up: s.Up.Since(earlier.Up), Down: s.Down.Since(earlier.Down), Flows: make([]FlowReport, len(s.Flows))}
	for i, f := range s.Flows {
		out.Flows[i] = f
		if i < len(earlier.Flows) {
			out.Flows[i].FlowStats = f.FlowStats.Since(earlier.Flows[i].FlowStats)
		} else if !earlier.Up.At.IsZero() {
			// A flow added since had sent nothing before earlier: its
			// interval is the same as the others'.
			out.Flows[i].Start = earlier.Up.At
		}
	}
	return out
}

type flow struct {
	FlowConfig
}

type pending struct {
	at     time.Time
	flow   Flow
	packet []byte
}

// Bottleneck is a shared link between a client side and a server side:
// per direction, one Pipe (drop-tail FIFO, rate, delay, loss) that every
// flow's packets share. Packets are opaque bytes with a flow label; Send
// decides each one's fate on arrival, and Run hands it to its flow's
// Deliver when it reaches the far end. It reads the clock (time.Now and
// timers) only to stamp arrivals and to wait for deliveries, so inside a
// testing/synctest bubble it runs on the bubble's virtual time.
type Bottleneck struct {
	log  *slog.Logger
	tap  func(Event)
	wake chan struct{}

	mu      sync.Mutex // guards the fields below
	pipes   [2]*Pipe   // by Direction
	flows   []flow
	names   map[string]Flow
	pending [2][]pending // by Direction, in delivery order (FIFO, one delay)
	heads   [2]int
}

// NewBottleneck builds a bottleneck; Run delivers its packets.
func NewBottleneck(cfg BottleneckConfig, log *slog.Logger) (*Bottleneck, error) {
	up, err := NewPipe(cfg.Up, cfg.Seed^0xA5A5A5A5)
	if err != nil {
		return nil, fmt.Errorf("link: up: %w", err)
	}
	down, err := NewPipe(cfg.Down, cfg.Seed)
	if err != nil {
		return nil, fmt.Errorf("link: down: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Bottleneck{log: log, tap: cfg.Tap, wake: make(chan struct{}, 1), pipes: [2]*Pipe{Up: up, Down: down}, names: map[string]Flow{}}, nil
}

// AddFlow registers a flow and returns its label for Send.
func (b *Bottleneck) AddFlow(cfg FlowConfig) (Flow, error) {
	if cfg.Deliver == nil {
		return 0, fmt.Errorf("link: flow %q has no Deliver", cfg.Name)
	}
	if cfg.Dir != Up && cfg.Dir != Down {
		return 0, fmt.Errorf("link: flow %q: direction %d is neither up nor down", cfg.Name, cfg.Dir)
	}
	if cfg.Overhead < 0 {
		return 0, fmt.Errorf("link: flow %q: overhead %d is negative", cfg.Name, cfg.Overhead)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, dup := b.names[cfg.Name]; dup {
		return 0, fmt.Errorf("link: flow %q already exists", cfg.Name)
	}
	if len(b.flows) >= MaxFlows {
		return 0, fmt.Errorf("link: flow %q: already %d flows", cfg.Name, MaxFlows)
	}
	f := Flow(len(b.flows))
	b.flows = append(b.flows, flow{cfg})
	b.names[cfg.Name] = f
	return f, nil
}

// ErrUnknownFlow is Send's answer for a label AddFlow did not hand out.
var ErrUnknownFlow = errors.New("link: unknown flow")

// Send offers a packet of flow f to its direction's pipe now, and reports
// its fate. The bottleneck owns packet from then on (it is delivered, not
// copied): the caller must not reuse it.
func (b *Bottleneck) Send(f Flow, packet []byte) (Cause, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if int(f) >= len(b.flows) {
		return 0, ErrUnknownFlow
	}
	fl := &b.flows[f]
	now := time.Now()
	if b.tap != nil {
		b.tap(Event{Kind: Arrived, At: now, Flow: f, Dir: fl.Dir, Packet: packet, UDP: fl.UDP})
	}
	at, cause := b.pipes[fl.Dir].OfferFlow(f, len(packet)+fl.Overhead, now)
	if cause != Forwarded {
		if b.tap != nil {
			b.tap(Event{Kind: Dropped, At: now, Flow: f, Dir: fl.Dir, Cause: cause, Packet: packet, UDP: fl.UDP})
		}
		return cause, nil
	}
	q := &b.pending[fl.Dir]
	if b.heads[fl.Dir] == len(*q) {
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
	*q = append(*q, pending{at: at, flow: f, packet: packet})
	return Forwarded, nil
}

// Stats returns a snapshot of the bottleneck as of now.
func (b *Bottleneck) Stats() BottleneckStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	var s BottleneckStats
	var flows [2][]FlowStats
	s.Up, flows[Up] = b.pipes[Up].FlowStats(now)
	s.Down, flows[Down] = b.pipes[Down].FlowStats(now)
	s.Flows = make([]FlowReport, len(b.flows))
	for i, f := range b.flows {
		r := FlowReport{Flow: Flow(i), Name: f.Name, Dir: f.Dir}
		if d := flows[f.Dir]; i < len(d) {
			r.FlowStats = d[i]
		} else {
			r.Start, r.At = now, now
		}
		s.Flows[i] = r
	}
	return s
}

// Run delivers packets when they reach the far end, until ctx ends.
// Packets still on their way then are not delivered.
func (b *Bottleneck) Run(ctx context.Context) error {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var due [2][]delivered
	for {
		b.mu.Lock()
		now := time.Now()
		next := time.Hour
		for d := range b.pending {
			q, h := b.pending[d], b.heads[d]
			due[d] = due[d][:0]
			for h < len(q) && !q[h].at.After(now) {
				f := &b.flows[q[h].flow]
				if b.tap != nil {
					b.tap(Event{Kind: Delivered, At: q[h].at, Flow: q[h].flow, Dir: f.Dir, Packet: q[h].packet, UDP: f.UDP})
				}
				due[d] = append(due[d], delivered{at: q[h].at, deliver: f.Deliver, packet: q[h].packet})
				q[h] = pending{}
				h++
			}
			if h < len(q) {
				next = min(next, q[h].at.Sub(now))
			}
			// Reclaim the delivered prefix once it is most of the slice.
			if h > 64 && h*2 > len(q) {
				n := copy(q, q[h:])
				clear(q[n:])
				q, h = q[:n], 0
			}
			b.pending[d], b.heads[d] = q, h
		}
		b.mu.Unlock()
		// Each direction's packets are in order: merge the two, so that
		// after a late wake-up they still go out as they would arrive.
		u, d := due[Up], due[Down]
		for len(u) > 0 || len(d) > 0 {
			if len(d) == 0 || len(u) > 0 && !d[0].at.Before(u[0].at) {
				u[0].deliver(u[0].packet)
				u = u[1:]
			} else {
				d[0].deliver(d[0].packet)
				d = d[1:]
			}
		}
		clear(due[Up])
		clear(due[Down])
		timer.Reset(next)
		select {
		case <-ctx.Done():
			return nil
		case <-b.wake:
		case <-timer.C:
		}
	}
}

type delivered struct {
	at      time.Time
	deliver func([]byte)
	packet  []byte
}

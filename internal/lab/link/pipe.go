package link

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// PipeConfig describes one direction of a link. Validate says which values
// it refuses; NewPipe refuses them too.
type PipeConfig struct {
	// Rate is the bottleneck in bytes/s; 0 is unlimited.
	Rate int64
	// Delay is the one-way propagation delay, up to a minute.
	Delay time.Duration
	// Loss is the probability a datagram is dropped at random, 0–1; 1
	// drops every datagram.
	Loss float64
	// BurstLen above 1 makes losses come in bursts of that mean length, in
	// datagrams (a two-state Gilbert–Elliott channel), with the same mean
	// rate Loss; 0 or 1 makes them independent. A mean burst shorter than
	// one datagram means nothing and is refused.
	BurstLen float64
	// Buffer is the drop-tail FIFO's limit in datagrams ahead of the
	// bottleneck, the one being serialised included; a datagram arriving to
	// a full buffer is dropped. 0 means 1000, or no limit in datagrams when
	// BufferBytes is set. With an unlimited Rate nothing queues and it has
	// no effect.
	Buffer int
	// BufferBytes, if set, limits the FIFO in bytes as well: a datagram
	// that would take the bytes waiting (the one being serialised
	// included) beyond it is dropped. Access points and DSL modems count
	// packets, but kernel qdiscs and some routers count bytes.
	BufferBytes int
}

// DefaultBuffer is the FIFO length a zero Buffer stands for.
const DefaultBuffer = 1000

// Validate reports every value the pipe would have to reinterpret: a
// negative rate, delay or buffer (in datagrams or bytes), a delay beyond a minute, a loss outside
// [0, 1] or NaN, a burst length that is NaN, negative, between 0 and 1 or
// beyond 1e6.
func (c PipeConfig) Validate() error {
	var errs []error
	if c.Rate < 0 {
		errs = append(errs, fmt.Errorf("rate %d B/s is negative", c.Rate))
	}
	if c.Delay < 0 || c.Delay > time.Minute {
		errs = append(errs, fmt.Errorf("delay %v outside [0, 1m]", c.Delay))
	}
	if !(c.Loss >= 0 && c.Loss <= 1) {
		errs = append(errs, fmt.Errorf("loss %v outside [0, 1]", c.Loss))
	}
	if !(c.BurstLen == 0 || c.BurstLen >= 1 && c.BurstLen <= 1e6) {
		errs = append(errs, fmt.Errorf("burst length %v: want 1 (independent losses) to 1e6 datagrams, or 0 for 1", c.BurstLen))
	}
	if c.Buffer < 0 {
		errs = append(errs, fmt.Errorf("buffer %d is negative", c.Buffer))
	}
	if c.BufferBytes < 0 {
		errs = append(errs, fmt.Errorf("buffer %d bytes is negative", c.BufferBytes))
	}
	return errors.Join(errs...)
}

// String says what a pipe of this configuration does, in the units of
// fairgrid link's flags: "2000 kbit/s, buffer 100 datagrams, delay 50ms,
// loss 3% (independent)".
func (c PipeConfig) String() string {
	var b strings.Builder
	if c.Rate == 0 {
		b.WriteString("unlimited rate")
	} else {
		fmt.Fprintf(&b, "%s kbit/s, buffer ", strconv.FormatFloat(float64(c.Rate)*8/1000, 'f', -1, 64))
		switch {
		case c.BufferBytes == 0:
			fmt.Fprintf(&b, "%d datagrams", cmp.Or(c.Buffer, DefaultBuffer))
		case c.Buffer == 0:
			fmt.Fprintf(&b, "%d bytes", c.BufferBytes)
		default:
			fmt.Fprintf(&b, "%d datagrams or %d bytes", c.Buffer, c.BufferBytes)
		}
	}
	fmt.Fprintf(&b, ", delay %v, loss %s%%", c.Delay, strconv.FormatFloat(c.Loss*100, 'f', -1, 64))
	switch {
	case c.Loss == 0:
	case c.BurstLen > 1:
		fmt.Fprintf(&b, " (bursts of %g on average)", c.BurstLen)
	default:
		b.WriteString(" (independent)")
	}
	return b.String()
}

// Cause says what became of a datagram offered to a pipe.
type Cause uint8

const (
	Forwarded     Cause = iota
	DroppedRandom       // the random (or bursty) loss process
	DroppedQueue        // the FIFO ahead of the bottleneck was full
)

// String names the cause as the statistics do.
func (c Cause) String() string {
	switch c {
	case Forwarded:
		return "forwarded"
	case DroppedRandom:
		return "dropped at random"
	case DroppedQueue:
		return "dropped by the full queue"
	}
	return "cause(" + strconv.Itoa(int(c)) + ")"
}

// PipeStats counts one direction.
type PipeStats struct {
	Forwarded     uint64
	DroppedRandom uint64
	DroppedQueue  uint64
	// QueueDelay is the total time forwarded datagrams waited for the
	// bottleneck; divide by Forwarded for the mean.
	QueueDelay time.Duration
}

// QueueDelayMean is the mean queueing delay of forwarded datagrams.
func (s PipeStats) QueueDelayMean() time.Duration {
	if s.Forwarded == 0 {
		return 0
	}
	return s.QueueDelay / time.Duration(s.Forwarded)
}

// Flow labels the datagrams or packets of one flow through a pipe, for
// per-flow statistics: a small index (a Bottleneck hands them out). Offer
// counts as flow 0.
type Flow uint16

// MaxFlows is the number of distinct flow labels.
const MaxFlows = 1 << 16

// FlowStats counts one flow through a pipe (or all of them) from Start to
// At. Bytes are as on the wire: a Bottleneck's flow's Overhead included. Every packet that arrived is in exactly one of Delivered,
// DroppedRandom, DroppedQueue, Queued and InFlight: Conserved checks it.
type FlowStats struct {
	Start, At time.Time
	// Arrived counts the packets offered, ArrivedBytes their sizes.
	Arrived, ArrivedBytes uint64
	// Delivered counts the packets that reached the far end by At.
	Delivered, DeliveredBytes uint64
	DroppedRandom             uint64
	DroppedQueue              uint64
	// Queued is the number waiting for or being serialised by the
	// bottleneck at At, InFlight the number on the delay line behind it.
	// Both are levels, not counts over the interval.
	Queued, InFlight uint64
	// QueueDelay is the wait ahead of the bottleneck of every packet
	// forwarded (recorded on arrival, when it is known).
	QueueDelay DelayHistogram
}

// Conserved reports whether every packet that arrived is accounted for.
func (s *FlowStats) Conserved() bool {
	return s.Arrived == s.Delivered+s.DroppedRandom+s.DroppedQueue+s.Queued+s.InFlight
}

// Dropped is the number of packets dropped for either cause.
func (s *FlowStats) Dropped() uint64 { return s.DroppedRandom + s.DroppedQueue }

// Throughput is the rate in bytes/s at which the flow's packets reached
// the far end between Start and At; 0 over an empty interval.
func (s *FlowStats) Throughput() float64 {
	d := s.At.Sub(s.Start)
	if d <= 0 {
		return 0
	}
	return float64(s.DeliveredBytes) / d.Seconds()
}

// Since returns what happened between earlier, a snapshot of the same
// flow, and s: counters and the delay histogram taken apart, the levels
// (Queued, InFlight) as of s.At. A run's warm-up is left out so.
func (s FlowStats) Since(earlier FlowStats) FlowStats {
	s.Start = earlier.At
	s.Arrived -= earlier.Arrived
	s.ArrivedBytes -= earlier.ArrivedBytes
	s.Delivered -= earlier.Delivered
	s.DeliveredBytes -= earlier.DeliveredBytes
	s.DroppedRandom -= earlier.DroppedRandom
	s.DroppedQueue -= earlier.DroppedQueue
	s.QueueDelay = s.QueueDelay.Since(earlier.QueueDelay)
	return s
}

// add sums o into s (the total over flows).
func (s *FlowStats) add(o *FlowStats) {
	s.Arrived += o.Arrived
	s.ArrivedBytes += o.ArrivedBytes
	s.Delivered += o.Delivered
	s.DeliveredBytes += o.DeliveredBytes
	s.DroppedRandom += o.DroppedRandom
	s.DroppedQueue += o.DroppedQueue
	s.Queued += o.Queued
	s.InFlight += o.InFlight
	s.QueueDelay.merge(&o.QueueDelay)
}

// lossProcess drops datagrams at random, independently or in bursts.
type lossProcess struct {
	loss, burstLen float64
	rng            *rand.Rand
	bad            bool // Gilbert–Elliott: in the lossy state
}

func (l *lossProcess) lost() bool {
	switch {
	case l.loss == 0:
		return false
	case l.loss == 1:
		// The Gilbert–Elliott chain below would still leave the bad state
		// now and then: at 100 % nothing gets through.
		return true
	case l.burstLen <= 1:
		return l.rng.Float64() < l.loss
	}
	// Stay bad for BurstLen datagrams on average; enter so that the
	// stationary share of bad datagrams is Loss.
	leave := 1 / l.burstLen
	enter := l.loss * leave / (1 - l.loss)
	if l.bad {
		l.bad = l.rng.Float64() >= leave
	} else {
		l.bad = l.rng.Float64() < enter
	}
	return l.bad
}

// entry is a forwarded packet the pipe still holds: queued, being
// serialised or on the delay line.
type entry struct {
	depart int64 // ns at which it leaves the bottleneck
	size   int64
	flow   Flow
}

// Pipe is one direction of an emulated link: a drop-tail FIFO ahead of a
// bottleneck of fixed rate, then a fixed delay, with random or bursty loss
// before the queue. It decides each datagram's fate from its arrival time
// and size alone — no clock, no goroutines — so a seeded pipe given the same
// arrivals makes the same decisions. It keeps statistics per flow.
type Pipe struct {
	cfg        PipeConfig
	loss       lossProcess
	delay      int64
	entries    []entry // forwarded and not yet delivered, in departure order
	head       int     // entries[head:departed] are on the delay line
	departed   int     // entries[departed:] wait for or are in the bottleneck
	queued     int64   // bytes in entries[departed:]
	lastDepart int64
	now        int64 // the latest time the pipe was told of
	start      time.Time
	stats      PipeStats
	flows      []FlowStats // by Flow; Start, At, Queued and InFlight unset
}

// NewPipe returns a pipe whose randomness comes from seed.
func NewPipe(cfg PipeConfig, seed uint64) (*Pipe, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.BufferBytes == 0 {
		cfg.Buffer = cmp.Or(cfg.Buffer, DefaultBuffer)
	}
	return &Pipe{cfg: cfg, delay: int64(cfg.Delay),
		loss: lossProcess{loss: cfg.Loss, burstLen: cfg.BurstLen, rng: rand.New(rand.NewPCG(seed, 0x5EED))}}, nil
}

// advance moves the pipe's time to ns (never back) and lets go of what
// has left the bottleneck and what has been delivered by then.
func (p *Pipe) advance(ns int64) int64 {
	if ns < p.now {
		ns = p.now
	}
	p.now = ns
	for p.departed < len(p.entries) && p.entries[p.departed].depart <= ns {
		p.queued -= p.entries[p.departed].size
		p.departed++
	}
	for p.head < p.departed && p.entries[p.head].depart+p.delay <= ns {
		e := &p.entries[p.head]
		f := &p.flows[e.flow]
		f.Delivered++
		f.DeliveredBytes += uint64(e.size)
		p.head++
	}
	// Reclaim the delivered prefix once it is most of the slice, so the
	// FIFO stays as long as the packets it holds.
	if p.head > 64 && p.head*2 > len(p.entries) {
		n := copy(p.entries, p.entries[p.head:])
		p.entries = p.entries[:n]
		p.departed -= p.head
		p.head = 0
	}
	return ns
}

// Offer decides the fate of a datagram of size bytes arriving at now
// (arrivals must not go back in time; an earlier time counts as the latest
// one). It returns when the datagram reaches the far end, if it does. It
// counts as flow 0.
func (p *Pipe) Offer(size int, now time.Time) (deliver time.Time, cause Cause) {
	return p.OfferFlow(0, size, now)
}

// OfferFlow is Offer for a packet of a given flow.
func (p *Pipe) OfferFlow(flow Flow, size int, now time.Time) (deliver time.Time, cause Cause) {
	ns := p.advance(now.UnixNano())
	if p.start.IsZero() {
		p.start = time.Unix(0, ns)
	}
	for int(flow) >= len(p.flows) {
		p.flows = append(p.flows, FlowStats{})
	}
	f := &p.flows[flow]
	f.Arrived++
	f.ArrivedBytes += uint64(size)
	if p.loss.lost() {
		p.stats.DroppedRandom++
		f.DroppedRandom++
		return time.Time{}, DroppedRandom
	}
	depart := ns
	if p.cfg.Rate > 0 {
		waiting := len(p.entries) - p.departed
		if p.cfg.Buffer > 0 && waiting >= p.cfg.Buffer ||
			p.cfg.BufferBytes > 0 && p.queued+int64(size) > int64(p.cfg.BufferBytes) {
			p.stats.DroppedQueue++
			f.DroppedQueue++
			return time.Time{}, DroppedQueue
		}
		depart = max(ns, p.lastDepart) + int64(size)*int64(time.Second)/p.cfg.Rate
		p.lastDepart = depart
		p.stats.QueueDelay += time.Duration(depart - ns)
		p.queued += int64(size)
	}
	f.QueueDelay.Add(time.Duration(depart - ns))
	p.entries = append(p.entries, entry{depart: depart, size: int64(size), flow: flow})
	if depart <= ns {
		// Nothing to serialise (unlimited rate): straight onto the
		// delay line.
		p.departed = len(p.entries)
	}
	p.stats.Forwarded++
	return time.Unix(0, depart+p.delay), Forwarded
}

// Stats returns the pipe's counters.
func (p *Pipe) Stats() PipeStats { return p.stats }

// FlowStats returns, as of now, each flow's statistics (indexed by Flow,
// as far as the highest flow seen) and their total, from the first
// arrival on. now must not go back in time either.
func (p *Pipe) FlowStats(now time.Time) (total FlowStats, flows []FlowStats) {
	ns := p.advance(now.UnixNano())
	at := time.Unix(0, ns)
	start := cmp.Or(p.start, at)
	flows = make([]FlowStats, len(p.flows))
	for i := range p.flows {
		flows[i] = p.flows[i]
		flows[i].Start, flows[i].At = start, at
	}
	for _, e := range p.entries[p.head:p.departed] {
		flows[e.flow].InFlight++
	}
	for _, e := range p.entries[p.departed:] {
		flows[e.flow].Queued++
	}
	total.Start, total.At = start, at
	for i := range flows {
		total.add(&flows[i])
	}
	return total, flows
}

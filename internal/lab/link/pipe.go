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
	// Buffer is the FIFO length in datagrams ahead of the bottleneck; a
	// datagram arriving to a full buffer is dropped. 0 means 1000. With an
	// unlimited Rate nothing queues and it has no effect.
	Buffer int
}

// DefaultBuffer is the FIFO length a zero Buffer stands for.
const DefaultBuffer = 1000

// Validate reports every value the pipe would have to reinterpret: a
// negative rate, delay or buffer, a delay beyond a minute, a loss outside
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
		fmt.Fprintf(&b, "%s kbit/s, buffer %d datagrams", strconv.FormatFloat(float64(c.Rate)*8/1000, 'f', -1, 64), cmp.Or(c.Buffer, DefaultBuffer))
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

// Pipe is one direction of an emulated link: a FIFO in datagrams ahead of a
// bottleneck of fixed rate, then a fixed delay, with random or bursty loss
// before the queue. It decides each datagram's fate from its arrival time
// and size alone — no clock, no goroutines — so a seeded pipe given the same
// arrivals makes the same decisions.
type Pipe struct {
	cfg        PipeConfig
	rng        *rand.Rand
	bad        bool    // Gilbert–Elliott: in the lossy state
	departures []int64 // ns at which queued datagrams leave the bottleneck, in order
	lastDepart int64
	stats      PipeStats
}

// NewPipe returns a pipe whose randomness comes from seed.
func NewPipe(cfg PipeConfig, seed uint64) (*Pipe, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Buffer = cmp.Or(cfg.Buffer, DefaultBuffer)
	return &Pipe{cfg: cfg, rng: rand.New(rand.NewPCG(seed, 0x5EED))}, nil
}

func (p *Pipe) lost() bool {
	switch {
	case p.cfg.Loss == 0:
		return false
	case p.cfg.Loss == 1:
		// The Gilbert–Elliott chain below would still leave the bad state
		// now and then: at 100 % nothing gets through.
		return true
	case p.cfg.BurstLen <= 1:
		return p.rng.Float64() < p.cfg.Loss
	}
	// Stay bad for BurstLen datagrams on average; enter so that the
	// stationary share of bad datagrams is Loss.
	leave := 1 / p.cfg.BurstLen
	enter := p.cfg.Loss * leave / (1 - p.cfg.Loss)
	if p.bad {
		p.bad = p.rng.Float64() >= leave
	} else {
		p.bad = p.rng.Float64() < enter
	}
	return p.bad
}

// Offer decides the fate of a datagram of size bytes arriving at now
// (arrivals must not go back in time; an earlier time counts as now's
// predecessor). It returns when the datagram reaches the far end, if it
// does.
func (p *Pipe) Offer(size int, now time.Time) (deliver time.Time, cause Cause) {
	ns := now.UnixNano()
	for len(p.departures) > 0 && p.departures[0] <= ns {
		p.departures = p.departures[1:]
	}
	if p.lost() {
		p.stats.DroppedRandom++
		return time.Time{}, DroppedRandom
	}
	depart := ns
	if p.cfg.Rate > 0 {
		if len(p.departures) >= p.cfg.Buffer {
			p.stats.DroppedQueue++
			return time.Time{}, DroppedQueue
		}
		depart = max(ns, p.lastDepart) + int64(size)*int64(time.Second)/p.cfg.Rate
		p.lastDepart = depart
		p.departures = append(p.departures, depart)
		p.stats.QueueDelay += time.Duration(depart - ns)
	}
	p.stats.Forwarded++
	return time.Unix(0, depart).Add(p.cfg.Delay), Forwarded
}

// Stats returns the pipe's counters.
func (p *Pipe) Stats() PipeStats { return p.stats }

package ratecalc

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"time"
)

// Packet is one sequence number of the throttled flow (simulator to
// viewer), as the measurement layer saw it. Neutral on purpose: ratecalc
// knows nothing of LLUDP.
type Packet struct {
	// At is the arrival time, or for a lost packet its estimated time
	// (interpolated between its neighbours' arrivals, RFC 5348 §5.2).
	At time.Time
	// Size is the payload size in bytes of a received packet.
	Size int
	// Lost marks a sequence number declared lost.
	Lost bool
	// Repeat marks another copy of a sequence number already counted — a
	// resend, a duplicate. Its bytes count toward the receive rate (the
	// simulator spent its budget on them), but it is not a packet of the
	// loss history.
	Repeat bool
}

// Controller turns measurements of one circuit into the rate to request.
// Every input carries its time, and no implementation reads the clock, so
// a replayed capture gives the same decisions as live traffic.
type Controller interface {
	// OnPacket records one sequence number: received or lost.
	OnPacket(p Packet)
	// OnRTT records a round-trip sample taken at the given time.
	OnRTT(sample time.Duration, at time.Time)
	// Rate ends the current request interval at now and returns the rate
	// to request for the next one. Call it once per interval.
	Rate(now time.Time) Rate
	// Stats reports the controller's state for metrics and logs.
	Stats() Stats
}

// Stats is a controller's state after its latest decision.
type Stats struct {
	Rate          Rate    // the latest decision
	ReceiveRate   Rate    // X_recv over the latest request interval
	EquationRate  Rate    // the TFRC equation at the current p, R and FairSegmentSize; 0 before any loss
	LossEventRate float64 // p, 0 before any loss
	// SegmentLossEventRate is the loss events per 1,460 bytes received:
	// the p a TCP flow of full segments would have with the same events
	// (VirtualTCP's events; 0 for the others).
	SegmentLossEventRate float64
	LossEvents           uint64
	Received             uint64 // packets received
	Lost                 uint64 // packets declared lost
	SRTT                 time.Duration
	// PathRTT is the RTT VirtualTCP's window runs on (SRTT's gain
	// compounded over the round trips between sparse samples); 0 for the
	// others.
	PathRTT     time.Duration
	RTTVar      time.Duration
	RTTSamples  uint64
	SegmentSize float64 // s, bytes: the mean received payload
	// FairSegmentSize is the s the rate equations stand on: Config's
	// NominalSegment when set, else SegmentSize. A TCP-fair rate computed
	// outside the controller (a demo's column, an audit) uses it to agree
	// with the controller.
	FairSegmentSize float64
	Window          float64 // packets; window tracking only
	SlowStart       bool
	AppLimited      bool
	// BadInputs counts inputs that were clamped or ignored: RTT samples
	// that were zero or negative, events whose time went backwards.
	BadInputs uint64
}

// Config holds what every controller shares. Zero values take the defaults
// named on each field.
type Config struct {
	// Min and Max bound every decision. Zero Min is no floor beyond the
	// controller's own; zero Max is no ceiling.
	Min, Max Rate
	// InitialRTT is used until the first sample arrives. Default 100 ms
	// (quic-go's default, congestion.md §8.2); the viewer starts at 1 s.
	InitialRTT time.Duration
	// SegmentSize is the initial s in bytes, then a moving average of
	// received payloads (s = 0.9·s + 0.1·len, as Linux CCID 3). Default
	// 1200, the viewer's MTUBYTES.
	SegmentSize float64
	// NominalSegment, when positive, replaces the mean s in the fair rate:
	// window tracking's cwnd·s/SRTT and its largest window, TFRC's X_calc,
	// its first synthesised loss interval and its s/t_mbi floor. TFRC-SP
	// (RFC 4828 §3) takes 1460 bytes for a flow of small packets, so that
	// it gets the bytes per second a TCP flow of full segments gets at the
	// same loss event rate and RTT; RFC 5348 §3.1 takes the mean. Loss
	// events still count packets, and the application-limited test still
	// compares received bytes with the mean s (see Window). Zero: the mean.
	NominalSegment float64
}

// NominalSegmentSize is TFRC-SP's nominal segment (RFC 4828 §3): a full
// TCP segment on an Ethernet path (MSS 1460 B, RFC 894), the s that makes
// a flow of small packets as fair in bytes per second as a bulk TCP flow.
const NominalSegmentSize = 1460

const (
	defaultInitialRTT  = 100 * time.Millisecond
	defaultSegmentSize = 1200
	// segmentGain is the weight of a new payload in s (Linux CCID 3).
	segmentGain = 0.1
	// tMBI is t_mbi of RFC 5348 §4.3: the floor is one segment per 64 s.
	tMBI = 64 * time.Second
)

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("invalid rate controller configuration")

func (c Config) withDefaults() (Config, error) {
	c.InitialRTT = cmp.Or(c.InitialRTT, defaultInitialRTT)
	c.SegmentSize = cmp.Or(c.SegmentSize, defaultSegmentSize)
	var errs []error
	if c.InitialRTT < 0 {
		errs = append(errs, fmt.Errorf("initial RTT %v is negative: %w", c.InitialRTT, ErrConfig))
	}
	if !(c.SegmentSize >= 1 && c.SegmentSize <= 65535) {
		errs = append(errs, fmt.Errorf("segment size %v outside [1, 65535] bytes: %w", c.SegmentSize, ErrConfig))
	}
	if !(c.NominalSegment == 0 || c.NominalSegment >= 1 && c.NominalSegment <= 65535) {
		errs = append(errs, fmt.Errorf("nominal segment %v: want 0 (the mean) or [1, 65535] bytes: %w", c.NominalSegment, ErrConfig))
	}
	if !(c.Min >= 0) || math.IsInf(float64(c.Min), 0) {
		errs = append(errs, fmt.Errorf("min rate %v: %w", c.Min, ErrConfig))
	}
	if !(c.Max >= 0) {
		errs = append(errs, fmt.Errorf("max rate %v: %w", c.Max, ErrConfig))
	}
	c.Max = cmp.Or(c.Max, Rate(math.MaxFloat64))
	if c.Max < c.Min {
		errs = append(errs, fmt.Errorf("max rate %v below min rate %v: %w", c.Max, c.Min, ErrConfig))
	}
	return c, errors.Join(errs...)
}

// flow is the measurement state every controller keeps: RTT, segment size,
// loss history, and the bytes received per request interval.
type flow struct {
	cfg  Config
	rtt  RTTStats
	loss LossHistory
	s    float64

	now           time.Time // latest event time: time never goes backwards
	intervalStart time.Time
	intervalBytes float64
	intervalLost  uint64
	intervalRecv  uint64
	recvRate      Rate // X_recv of the latest closed interval

	received, lost, badInputs uint64
}

func newFlow(cfg Config) flow { return flow{cfg: cfg, s: cfg.SegmentSize} }

// clock returns at, or the latest time seen if at is earlier (counted): a
// capture's timestamps can step back, and estimates must not.
func (f *flow) clock(at time.Time) time.Time {
	if f.now.IsZero() {
		f.now, f.intervalStart = at, at
	}
	if at.Before(f.now) {
		f.badInputs++
		return f.now
	}
	f.now = at
	return at
}

// observe records a packet and reports whether it began a loss event and
// whether that was the first.
//
// A lost packet's time is an estimate made when the loss is declared, three
// arrivals later, so it may be earlier than the latest arrival: it is used
// as given for grouping losses into events and does not move the clock back.
func (f *flow) observe(p Packet) (at time.Time, newEvent, first bool) {
	if p.Repeat {
		f.clock(p.At)
		f.intervalBytes += float64(max(p.Size, 0))
		return p.At, false, false
	}
	if p.Lost && !f.now.IsZero() && p.At.Before(f.now) {
		at = p.At
	} else {
		at = f.clock(p.At)
	}
	if p.Lost {
		f.lost++
		f.intervalLost++
	} else {
		f.received++
		f.intervalRecv++
		size := float64(max(p.Size, 0))
		f.intervalBytes += size
		if size > 0 {
			f.s = (1-segmentGain)*f.s + segmentGain*size
		}
	}
	newEvent, first = f.loss.OnPacket(p.Lost, at, f.srtt())
	return at, newEvent, first
}

func (f *flow) onRTT(sample time.Duration, at time.Time) {
	f.clock(at)
	if sample <= 0 {
		f.badInputs++
		return
	}
	f.rtt.Add(sample)
}

// fairS is the s of the rate equations: the nominal segment if
// configured, else the mean payload.
func (f *flow) fairS() float64 {
	if f.cfg.NominalSegment > 0 {
		return f.cfg.NominalSegment
	}
	return f.s
}

// srtt is the smoothed RTT, or the initial RTT before any sample.
func (f *flow) srtt() time.Duration {
	if f.rtt.Samples() == 0 {
		return f.cfg.InitialRTT
	}
	return f.rtt.SRTT()
}

// partialRate is the receive rate of the interval in progress, or of the
// latest closed one while the current is shorter than an RTT.
func (f *flow) partialRate() Rate {
	if d := since(f.now, f.intervalStart); d >= f.srtt() {
		return RateFromDelta(f.intervalBytes, d)
	}
	return f.recvRate
}

// since is t.Sub(u) for the times of one run, on the per-datagram paths:
// the difference of their Unix nanoseconds, exact whenever the true
// difference fits in a Duration (outside 1678–2262 UnixNano wraps, the
// same way for both; its documentation calls that undefined, and
// TestSince would catch a change), where Sub checks for overflow by
// adding the result back, which cost vtcp a fifth of its time per
// datagram. It reads the wall clock, never the monotonic reading: the
// same for a replayed capture as live, and a step of the wall clock
// during a live run moves it.
func since(t, u time.Time) time.Duration { return time.Duration(t.UnixNano() - u.UnixNano()) }

// closeInterval ends the request interval at now and returns X_recv over it.
func (f *flow) closeInterval(now time.Time) Rate {
	now = f.clock(now)
	f.recvRate = RateFromDelta(f.intervalBytes, now.Sub(f.intervalStart))
	f.intervalStart, f.intervalBytes, f.intervalLost, f.intervalRecv = now, 0, 0, 0
	return f.recvRate
}

func (f *flow) stats() Stats {
	st := Stats{
		ReceiveRate:     f.recvRate,
		LossEventRate:   f.loss.LossEventRate(),
		LossEvents:      f.loss.Events(),
		Received:        f.received,
		Lost:            f.lost,
		SRTT:            f.srtt(),
		RTTVar:          f.rtt.RTTVar(),
		RTTSamples:      f.rtt.Samples(),
		SegmentSize:     f.s,
		FairSegmentSize: f.fairS(),
		BadInputs:       f.badInputs + f.rtt.Rejected(),
	}
	if st.LossEventRate > 0 {
		st.EquationRate = TFRCRate(st.FairSegmentSize, st.SRTT, st.LossEventRate)
	}
	return st
}

// clamp applies the configured bounds and removes NaN.
func (f *flow) clamp(r Rate) Rate { return sane(r, f.cfg.Min, f.cfg.Max) }

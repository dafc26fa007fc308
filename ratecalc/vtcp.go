package ratecalc

import (
	"cmp"
	"fmt"
	"math"
	"time"
)

// VirtualTCPConfig configures a virtual TCP controller.
type VirtualTCPConfig struct {
	Config
	// InitialWindow is the starting window in 1,460-byte segments.
	// Default 4 (RFC 3390 for a 1,460-byte MSS: 4,380 bytes, rounded up).
	InitialWindow float64
	// MinWindow is the smallest window after a reduction, in segments.
	// Default 1: at heavy loss a TCP flow spends its time in timeouts,
	// below two segments per RTT on average.
	MinWindow float64
}

// VirtualTCP runs, at the receiver, the congestion window of a bulk TCP
// flow of full 1,460-byte segments on the viewer's path, and requests the
// rate that window implies, cwnd·1460/RTT, with the RTT measured through
// the same queue (pings), so that it includes the queueing delay TCP's RTT
// has, and smoothed by elapsed time rather than per sample (pathRTTGain:
// RFC 6298's per-sample gain on one ping per 5 s remembers the empty
// queue of the first sample for most of a minute). It is how a flow of small, smooth datagrams gets one TCP share of
// bytes beside TCP, where per-packet loss event rates give it a fraction
// (Rhee and Xu, SIGCOMM 2005; RFC 4828 §3):
//
//   - Losses count by bytes. Each lost datagram adds the mean payload's
//     fraction of a 1,460-byte segment (its own size is unknown); a loss
//     event of the virtual flow begins when a whole segment's worth has
//     been lost. At random loss a virtual segment is then lost as often per
//     byte as a real one; in a drop-tail overflow the viewer loses bytes in
//     proportion to the bytes it sends, as TCP does, so below TCP's rate it
//     loses less than a segment per overflow, skips the event and grows.
//     A lost datagram counts only for the virtual flow's part of what
//     arrives (ownShare): after a cut the viewer goes on at the request
//     in force until the next one takes effect, where TCP would have cut
//     at once and lost only its own rate's share of what is dropped.
//   - Losses within one RTT of an event's start belong to it (one
//     reduction per window, RFC 5681 §3.2), and count towards the next
//     event (onLoss says why).
//   - The window is CUBIC's (RFC 8312 §4: β = 0.7, C = 0.4, fast
//     convergence) with its TCP-friendly region (§4.2: never below Reno's
//     AIMD, α = 3(1−β)/(1+β) per RTT): CUBIC is the default TCP of Linux,
//     Windows and macOS, the region makes it Reno's equal on short paths.
//     Growth follows elapsed time, not arrivals, because the datagram rate
//     follows the request, which lags the window by up to an interval.
//   - Slow start doubles the window per SRTT until the first loss event.
//   - The window grows to at most growthLimit (2) times what arrives, and
//     not at all while what arrives is below 1/growthLimit of its rate: an
//     idle avatar cannot inflate it (RFC 7661 §4.3: a window is validated
//     while at least half of it is used), and a window cannot run far
//     ahead of a request that has yet to take effect.
//   - After a data-limited interval, one in which less than half of the
//     request arrived, the window is at least growthLimit times what
//     arrived (Rate says why): a region sending less than one share is
//     never throttled below its demand by the path's own losses.
//   - A TCP flow at heavy random loss spends its time in retransmission
//     timeouts, which the window does not model: the request is at most
//     the TFRC equation at the virtual flow's loss event rate per segment
//     and the path's smallest RTT (equationCap says why that RTT), with
//     CUBIC's average window between timeouts where that is the larger.
//
// Stats.LossEventRate stays RFC 5348's per-packet p (what is measured does
// not change); Stats.SegmentLossEventRate is the virtual flow's, per
// 1,460-byte segment received (RFC 5348 §5.4's average over its last eight
// intervals).
type VirtualTCP struct {
	flow
	cfg  VirtualTCPConfig
	rate Rate

	cwnd, wMax, wEst float64
	// rttSec, perRTT and maxWin are pRTT in seconds, its inverse per
	// nanosecond and maxWindow at it, kept by onPathRTT: every datagram
	// needs them, and the RTT changes only with a sample.
	rttSec, perRTT, maxWin float64
	k                      float64   // CUBIC's K, seconds
	epochStart             time.Time // the latest loss event's start
	slowStart              bool
	lostMass               float64 // segments lost since the latest event, fractional
	events                 uint64
	// segIntervals are the loss intervals between the virtual flow's
	// events, in 1,460-byte segments received, newest first: RFC 5348
	// §5.4's average over them is the loss event rate per segment.
	segOpenBytes float64 // bytes received since the latest event
	segIntervals [lossIntervals]float64
	segCount     int

	lastGrowth time.Time
	appLimited bool

	// pathRTT is the RTT the window runs on (pathRTTGain says why it is
	// not SRTT); pathRTTAt is its latest sample's time.
	pathRTT   time.Duration
	pathRTTAt time.Time
}

var _ Controller = (*VirtualTCP)(nil)

// CUBIC's constants (RFC 8312 §4.5, §4.6) and the Reno-friendly increase.
const (
	cubicBeta  = 0.7
	cubicC     = 0.4
	cubicAlpha = 3 * (1 - cubicBeta) / (1 + cubicBeta)

	// growthLimit bounds the window at this multiple of what arrives:
	// RFC 7661 §4.3's validated phase (pipeACK at least half of cwnd),
	// window tracking's guard too (congestion.md §6.4). It was 1.5, which
	// bound the window on a bloated link, where what arrives lags what is
	// sent by the queue's growth, and on a fast path: there the window
	// took two intervals to climb back from a cut and sat at 0.4–0.7× the
	// TCP flow beside it (docs/fairness.md, "Twice what arrives").
	growthLimit = 2.0

	defaultVirtualInitialWindow = 4
	defaultVirtualMinWindow     = 1
)

// NewVirtualTCP validates cfg and returns a virtual TCP controller.
func NewVirtualTCP(cfg VirtualTCPConfig) (*VirtualTCP, error) {
	c, err := cfg.withDefaults()
	cfg.InitialWindow = cmp.Or(cfg.InitialWindow, defaultVirtualInitialWindow)
	cfg.MinWindow = cmp.Or(cfg.MinWindow, defaultVirtualMinWindow)
	if err == nil && !(cfg.MinWindow > 0 && cfg.InitialWindow >= cfg.MinWindow && cfg.InitialWindow < 1e6) {
		err = fmt.Errorf("windows: initial %v, min %v: want 0 < min ≤ initial < 1e6: %w", cfg.InitialWindow, cfg.MinWindow, ErrConfig)
	}
	if err != nil {
		return nil, err
	}
	cfg.Config = c
	v := &VirtualTCP{flow: newFlow(c), cfg: cfg, cwnd: cfg.InitialWindow, slowStart: true}
	v.onPathRTT()
	return v, nil
}

func (v *VirtualTCP) OnPacket(p Packet) {
	at, _, _ := v.observe(p)
	if p.Repeat {
		return
	}
	if p.Lost {
		v.onLoss(at)
		return
	}
	v.segOpenBytes += float64(max(p.Size, 0))
	// The window does not grow while the flow is application-limited, or
	// while a request has yet to take effect: while what arrives over the
	// interval is below 1/growthLimit of the window's rate.
	// grow holds the window at exactly growthLimit times what arrives, so
	// the next datagram's test is often a tie, which rounding would decide
	// either way: a tie is not below, whatever the rounding.
	r := v.partialRate()
	v.appLimited = r > 0 && r*growthLimit < v.windowRate()*(1-tieMargin)
	if v.lastGrowth.IsZero() {
		v.lastGrowth = at
		return
	}
	elapsed := since(at, v.lastGrowth)
	v.lastGrowth = at
	if v.appLimited || elapsed <= 0 {
		return
	}
	v.grow(at, elapsed, r)
}

// tieMargin is the relative difference below which two rates are equal:
// far above float64's rounding, far below anything measured.
const tieMargin = 1e-9

// onLoss adds a lost datagram's share of a segment and starts a loss
// event when a whole segment has been lost.
//
// Losses within one RTT of an event's start are its recovery and start
// no event (one reduction per window, RFC 5681 §3.2), but they are not
// forgotten: they count towards the next event, which the first loss
// after the recovery starts when a segment's worth is then lost. The
// viewer's datagrams are a third of a segment's size, so it sends three
// times as many packets per byte as a TCP flow of full segments would,
// and more of them fall in any one window: where the virtual flow would
// have lost one segment in this window and another in a later one, the
// viewer loses several datagrams in this one. Forgetting them gave the
// viewer fewer events per byte than TCP at random loss and in short
// queues (1.3× a CUBIC flow at 0.5 and 3 % loss, 1.5× with 20 packets;
// docs/fairness.md). A recovery still makes at most one more event, however
// much it lost: in a deep queue's long overflow TCP too loses many
// segments in one window and cuts once.
func (v *VirtualTCP) onLoss(at time.Time) {
	v.lostMass += v.s / NominalSegmentSize * v.ownShare()
	if v.events > 0 && at.Sub(v.epochStart) <= v.pRTT() {
		return // the current event's recovery
	}
	if v.lostMass < 1 {
		return
	}
	v.lostMass = 0
	v.events++
	copy(v.segIntervals[1:], v.segIntervals[:lossIntervals-1])
	v.segIntervals[0], v.segOpenBytes = v.segOpenBytes/NominalSegmentSize, 0
	v.segCount = min(v.segCount+1, lossIntervals)
	v.slowStart = false
	// Fast convergence (RFC 8312 §4.6): a flow whose window shrank since
	// the last event releases bandwidth for a newcomer.
	if v.cwnd < v.wMax {
		v.wMax = v.cwnd * (1 + cubicBeta) / 2
	} else {
		v.wMax = v.cwnd
	}
	v.cwnd = max(v.cwnd*cubicBeta, v.cfg.MinWindow)
	v.wEst = v.cwnd
	v.k = math.Cbrt(max(v.wMax-v.cwnd, 0) / cubicC)
	v.epochStart = at
}

// ownShare is the part of what arrives that the virtual flow would have
// sent: its window's rate over the arriving rate, at most 1. Between
// decisions the viewer goes on at the request in force while the window
// has been cut; a TCP flow would have cut at once and lost only its own
// share of what the queue or the link drops, so only that share of the
// viewer's losses counts. Losses are never counted up for bytes the
// viewer did not send.
func (v *VirtualTCP) ownShare() float64 {
	r := v.partialRate()
	if r <= 0 {
		return 1
	}
	return min(float64(v.windowRate()/r), 1)
}

// grow advances the window by elapsed; arriving is the receive rate.
func (v *VirtualTCP) grow(at time.Time, elapsed time.Duration, arriving Rate) {
	rtts := min(float64(elapsed)*v.perRTT, 1)
	next := v.cwnd
	if v.slowStart {
		next *= math.Exp2(rtts)
	} else {
		t := float64(since(at, v.epochStart))/float64(time.Second) - v.k
		cubic := cubicC*t*t*t + v.wMax
		v.wEst += cubicAlpha * rtts
		next = max(next, cubic, v.wEst)
	}
	// A window beyond what arrives has not been tested by the path: it
	// may grow to growthLimit times that and no further until the
	// datagrams catch up with it (the request lags by up to an interval).
	if arriving > 0 {
		limit := growthLimit / NominalSegmentSize * float64(arriving) * v.rttSec
		next = min(next, max(v.cwnd, limit))
	}
	v.cwnd = min(next, v.maxWin)
}

// equationCap is Padhye's model (RFC 5348 §3.1's equation, with
// timeouts, here with t_RTO = max(4R, 200 ms); the window between
// timeouts CUBIC's where that is the larger, below) for a flow of full
// segments at the virtual flow's loss event rate p and the path's
// smallest RTT, the propagation delay without a queue. Where losses are
// random and the queue empty, SRTT is that RTT and the cap is what TCP
// gets at heavy loss, retransmission timeouts included, which the window
// does not model. Where a drop-tail queue overflows, the losses come with
// a full queue: SRTT is several times the smallest RTT, the cap lies as
// far above the equation at SRTT and, on short paths, the window decides
// (there the viewer, smooth, sees more loss events than bursty TCP, and
// the equation at SRTT would starve it: Rhee and Xu 2005).
//
// The equation is Reno's, the window CUBIC's. On long or fast paths at
// low loss Reno's equation bound the window at most decisions in the lab
// (200 ms, 30 Mbit/s: the viewer at half a CUBIC flow's rate), where
// CUBIC's average window lies above Reno's and real CUBIC takes more
// (RFC 8312 §5.1): between timeouts the model takes the larger window
// (PadhyeModel.CUBIC). The timeouts stay Padhye's: CUBIC's response
// function alone has none, and at p above about 0.2 it would lie above
// the equation again. Where Reno's window is the larger, at heavy loss
// and on short paths, the cap is what it was.
// Counting the queue in R, up to one smallest RTT, was tried and taken
// back: it brought the 3 % cells into the band but made the cap bind on
// the long and fast drop-tail paths (docs/fairness.md).
func (v *VirtualTCP) equationCap(p float64) Rate {
	rtt := v.rtt.Min()
	if v.rtt.Samples() == 0 {
		rtt = v.cfg.InitialRTT
	}
	// The timeout is TCP's, never below its 200 ms floor (Linux's and
	// gVisor's TCP_RTO_MIN; RFC 6298 §2.4 says 1 s): on short paths 4R,
	// TFRC's own, is shorter than any real TCP waits.
	m := PadhyeModel{T0: max(4*rtt, minRTO), MaxWindowBytes: math.MaxFloat64, CUBIC: true}
	return m.Rate(NominalSegmentSize, rtt, p)
}

// minRTO is the smallest retransmission timeout of the TCPs a viewer
// meets: Linux's TCP_RTO_MIN, gVisor's MinRTO.
const minRTO = 200 * time.Millisecond

// segmentLossEventRate is RFC 5348 §5.4's p over the virtual flow's loss
// intervals in segments: 1/I_mean, the open interval counted when it raises
// the mean; 0 before the first event.
func (v *VirtualTCP) segmentLossEventRate() float64 {
	if v.segCount == 0 {
		return 0
	}
	var tot1, w1 float64
	for i := range v.segCount {
		tot1 += v.segIntervals[i] * lossIntervalWeights[i]
		w1 += lossIntervalWeights[i]
	}
	tot0, w0 := v.segOpenBytes/NominalSegmentSize, 1.0
	for i := range min(v.segCount, lossIntervals-1) {
		tot0 += v.segIntervals[i] * lossIntervalWeights[i+1]
		w0 += lossIntervalWeights[i+1]
	}
	mean := max(tot0/w0, tot1/w1)
	if !(mean >= 1) {
		return 1
	}
	return 1 / mean
}

func (v *VirtualTCP) windowRate() Rate {
	return Rate(v.cwnd * NominalSegmentSize * float64(time.Second) * v.perRTT)
}

// onPathRTT refreshes what follows from pRTT.
func (v *VirtualTCP) onPathRTT() {
	v.rttSec = v.pRTT().Seconds()
	v.perRTT = 1 / float64(v.pRTT())
	v.maxWin = max(float64(v.cfg.Max)*v.rttSec/NominalSegmentSize, v.cfg.MinWindow)
}

func (v *VirtualTCP) OnRTT(sample time.Duration, at time.Time) {
	v.onRTT(sample, at)
	if sample <= 0 {
		return
	}
	sample = min(sample, MaxRTT)
	at = v.now // onRTT's clock: never backwards
	if v.pathRTT == 0 {
		v.pathRTT = sample
	} else {
		g := pathRTTGain(at.Sub(v.pathRTTAt), v.pathRTT)
		v.pathRTT = time.Duration((1-g)*float64(v.pathRTT) + g*float64(sample))
	}
	v.pathRTTAt = at
	v.onPathRTT()
}

// pathRTTGain is the weight of an RTT sample taken elapsed after the
// previous one, when the estimate is rtt: RFC 6298's α = 1/8 per round
// trip, compounded over the round trips between the samples, and at most
// maxPathRTTGain.
//
// RFC 6298's per-sample gain assumes a sample per round trip, a memory of
// about eight round trips. A viewer's pings come one per 5 s
// (StartPingCheck), and at 1/8 per sample SRTT remembers 40 s: it keeps
// the first sample, often taken before the queue filled, for most of a
// minute, while TCP's RTT, and so its rate cwnd/RTT, follows the queue
// within a second. cwnd·1460/SRTT then overstates what the window
// delivers by the queueing delay SRTT has yet to absorb. Compounding the
// gain by the round trips elapsed gives sparse samples the weight the
// samples TCP would have taken in between would have had; the cap keeps
// one sample of a queue that swings from replacing the estimate outright
// (a mean over about the last three).
func pathRTTGain(elapsed, rtt time.Duration) float64 {
	if elapsed <= 0 || rtt <= 0 {
		return rttAlpha
	}
	g := 1 - math.Pow(1-rttAlpha, float64(elapsed)/float64(rtt))
	return min(max(g, rttAlpha), maxPathRTTGain)
}

// maxPathRTTGain bounds pathRTTGain.
const maxPathRTTGain = 0.5

// pRTT is the RTT the virtual flow runs on: pathRTT, or SRTT (the initial
// RTT) before the first sample.
func (v *VirtualTCP) pRTT() time.Duration {
	if v.pathRTT == 0 {
		return v.srtt()
	}
	return v.pathRTT
}

func (v *VirtualTCP) Rate(now time.Time) Rate {
	recv := v.closeInterval(now)
	// A data-limited interval: the region sent less than half of what the
	// request in force allowed (RFC 7661 §4.3's non-validated phase,
	// pipeACK < cwnd/2). The losses in it are the path's, met at a rate
	// the path carried: the window is not left below growthLimit times
	// what arrived, the rate it may grow to anyway (RFC 7661 §4.4 keeps
	// the window through such a phase; RFC 5348 §8.2 keeps a data-limited
	// TFRC sender's limit at its receive rates). A region sending less
	// than one share is then never throttled below its demand (issue 33).
	// A saturated flow receives about what it asked for and is never
	// data-limited: overflows cut it as before.
	if recv > 0 && float64(recv)*growthLimit < float64(v.rate)*(1-tieMargin) {
		v.cwnd = min(max(v.cwnd, growthLimit/NominalSegmentSize*float64(recv)*v.rttSec), v.maxWin)
	}
	r := v.windowRate()
	if p := v.segmentLossEventRate(); p > 0 {
		r = min(r, v.equationCap(p))
	}
	v.rate = v.clamp(r)
	return v.rate
}

func (v *VirtualTCP) Stats() Stats {
	st := v.stats()
	st.Rate, st.Window, st.SlowStart, st.AppLimited = v.rate, v.cwnd, v.slowStart, v.appLimited
	st.FairSegmentSize = NominalSegmentSize
	st.PathRTT = v.pRTT()
	st.SegmentLossEventRate = v.segmentLossEventRate()
	st.EquationRate = 0
	if st.SegmentLossEventRate > 0 {
		st.EquationRate = TFRCRate(NominalSegmentSize, st.SRTT, st.SegmentLossEventRate)
	}
	return st
}

// SegmentLossEventRateOver is the loss event rate per 1,460-byte segment
// over a whole connection, from its counters, as VirtualTCP counts it
// but with every lost byte whole (counters carry no window, so nothing of
// ownShare's discount): loss events (grouped per RTT, RFC 5348 §5.2), but
// no more of them than whole segments' worth of bytes were lost (lost
// datagrams times the mean payload), per segment's worth of bytes
// received. 0 without bytes or loss.
func SegmentLossEventRateOver(bytes, lostPackets, lossEvents, meanPayload float64) float64 {
	if !(bytes > 0) || !(lostPackets > 0) || !(lossEvents > 0) || !(meanPayload > 0) {
		return 0
	}
	events := min(lossEvents, max(lostPackets*meanPayload/NominalSegmentSize, 1))
	return min(events*NominalSegmentSize/bytes, 1)
}

package audit

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/circuit"
)

// unknownWarnShare is the share of datagrams with message numbers the
// template does not know above which the report says the template may be
// wrong: a right template decodes every message a simulator sends, so a few
// unknown numbers are a new message, more are a different protocol version
// (the 2007 template for old captures, say).
const unknownWarnShare = 0.01

// Report closes the last second and returns the audit of everything
// observed: call it after the last datagram (one read afterwards would
// open that second again, as a second row).
func (a *Auditor) Report() *Report {
	a.closeBins()
	r := &Report{Files: slices.Clone(a.files), Segment: a.cfg.Segment.String(), Messages: a.sortedMessages()}
	for _, cs := range a.order {
		for d := range cs.dirs {
			if row, ok := a.circuitRow(&cs.dirs[d]); ok {
				r.Circuits = append(r.Circuits, row)
			}
		}
	}
	if a.cfg.Series {
		r.Seconds = slices.Clone(a.seconds)
		r.Requests = slices.Clone(a.requests)
		slices.SortStableFunc(r.Requests, func(x, y Request) int { return int(x.UnixMs - y.UnixMs) })
	}
	r.JainIndex = jainOfCircuits(r.Circuits)
	r.Warnings = slices.Clone(a.warnings)
	r.Warnings = append(r.Warnings, relayLegs(r.Circuits)...)
	for _, f := range r.Files {
		if f.StoppedAt != nil {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s: stopped at byte %d: %s; the %d datagrams before it are measured",
				f.Name, *f.StoppedAt, f.StopReason, f.Datagrams))
		}
	}
	if total := a.decoded + a.unknown; total > 0 && float64(a.unknown) > unknownWarnShare*float64(total) {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d of %d LLUDP datagrams (%.1f %%) carry message numbers the template does not know: the template may be wrong for this capture (see --template)",
			a.unknown, total, 100*float64(a.unknown)/float64(total)))
	}
	return r
}

// circuitRow is one direction's whole-connection row; false if it carried
// nothing.
func (a *Auditor) circuitRow(fs *flowState) (Circuit, bool) {
	c := fs.cs.c
	st := c.Stats(fs.dir)
	if st.Packets == 0 {
		return Circuit{}, false
	}
	row := Circuit{Circuit: fs.cs.name, Direction: fs.dir.String(), Viewer: c.Key.Viewer.String(), Sim: c.Key.Sim.String(),
		File: fs.cs.file, StartUnixMs: st.First.UnixMilli(), DurationS: st.Last.Sub(st.First).Seconds(),
		Packets: int64(st.Packets), Bytes: int64(st.Bytes), MeanPayload: meanPayload(st),
		MeanBitPerS: st.RateBPS(), PeakBitPerS: fs.peak,
		Lost: int64(st.Lost), LossEvents: int64(st.LossEvents), Resent: int64(st.Resent),
		SpuriousResends: int64(st.SpuriousResends), Duplicates: int64(st.Duplicates)}
	if !c.AgentID.IsZero() {
		row.AgentID = c.AgentID.String()
	}
	if !c.SessionID.IsZero() {
		row.SessionID = c.SessionID.String()
	}
	// The sequence numbers the loss history counted: every copy but the
	// spurious resends, the duplicates and OpenSim's out-of-band ack.
	counted := float64(st.Packets) - float64(st.SpuriousResends+st.Duplicates+st.OutOfBand)
	if n := counted + float64(st.Lost); n > 0 {
		row.LossRate = float64(st.Lost) / n
	}
	// Over a whole connection the mean loss interval is the packets counted
	// per loss event, so p is its inverse (RFC 5348 §5.4 with every
	// interval weighted alike).
	var p float64
	if counted > 0 {
		p = float64(st.LossEvents) / counted
	}
	row.LossEventRate = p
	rtt := pingRTT(c)
	row.RTTMs = millis(rtt)
	row.RTTSamples = int64(c.RTT().Samples())
	if ack := c.AckRTT(); ack.Samples() > 0 {
		d := ack.SRTT()
		row.AckRTTMs = millis(&d)
	}
	var fairMean, fairNominal *float64
	row.FairState, fairMean = a.fair(st, meanPayload(st), rtt, p)
	_, fairNominal = a.fair(st, NominalSegmentBytes, rtt, p)
	row.FairMeanS, row.FairNominal = fairMean, fairNominal
	fair := fairMean
	if a.cfg.Segment == throttle.SegmentNominal {
		fair = fairNominal
	}
	if row.FairState == FairKnown {
		m := ratecalc.MathisRate(a.segment(st), *rtt, p).BitsPerSecond()
		row.Mathis = &m
	}
	row.ReceivedOverFair = ratio(row.MeanBitPerS, fair)
	if d := &fs.ratios; d.n > 0 {
		row.RatioMean = ptr(d.mean())
		row.RatioMedian = ptr(d.quantile(0.5))
		row.RatioP25 = ptr(d.quantile(0.25))
		row.RatioP75 = ptr(d.quantile(0.75))
	}
	if d := &fs.rates; d.n > 0 {
		row.MedianBitPerS = d.quantile(0.5)
		row.P25BitPerS = d.quantile(0.25)
		row.P75BitPerS = d.quantile(0.75)
	}
	if fs.dir == circuit.Down {
		// Requests govern what the simulator sends, so they sit beside the
		// down direction.
		row.Requests = fs.cs.requests
		if fs.cs.requestSince {
			row.LastRequestBitPerS = ptr(fs.cs.lastRequest)
			row.RequestedOverFair = ratio(fs.cs.lastRequest, fair)
		}
	}
	if d := st.Last.Sub(st.First); d > 0 {
		for i := range row.CategoryBitPerS {
			row.CategoryBitPerS[i] = float64(st.ByCategory[i]) * 8 / d.Seconds()
		}
		for i := range row.ChannelBitPerS {
			row.ChannelBitPerS[i] = float64(st.ByChannel[i]) * 8 / d.Seconds()
		}
	}
	// The verdict stands on the estimate calibrated against real TCP in the
	// lab: losses counted by bytes, full segments; not on the circuit's own
	// per-packet loss event rate, which a thin flow measures far above a
	// TCP flow's in the same queue (congestion.md §10.1).
	if row.FairState == FairKnown {
		row.SegmentLossEventRate, row.FairTCP = tcpEstimate(st, *rtt)
		row.ReceivedOverTCP = ratio(row.MeanBitPerS, row.FairTCP)
	}
	row.Verdict = verdict(row.FairState, row.ReceivedOverTCP)
	if fs.dir == circuit.Up {
		// AgentThrottle governs what the simulator sends: the viewer's own
		// datagrams are not its to judge.
		row.Verdict = VerdictUp
	}
	return row, true
}

// tcpEstimate is the verdict's estimate of one TCP flow's bit/s on a
// path of round trip rtt from a direction's counters: the loss event rate
// per 1,460-byte segment with losses counted by bytes, and
// ratecalc.TCPShareRate at it; nil without loss.
func tcpEstimate(st circuit.DirStats, rtt time.Duration) (pSeg float64, fairTCP *float64) {
	pSeg = ratecalc.SegmentLossEventRateOver(float64(st.Bytes), float64(st.Lost), float64(st.LossEvents), meanPayload(st))
	if pSeg <= 0 {
		return pSeg, nil
	}
	v := ratecalc.TCPShareRate(NominalSegmentBytes, rtt, pSeg).BitsPerSecond()
	return pSeg, &v
}

// Verdict says in words how far received was from fair, r the ratio of
// received to fair when state is FairKnown: what every circuit row of the
// report says.
func Verdict(state string, r *float64) string { return verdict(state, r) }

// verdict says in words how far received was from fair.
func verdict(state string, r *float64) string {
	switch {
	case state != FairKnown:
		if state == FairUnbounded {
			return "no loss: fair rate unbounded"
		}
		return state
	case r == nil:
		return FairNoData
	case math.Abs(*r-1) <= withinBand:
		return "within ±10 %"
	case *r >= 10:
		return fmt.Sprintf("%.0f× its TCP-fair rate", *r)
	case *r >= 0.1:
		return fmt.Sprintf("%.1f× its TCP-fair rate", *r)
	}
	return fmt.Sprintf("%.2g× its TCP-fair rate", *r)
}

// jainOfCircuits is Jain's index of received/fair over the down
// directions whose fair rate is known (congestion.md §10.2: normalised
// throughputs, since the circuits' RTTs differ).
func jainOfCircuits(cs []Circuit) *float64 {
	var xs []float64
	for _, c := range cs {
		if c.Direction == circuit.Down.String() && c.ReceivedOverFair != nil {
			xs = append(xs, *c.ReceivedOverFair)
		}
	}
	return Jain(xs)
}

// Jain is Jain's fairness index (Jain, Chiu, Hawe, DEC TR-301, 1984),
// (Σx)² / (n·Σx²), in [1/n, 1]; nil for fewer than two values or all zero.
func Jain(xs []float64) *float64 {
	if len(xs) < 2 {
		return nil
	}
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if sq == 0 {
		return nil
	}
	j := sum * sum / (float64(len(xs)) * sq)
	return &j
}

// quantile is the q-quantile of sorted values, interpolated linearly
// between the closest ranks (the R-7 definition numpy and DuckDB's
// quantile_cont use, so that a query over seconds.csv agrees).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	pos := q * float64(len(sorted)-1)
	i := int(pos)
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	frac := pos - float64(i)
	return sorted[i] + frac*(sorted[i+1]-sorted[i])
}

func ptr[T any](v T) *T { return &v }

// categoryNames and channelNames label the per-category and per-channel
// arrays in the outputs.
func categoryNames() []string {
	out := make([]string, lludp.NumCategories)
	for i := range out {
		out[i] = lludp.Category(i).String()
	}
	return out
}

func channelNames() []string {
	out := make([]string, opensim.NumChannels)
	for i := range out {
		out[i] = opensim.Channel(i).String()
	}
	return out
}

// VerdictUp is the verdict of every upstream row: the viewer throttles
// what the simulator sends, not its own datagrams.
const VerdictUp = "no verdict: upstream, not throttled"

// maxRelayWarnings bounds the relay warnings to a few agents; the rest
// are counted in the last one.
const maxRelayWarnings = 3

// relayLegs warns about agents seen on two circuits at the same time
// that share neither end: a capture on the host of a relay (fairgrid
// proxy, link, a SOCKS proxy) holds the viewer's leg and the relay's leg
// to the simulator, so the session is counted twice, once before the
// relay's losses and once after. (A viewer in neighbouring regions keeps
// one agent on circuits to several simulators, but from the same address
// and port.) It names the flags that keep one leg.
func relayLegs(cs []Circuit) []string {
	type leg struct {
		circuit, viewer, sim string
		first, last          int64
	}
	byAgent := map[string][]leg{}
	var agents []string
	for _, c := range cs {
		if c.AgentID == "" || c.Direction != circuit.Down.String() {
			continue
		}
		if _, ok := byAgent[c.AgentID]; !ok {
			agents = append(agents, c.AgentID)
		}
		byAgent[c.AgentID] = append(byAgent[c.AgentID], leg{c.Circuit, c.Viewer, c.Sim, c.StartUnixMs, c.StartUnixMs + int64(c.DurationS*1000)})
	}
	var out []string
	more := 0
	for _, agent := range agents {
		legs := byAgent[agent]
		var pair []leg
	find:
		for i := range legs {
			for j := i + 1; j < len(legs); j++ {
				a, b := legs[i], legs[j]
				if a.sim != b.sim && a.viewer != b.viewer && a.first <= b.last && b.first <= a.last {
					pair = []leg{legs[i], legs[j]}
					break find
				}
			}
		}
		if pair == nil {
			continue
		}
		if len(out) == maxRelayWarnings {
			more++
			continue
		}
		out = append(out, fmt.Sprintf("agent %s is on two circuits at once, %s and %s: the capture holds both legs of a relay (viewer to relay, relay to simulator), so one session is counted twice; audit one leg with --sim %s or --sim %s (or --ports with that port)",
			agent, pair[0].circuit, pair[1].circuit, pair[0].sim, pair[1].sim))
	}
	if more > 0 {
		out = append(out, fmt.Sprintf("%d more agent(s) are on two circuits at once: the same relay", more))
	}
	return out
}

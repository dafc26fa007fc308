package render

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/fairgrid/fairgrid/internal/audit"
	"github.com/fairgrid/fairgrid/ratecalc"
)

// makeReport builds a report the way the engine fills one, from a seeded
// random link per circuit: loss event rates from 0.01 % to 10 %, RTTs of
// 20–300 ms, one circuit without pings (fair rate unknown) and one without
// loss (unbounded), per-second rates scattered around the fair rate, and
// AgentThrottles from the capture and from the three replayed controllers.
// Values follow from ratecalc's equations, so the figures have the shape of
// real ones.
func makeReport(seed uint64, circuits, seconds int) *audit.Report {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	losses := []float64{0.0001, 0.001, 0.005, 0.01, 0.03, 0.05, 0.1}
	start := int64(1_764_000_000) // unix seconds
	r := &audit.Report{Segment: "mean"}
	for f := range 2 {
		r.Files = append(r.Files, audit.FileResult{
			Name: fmt.Sprintf("grid-%d.pcap", f), Bytes: 50_000_000 + int64(f), Datagrams: 200_000,
			NotLLUDP: 12, Undecoded: 3,
		})
	}
	stop := int64(48_213_761)
	r.Files[1].StoppedAt = &stop
	r.Files[1].StopReason = "truncated record: 1514 bytes announced, 208 left"

	var ratios []float64
	for i := range circuits {
		viewer := fmt.Sprintf("10.0.%d.%d:%d", i/250, i%250+1, 40000+i)
		name := viewer + " > 192.0.2.7:9000"
		p := losses[i%len(losses)]
		rtt := time.Duration(20+rng.IntN(280)) * time.Millisecond
		hasRTT := i%11 != 5
		lossless := i%13 == 7
		if lossless {
			p = 0
		}
		payload := 200 + rng.Float64()*900
		fairMean := ratecalc.TFRCRate(payload, rtt, p).BitsPerSecond()
		fairNominal := ratecalc.TFRCRate(1460, rtt, p).BitsPerSecond()
		// received sits between 0.3× and 4× the fair rate, per circuit
		share := 0.3 + rng.Float64()*3.7
		base := min(fairMean*share, 20e6)
		if !hasRTT || lossless {
			base = 300_000 + rng.Float64()*2e6
		}
		state := audit.FairKnown
		switch {
		case !hasRTT:
			state = audit.FairNoRTT
		case lossless:
			state = audit.FairUnbounded
		}

		var rates, secRatios []float64
		var packets, lost int64
		var chSum [5]float64
		var catSum [7]float64
		for s := range seconds {
			bps := base * math.Exp(rng.NormFloat64()*0.35)
			ps := p * math.Exp(rng.NormFloat64()*0.3)
			if lossless {
				ps = 0
			}
			sec := audit.Second{
				Circuit: name, Direction: "down", UnixS: start + int64(s),
				Packets: int64(bps / 8 / payload), BitPerS: bps, LossEventRate: ps, FairState: state,
			}
			sec.Lost = int64(float64(sec.Packets) * ps)
			if hasRTT {
				ms := float64(rtt.Microseconds())/1000 + rng.Float64()*5
				sec.RTTMs = &ms
			}
			if state == audit.FairKnown && ps > 0 {
				fair := ratecalc.TFRCRate(payload, rtt, ps).BitsPerSecond()
				ratio := bps / fair
				sec.FairBitPerS, sec.Ratio = &fair, &ratio
				secRatios = append(secRatios, ratio)
			}
			split := [5]float64{0.1, 0.3, 0.4, 0.15, 0.05}
			for ch := range sec.ChannelBitPerS {
				sec.ChannelBitPerS[ch] = bps * split[ch] * (0.5 + rng.Float64())
				chSum[ch] += sec.ChannelBitPerS[ch]
			}
			for c := range sec.CategoryBitPerS {
				sec.CategoryBitPerS[c] = bps / 7 * (0.5 + rng.Float64())
				catSum[c] += sec.CategoryBitPerS[c]
			}
			rates = append(rates, bps)
			packets += sec.Packets
			lost += sec.Lost
			r.Seconds = append(r.Seconds, sec)
		}
		c := audit.Circuit{
			Circuit: name, Direction: "down", Viewer: viewer, Sim: "192.0.2.7:9000",
			File: r.Files[i%2].Name, StartUnixMs: start * 1000, DurationS: float64(seconds),
			Packets: packets, Bytes: int64(mean(rates) / 8 * float64(seconds)), MeanPayload: payload,
			MeanBitPerS: mean(rates), PeakBitPerS: slices.Max(rates),
			Lost: lost, LossRate: p * 1.3, LossEvents: int64(float64(packets) * p), LossEventRate: p,
			Resent: lost + int64(i), SpuriousResends: int64(i), Duplicates: int64(i % 3),
			RTTSamples: 0, FairState: state, Requests: 0,
			MedianBitPerS: quantile(rates, 0.5), P25BitPerS: quantile(rates, 0.25), P75BitPerS: quantile(rates, 0.75),
		}
		if i%4 == 0 {
			c.AgentID = fmt.Sprintf("a4c5%04x-0000-4000-8000-%012x", i, i)
			c.SessionID = fmt.Sprintf("5e55%04x-0000-4000-8000-%012x", i, i)
		}
		if hasRTT {
			ms := float64(rtt.Microseconds()) / 1000
			c.RTTMs, c.RTTSamples = &ms, int64(seconds/5)
		}
		if i%3 == 0 {
			ack := float64(rtt.Microseconds())/1000 + 40
			c.AckRTTMs = &ack
		}
		for ch := range chSum {
			c.ChannelBitPerS[ch] = chSum[ch] / float64(seconds)
		}
		for k := range catSum {
			c.CategoryBitPerS[k] = catSum[k] / float64(seconds)
		}
		c.Verdict = state
		if state == audit.FairKnown {
			mathis := ratecalc.MathisRate(payload, rtt, p).BitsPerSecond()
			ratio := c.MeanBitPerS / fairMean
			c.FairMeanS, c.FairNominal, c.Mathis, c.ReceivedOverFair = &fairMean, &fairNominal, &mathis, &ratio
			// the verdict's TCP estimate, here the fair rate itself
			c.FairTCP, c.ReceivedOverTCP = &fairMean, &ratio
			m, med, q1, q3 := mean(secRatios), quantile(secRatios, 0.5), quantile(secRatios, 0.25), quantile(secRatios, 0.75)
			c.RatioMean, c.RatioMedian, c.RatioP25, c.RatioP75 = &m, &med, &q1, &q3
			c.Verdict = fmt.Sprintf("%.1f× its TCP-fair rate", ratio)
			if math.Abs(ratio-1) <= 0.1 {
				c.Verdict = "within ±10 %"
			}
			ratios = append(ratios, ratio)
		}

		// The viewer's own AgentThrottle every 30 s, and the replayed
		// controllers every 5 s.
		sources := []string{audit.SourceReplayVTCP, audit.SourceReplayWindow, audit.SourceReplayTFRC, audit.SourceReplayStock}
		for s := 0; s < seconds; s += 5 {
			for k, src := range sources {
				if src == audit.SourceReplayStock && s%10 != 0 {
					continue
				}
				if src == audit.SourceReplayVTCP {
					// drawn without the generator, so that the fixture's
					// other figures stay as they were
					r.Requests = append(r.Requests, request(name, start, s, src, base*0.55, r.Seconds[len(r.Seconds)-seconds+s].BitPerS, c.FairMeanS))
					continue
				}
				total := base * (0.6 + 0.3*float64(k-1) + 0.2*rng.Float64())
				r.Requests = append(r.Requests, request(name, start, s, src, total, r.Seconds[len(r.Seconds)-seconds+s].BitPerS, c.FairMeanS))
			}
			if s%30 == 0 {
				total := 1_500_000 + float64(i)*1000
				q := request(name, start, s, audit.SourceCapture, total, r.Seconds[len(r.Seconds)-seconds+s].BitPerS, c.FairMeanS)
				r.Requests = append(r.Requests, q)
				c.Requests++
				c.LastRequestBitPerS, c.RequestedOverFair = &q.TotalBitPerS, q.RequestedOverFair
			}
		}
		r.Circuits = append(r.Circuits, c)
		// the upstream direction: small, no fair rate of its own
		up := audit.Circuit{Circuit: name, Direction: "up", Viewer: viewer, Sim: c.Sim, File: c.File,
			StartUnixMs: c.StartUnixMs, DurationS: c.DurationS, Packets: int64(seconds * 12), Bytes: int64(seconds * 12 * 90),
			MeanPayload: 90, MeanBitPerS: 12 * 90 * 8, PeakBitPerS: 30 * 90 * 8, FairState: audit.FairNoData, Verdict: audit.FairNoData}
		r.Circuits = append(r.Circuits, up)
	}
	if len(ratios) >= 2 {
		var sum, sq float64
		for _, x := range ratios {
			sum += x
			sq += x * x
		}
		j := sum * sum / (float64(len(ratios)) * sq)
		r.JainIndex = &j
	}
	r.Messages = []audit.MessageType{{Name: "ImprovedTerseObjectUpdate", Packets: 90_000, Bytes: 12_000_000},
		{Name: "LayerData", Packets: 3000, Bytes: 3_000_000}, {Name: "StartPingCheck", Packets: 600, Bytes: 3600}}
	return r
}

func request(circuit string, start int64, s int, src string, total, received float64, fair *float64) audit.Request {
	q := audit.Request{Circuit: circuit, UnixMs: (start+int64(s))*1000 + 250, Source: src,
		TotalBitPerS: total, ReceivedBitPerS: received}
	split := [7]float64{0.15, 0.1, 0.02, 0.02, 0.33, 0.28, 0.1}
	for k := range q.CategoryBitPerS {
		q.CategoryBitPerS[k] = total * split[k]
	}
	if fair != nil {
		f, ratio := *fair, total / *fair
		q.FairBitPerS, q.RequestedOverFair = &f, &ratio
	}
	return q
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// quantile is the q-quantile of xs with linear interpolation; xs is not
// modified.
func quantile(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	lo := int(pos)
	if lo+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[lo] + (pos-float64(lo))*(s[lo+1]-s[lo])
}

// ipv6Report is the synthetic grid with IPv6 endpoints, the widest
// circuit names a report shows.
func ipv6Report() *audit.Report {
	r := makeReport(2, 6, 60)
	names := map[string]string{}
	for i := range r.Circuits {
		c := &r.Circuits[i]
		if _, ok := names[c.Circuit]; !ok {
			n := len(names)
			names[c.Circuit] = fmt.Sprintf("[2001:db8:1234:5678:9abc:def0:%x:1]:%d > [2001:db8:1234:5678:9abc:def0:ffff:2]:9000", n, 50000+n)
		}
		c.Circuit = names[c.Circuit]
	}
	for i := range r.Seconds {
		r.Seconds[i].Circuit = names[r.Seconds[i].Circuit]
	}
	for i := range r.Requests {
		r.Requests[i].Circuit = names[r.Requests[i].Circuit]
	}
	return r
}

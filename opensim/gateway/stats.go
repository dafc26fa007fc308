package gateway

import (
	"net/netip"
	"time"

	"github.com/fairgrid/fairgrid/opensim"
	"github.com/fairgrid/fairgrid/ratecalc"
)

// CircuitStats is one circuit's state, for metrics, logs and tests.
type CircuitStats struct {
	ID      uint64 // the circuit's ordinal since start
	Route   int
	Viewer  netip.AddrPort
	Local   netip.AddrPort // the circuit's socket: the endpoint the region sees
	AgentID string
	Pending bool
	Closing bool
	// Asked is the viewer's own request (0: none seen), Fair the
	// controller's latest decision (0: none yet), Rate the one in force;
	// all bytes/s.
	Asked, Fair, Rate ratecalc.Rate
	Controller        ratecalc.Stats
	RTT, AckRTT       time.Duration // 0: no sample
	Estimator         EstimatorStats
	// By channel: bytes sent to the viewer, datagrams refused at a full
	// queue, bytes queued now, and the queueing delay (mean and largest).
	Sent, Refused    [opensim.NumChannels]uint64
	Queued           [opensim.NumChannels]int64
	DelayMean, Delay [opensim.NumChannels]time.Duration
	DelayCount       [opensim.NumChannels]uint64
	UpBytes          uint64
}

// Counters are the gateway's totals.
type Counters struct {
	Viewers, Pending int
	Probes           int              // endpoints whose address is not proven yet
	Drops            [numDrops]uint64 // by Drop; Passed counts viewer datagrams passed on
	Evicted          uint64           // probes evicted to make room, each PendingHold old at least
	ProbesSent       uint64           // probes sent (each within 3× what the endpoint sent)
	ProbesExpired    uint64           // probes never answered within PendingTimeout
	Opened, Closed   uint64           // circuits opened (address proven) and closed since start
	Expired          uint64           // circuits closed by a timeout or after logout
	Asserts          uint64           // AgentThrottles the gateway sent
	Rewrites         uint64           // viewer AgentThrottles rewritten in flight
	InboundDropped   uint64           // datagrams dropped at the readers: the loop fell behind
	SendErrors       uint64
	Scheduler        opensim.Stats
}

// Circuits describes every circuit.
func (g *Core) Circuits() []CircuitStats {
	out := make([]CircuitStats, 0, len(g.viewers))
	for _, v := range g.viewers {
		out = append(out, g.circuitStats(v))
	}
	return out
}

func (g *Core) circuitStats(v *Viewer) CircuitStats {
	s := CircuitStats{ID: v.id, Route: v.Route, Viewer: v.Addr, Pending: v.state == pending, Closing: v.state == closing,
		Asked: v.askedTotal, Fair: v.fair, Rate: v.rate, Controller: v.est.ctl.Stats(), Estimator: v.est.stats,
		Sent: v.sent, Refused: v.refused, UpBytes: v.up}
	if !v.agent.IsZero() {
		s.AgentID = v.agent.String()
	}
	if v.est.rtt.Samples() > 0 {
		s.RTT = v.est.rtt.SRTT()
	}
	if v.est.ackRTT.Samples() > 0 {
		s.AckRTT = v.est.ackRTT.SRTT()
	}
	_, s.Queued, _ = g.sched.ClientStats(v.sched)
	for ch, d := range v.delay {
		s.DelayCount[ch], s.Delay[ch] = d.n, d.max
		if d.n > 0 {
			s.DelayMean[ch] = d.sum / time.Duration(d.n)
		}
	}
	if s.Rate == 0 {
		_, total, _ := g.sched.Rates(v.sched)
		s.Rate = ratecalc.Rate(total)
	}
	return s
}

// Counters returns the core's totals.
func (g *Core) Counters() Counters {
	return Counters{Viewers: len(g.viewers), Pending: g.pendingQ.Len(), Probes: g.probes.q.Len(), Drops: g.counts, Evicted: g.evicted,
		ProbesSent: g.probesSent, ProbesExpired: g.probesExpired, Opened: g.openedTotal, Closed: g.closedTotal,
		Expired: g.expired, Asserts: g.asserts, Rewrites: g.rewrites, Scheduler: g.sched.Stats()}
}

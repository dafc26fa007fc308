package status

import (
	"fmt"
	"time"

	"github.com/fairgrid/fairgrid/opensim/gateway"
	"github.com/fairgrid/fairgrid/throttle"
)

// FromLoop is a Config.Source that reads a sidecar's loop (fairgrid run
// and proxy): each circuit's measurements, fairgrid's request in force,
// the viewer's own, and the loop's totals.
func FromLoop(loop *throttle.Loop) func(time.Time) Snapshot {
	return func(time.Time) Snapshot {
		var s Snapshot
		for _, cs := range loop.Snapshot() {
			c := Circuit{ID: cs.Key.String(), Viewer: cs.Key.Viewer.String(), Region: cs.Key.Sim.String(), Agent: cs.Summary.AgentID,
				ReceivedBPS: cs.Control.ReceiveRate.BitsPerSecond(), ShareBPS: throttle.OneShare(cs.Control).BitsPerSecond(),
				Loss: cs.Summary.Down.LossEventRate, Requests: cs.Requests}
			if v := cs.Summary.ViewerThrottleBPS; v != nil {
				c.ViewerAskedBPS = *v
			}
			if r := cs.Summary.RTTms; r != nil {
				c.RTTms = *r
			}
			if r, ok := loop.Request(cs.Key); ok {
				c.AskedBPS, c.DecidedBPS = cs.Target.BitsPerSecond(), r.Decided.BitsPerSecond()
			} else if cs.Summary.AgentID == "" {
				c.Waiting = "the circuit's agent is not known yet: fairgrid learns it from the viewer's UseCircuitCode or AgentUpdate"
			} else {
				c.Waiting = "waiting for the circuit's first decision"
			}
			s.Circuits = append(s.Circuits, c)
		}
		st := loop.Stats()
		s.Totals = []Count{{"requests sent", st.Requests}, {"viewer overrides re-asserted", st.Reasserts},
			{"circuits forgotten", st.Forgotten}, {"circuits evicted", st.Evicted}}
		return s
	}
}

// FromGateway is a Config.Source that reads a gateway: each viewer's
// circuit, each route's region and whether it answers, and the
// datagrams refused by cause. A viewer's endpoint and AgentID are shown
// only when the operator asked (gateway.metrics_identify_viewers), as in
// the metrics; otherwise the circuit's ordinal stands for the viewer,
// since the page may be served off loopback (gateway.metrics_public). A
// circuit's queueing delay is the
// gateway scheduler's: the largest mean of its channels.
func FromGateway(gw *gateway.Gateway) func(time.Time) Snapshot {
	return func(time.Time) Snapshot {
		var s Snapshot
		health := gw.Health()
		for _, h := range health {
			r := Route{Listen: gw.Addr(h.Route).String(), Region: h.Region, Answers: h.Answers, Circuits: h.Circuits}
			if !h.Answers {
				r.Waiting = h.Waiting.Round(time.Second).String()
			}
			s.Routes = append(s.Routes, r)
		}
		for _, cs := range gw.Circuits() {
			c := Circuit{ID: gatewayID(cs), Viewer: gatewayID(cs), Pending: cs.Pending,
				ReceivedBPS: cs.Controller.ReceiveRate.BitsPerSecond(), ShareBPS: throttle.OneShare(cs.Controller).BitsPerSecond(),
				ViewerAskedBPS: cs.Asked.BitsPerSecond(), AskedBPS: cs.Rate.BitsPerSecond(), DecidedBPS: cs.Fair.BitsPerSecond(),
				Loss: cs.Controller.LossEventRate, RTTms: float64(cs.RTT) / float64(time.Millisecond)}
			if gw.IdentifiesViewers() {
				c.Viewer, c.Agent = cs.Viewer.String(), cs.AgentID
			}
			if cs.Route < len(health) {
				c.Region = health[cs.Route].Region
			}
			// The scheduler's queueing delay: the largest channel mean.
			for ch, d := range cs.DelayMean {
				if cs.DelayCount[ch] > 0 {
					c.QueueMs = max(c.QueueMs, float64(d)/float64(time.Millisecond))
				}
			}
			s.Circuits = append(s.Circuits, c)
		}
		k := gw.Counters()
		s.Established, s.Pending = k.Viewers-k.Pending, k.Pending
		for d, n := range k.Drops {
			if gateway.Drop(d) != gateway.Passed {
				s.Refusals = append(s.Refusals, Count{gateway.Drop(d).String(), n})
			}
		}
		s.Totals = []Count{{"circuits opened", k.Opened}, {"circuits closed", k.Closed}, {"AgentThrottles sent", k.Asserts},
			{"viewer AgentThrottles rewritten", k.Rewrites}, {"datagrams dropped at the readers", k.InboundDropped}}
		return s
	}
}

// gatewayID keys a gateway circuit: its ordinal since start, padded so
// that circuits sort in the order they opened.
func gatewayID(cs gateway.CircuitStats) string { return fmt.Sprintf("circuit-%06d", cs.ID) }

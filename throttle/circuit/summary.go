package circuit

import (
	"time"

	"github.com/fairgrid/fairgrid/lludp"
)

// Summary is a circuit's measurements as `fairgrid decode --summary
// --format json` prints them (keys documented in the README).
type Summary struct {
	Viewer      string     `json:"viewer"`
	Sim         string     `json:"sim"`
	AgentID     string     `json:"agent_id"`
	SessionID   string     `json:"session_id"`
	CircuitCode uint32     `json:"circuit_code"`
	First       string     `json:"first"`
	Last        string     `json:"last"`
	Down        DirSummary `json:"down"`
	Up          DirSummary `json:"up"`
	// RTTms is the ping-based SRTT, nil when no ping pair was seen.
	RTTms      *float64 `json:"rtt_ms"`
	RTTSamples uint64   `json:"rtt_samples"`
	// AckRTTms is the ack-based SRTT, biased by the simulator's ack delay.
	AckRTTms      *float64 `json:"ack_rtt_ms"`
	AckRTTSamples uint64   `json:"ack_rtt_samples"`
	// LocalRTTms is the viewer's answer time to the simulator's pings.
	LocalRTTms *float64 `json:"local_rtt_ms"`
	// ByCategory is the bytes per throttle category in the down direction,
	// the one the throttle governs; "Unthrottled" holds acks, pings and the
	// handshake.
	ByCategory map[string]uint64 `json:"by_category"`
	// ViewerThrottleBPS is the viewer's latest AgentThrottle total, nil if
	// none was seen.
	ViewerThrottleBPS *float64 `json:"viewer_throttle_bps"`
}

// DirSummary is one direction of a Summary.
type DirSummary struct {
	Packets         uint64  `json:"packets"`
	Bytes           uint64  `json:"bytes"`
	Reliable        uint64  `json:"reliable"`
	Resent          uint64  `json:"resent"`
	SpuriousResends uint64  `json:"spurious_resends"`
	Duplicates      uint64  `json:"duplicates"`
	Reordered       uint64  `json:"reordered"`
	Lost            uint64  `json:"lost"`
	LossEvents      uint64  `json:"loss_events"`
	LossEventRate   float64 `json:"loss_event_rate"`
	OutOfBand       uint64  `json:"out_of_band"`
	RateBPS         float64 `json:"rate_bps"`
}

func dirSummary(s DirStats) DirSummary {
	return DirSummary{
		Packets: s.Packets, Bytes: s.Bytes, Reliable: s.Reliable, Resent: s.Resent,
		SpuriousResends: s.SpuriousResends, Duplicates: s.Duplicates, Reordered: s.Reordered,
		Lost: s.Lost, LossEvents: s.LossEvents, LossEventRate: s.LossEventRate,
		OutOfBand: s.OutOfBand, RateBPS: s.RateBPS(),
	}
}

func millis(d time.Duration) *float64 {
	ms := float64(d) / float64(time.Millisecond)
	return &ms
}

// Summary returns the circuit's measurements for reports.
func (c *Circuit) Summary() Summary {
	down := c.Stats(Down)
	s := Summary{
		Viewer: c.Key.Viewer.String(), Sim: c.Key.Sim.String(),
		CircuitCode: c.CircuitCode,
		First:       c.First().UTC().Format(time.RFC3339Nano),
		Last:        c.Last().UTC().Format(time.RFC3339Nano),
		Down:        dirSummary(down), Up: dirSummary(c.Stats(Up)),
		RTTSamples: c.m.rtt.Samples(), AckRTTSamples: c.m.ackRTT.Samples(),
		ByCategory: make(map[string]uint64, lludp.NumCategories+1),
	}
	if c.Known() {
		s.AgentID, s.SessionID = c.AgentID.String(), c.SessionID.String()
	}
	if c.m.rtt.Samples() > 0 {
		s.RTTms = millis(c.m.rtt.SRTT())
	}
	if c.m.ackRTT.Samples() > 0 {
		s.AckRTTms = millis(c.m.ackRTT.SRTT())
	}
	if c.m.localRTT.Samples() > 0 {
		s.LocalRTTms = millis(c.m.localRTT.SRTT())
	}
	for cat := range lludp.Category(lludp.NumCategories) {
		s.ByCategory[cat.String()] = down.ByCategory[cat]
	}
	s.ByCategory[lludp.Unthrottled.String()] = down.ByCategory[lludp.NumCategories]
	if !c.ViewerThrottleAt.IsZero() {
		var total float64
		for _, v := range c.ViewerThrottle {
			total += float64(v)
		}
		s.ViewerThrottleBPS = &total
	}
	return s
}

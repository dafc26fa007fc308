package viewer

import (
	"github.com/fairgrid/fairgrid/opensim"
	"github.com/fairgrid/fairgrid/throttle/circuit"
)

// Report is what a viewer measured (`fairgrid viewer --format json`).
type Report struct {
	Viewer             string             `json:"viewer"`
	AgentID            string             `json:"agent_id"`
	LoggedIn           bool               `json:"logged_in"`
	RateBPS            float64            `json:"rate_bps"`   // received, mean over the run
	ByChannel          map[string]float64 `json:"by_channel"` // bits/s per channel
	ThrottleBPS        float64            `json:"throttle_bps"`
	Lost               uint64             `json:"lost"`
	LossEvents         uint64             `json:"loss_events"`
	LossEventRate      float64            `json:"loss_event_rate"`
	RTTms              *float64           `json:"rtt_ms"`
	ReliableReceived   uint64             `json:"reliable_received"`
	ReliableDuplicates uint64             `json:"reliable_duplicates"`
	Received           uint64             `json:"packets_received"`
	Bytes              uint64             `json:"bytes_received"`
	// Children are the child circuits to neighbour regions
	// (Config.Children), in their order; the fields above are the root
	// circuit's. TotalRateBPS and TotalBytes are all circuits together.
	Children     []CircuitReport `json:"children,omitempty"`
	TotalRateBPS float64         `json:"total_rate_bps"`
	TotalBytes   uint64          `json:"total_bytes_received"`
}

// CircuitReport is what a viewer measured on one child circuit.
type CircuitReport struct {
	Sim        string  `json:"sim"`
	LoggedIn   bool    `json:"logged_in"`
	Complete   bool    `json:"complete"` // RegionHandshakeReply sent
	RateBPS    float64 `json:"rate_bps"`
	Received   uint64  `json:"packets_received"`
	Bytes      uint64  `json:"bytes_received"`
	Lost       uint64  `json:"lost"`
	LossEvents uint64  `json:"loss_events"`
}

// Report summarises what the viewer has measured so far.
func (v *Viewer) Report() Report {
	v.mu.Lock()
	defer v.mu.Unlock()
	r := Report{Viewer: v.self.String(), AgentID: v.cfg.AgentID.String(), LoggedIn: v.loggedIn,
		ThrottleBPS: v.throttle.BitsPerSecond(), ByChannel: map[string]float64{}}
	secs := v.last.Sub(v.start).Seconds()
	for _, ch := range v.children {
		cr := CircuitReport{Sim: ch.sim.String(), LoggedIn: ch.loggedIn, Complete: ch.handshaken}
		if tc := v.tracker.Circuit(circuit.Key{Viewer: v.self, Sim: ch.sim}); tc != nil {
			down := tc.Stats(circuit.Down)
			cr.Received, cr.Bytes, cr.Lost, cr.LossEvents = down.Packets, down.Bytes, down.Lost, down.LossEvents
			if secs > 0 {
				cr.RateBPS = float64(down.Bytes) * 8 / secs
			}
		}
		r.Children = append(r.Children, cr)
		r.TotalBytes += cr.Bytes
		r.TotalRateBPS += cr.RateBPS
	}
	c := v.circuit()
	if c == nil {
		return r
	}
	down := c.Stats(circuit.Down)
	if secs > 0 {
		r.RateBPS = float64(down.Bytes) * 8 / secs
		r.TotalRateBPS += r.RateBPS
		for ch := range opensim.Channel(opensim.NumChannels) {
			r.ByChannel[ch.String()] = float64(down.ByChannel[ch]) * 8 / secs
		}
	}
	r.Lost, r.LossEvents, r.LossEventRate = down.Lost, down.LossEvents, down.LossEventRate
	r.ReliableReceived, r.Received, r.Bytes = down.Reliable, down.Packets, down.Bytes
	r.TotalBytes += down.Bytes
	r.ReliableDuplicates = down.SpuriousResends + down.Duplicates
	if c.RTT().Samples() > 0 {
		ms := float64(c.RTT().SRTT().Microseconds()) / 1000
		r.RTTms = &ms
	}
	return r
}

package throttle

import (
	"time"

	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle/circuit"
)

// OneShare is what one TCP flow of full segments gets on a circuit's path,
// from its controller's measurements: ratecalc.TCPShareRate at the path's
// RTT and the loss event rate per 1,460-byte segment, the quantity
// `fairgrid rate`, the audit and the lab call one share. 0 before the
// first loss event, or for a controller that counts no losses per segment
// (vtcp does; window tracking and TFRC count them per datagram).
func OneShare(s ratecalc.Stats) ratecalc.Rate {
	if !(s.SegmentLossEventRate > 0) {
		return 0
	}
	rtt := s.PathRTT
	if rtt <= 0 {
		rtt = s.SRTT
	}
	return ratecalc.TCPShareRate(ratecalc.NominalSegmentSize, rtt, s.SegmentLossEventRate)
}

// TCPFairRate is the TFRC equation (RFC 5348 §3.1, ratecalc.TFRCRate),
// labelled as one: at the loss event rate
// measured on the simulator-to-viewer direction, the ping-based RTT and
// the segment size the controllers use: the mean size of the simulator's
// datagrams, or TFRC-SP's nominal 1460 B (control.segment). It is what the
// dashboard sets beside the received and the requested rate. False until
// all three are known: before the first loss event the equation has no
// finite answer, and without a ping pair there is no RTT to put in it.
func TCPFairRate(s circuit.Summary, segment Segment) (ratecalc.Rate, bool) {
	if s.RTTms == nil || *s.RTTms <= 0 || s.Down.LossEventRate <= 0 || s.Down.Packets == 0 {
		return 0, false
	}
	size := float64(s.Down.Bytes) / float64(s.Down.Packets)
	if segment == SegmentNominal {
		size = ratecalc.NominalSegmentSize
	}
	rtt := time.Duration(*s.RTTms * float64(time.Millisecond))
	return ratecalc.TFRCRate(size, rtt, s.Down.LossEventRate), true
}

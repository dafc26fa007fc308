package ratecalc

import "time"

// RTTStats smooths round-trip samples as RFC 6298 §2 does: the first sample
// sets SRTT = R and RTTVAR = R/2; later ones RTTVAR = (1−β)·RTTVAR + β·|SRTT−R|
// and SRTT = (1−α)·SRTT + α·R, with α = 1/8 and β = 1/4. Samples that are
// zero or negative are ignored and counted; samples above MaxRTT are clamped.
// The zero value is ready to use.
type RTTStats struct {
	srtt, rttvar, latest, min time.Duration
	samples, rejected         uint64
}

// RFC 6298 §2 gains.
const (
	rttAlpha = 0.125
	rttBeta  = 0.25
)

// Add records one sample.
func (s *RTTStats) Add(sample time.Duration) {
	if sample <= 0 {
		s.rejected++
		return
	}
	sample = min(sample, MaxRTT)
	s.latest = sample
	if s.samples == 0 || sample < s.min {
		s.min = sample
	}
	if s.samples == 0 {
		s.srtt, s.rttvar = sample, sample/2
	} else {
		diff := s.srtt - sample
		if diff < 0 {
			diff = -diff
		}
		s.rttvar = time.Duration((1-rttBeta)*float64(s.rttvar) + rttBeta*float64(diff))
		s.srtt = time.Duration((1-rttAlpha)*float64(s.srtt) + rttAlpha*float64(sample))
	}
	s.samples++
}

// SRTT is the smoothed round-trip time, 0 before the first sample.
func (s *RTTStats) SRTT() time.Duration { return s.srtt }

// RTTVar is the round-trip time variation.
func (s *RTTStats) RTTVar() time.Duration { return s.rttvar }

// Latest is the most recent sample.
func (s *RTTStats) Latest() time.Duration { return s.latest }

// Min is the smallest sample seen.
func (s *RTTStats) Min() time.Duration { return s.min }

// Samples is the number of samples taken; Rejected those ignored.
func (s *RTTStats) Samples() uint64  { return s.samples }
func (s *RTTStats) Rejected() uint64 { return s.rejected }

// RTO is SRTT + max(G, 4·RTTVAR) with clock granularity G = 1 ms, floored at
// 1 s as RFC 6298 §2.4 says; 1 s before the first sample (§2.1).
func (s *RTTStats) RTO() time.Duration {
	if s.samples == 0 {
		return time.Second
	}
	return max(s.srtt+max(time.Millisecond, 4*s.rttvar), time.Second)
}

package ratecalc

import (
	"math"
	"time"
)

// Input clamps of the throughput equations (doc.go, "Bad input"). A loss
// event rate outside (0, 1] or NaN, an RTT that is zero or negative, and a
// segment size below one byte never produce NaN, an infinite rate or a panic.
const (
	// MinLossEventRate stands in for p = 0 ("no loss yet"): the equations
	// have no finite value there, and 1e-8 already gives ~1.4 Gbit/s at
	// s = 1460 B, R = 100 ms, above any throttle.
	MinLossEventRate = 1e-8
	// MinRTT is the smallest round-trip time the equations use: pings on
	// loopback measure well under a millisecond, which would otherwise
	// make the fair rate explode.
	MinRTT = time.Millisecond
	// MaxRTT bounds absurd samples (a circuit is dead long before).
	MaxRTT = 100 * time.Second
)

// EquationInputs returns the segment size, round-trip time and loss event
// rate the equations compute with when given s, rtt and p: the inputs
// after the clamps above, for a caller that tells its user.
func EquationInputs(s float64, rtt time.Duration, p float64) (float64, time.Duration, float64) {
	if math.IsNaN(s) || s < 1 {
		s = 1
	}
	if math.IsNaN(p) || p > 1 {
		p = 1 // the most conservative reading of a nonsense loss rate
	}
	if p < MinLossEventRate {
		p = MinLossEventRate
	}
	return s, min(max(rtt, MinRTT), MaxRTT), p
}

// clampInputs applies the documented clamps to equation inputs.
func clampInputs(s float64, rtt time.Duration, p float64) (float64, float64, float64) {
	s, rtt, p = EquationInputs(s, rtt, p)
	return s, rtt.Seconds(), p
}

// TFRCRate is the TCP throughput equation of RFC 5348 §3.1 with b = 1 and
// t_RTO = 4R, for segment size s in bytes, round-trip time rtt and loss
// event rate p:
//
//	X = s / (R·sqrt(2p/3) + 12·R·sqrt(3p/8)·p·(1 + 32p²))
//
// Reference values (congestion.md §5.1; s = 1460 B, R = 100 ms): p = 0.0001
// gives 14,292 kbit/s, 0.005 gives 1,936, 0.03 gives 646 and 0.1 gives 207.
func TFRCRate(s float64, rtt time.Duration, p float64) Rate {
	s, r, p := clampInputs(s, rtt, p)
	return Rate(s / (r * tfrcF(p)))
}

// CUBICRate is CUBIC's average rate for a flow of s-byte segments at
// loss event rate p and round-trip time rtt, with the clamps of TFRCRate:
// an average window of cubicWindow segments per R (RFC 8312 §5, Eq. 5).
// It counts no retransmission timeouts: at heavy loss it lies far above
// what a TCP flow gets (TCPShareRate keeps the timeouts).
func CUBICRate(s float64, rtt time.Duration, p float64) Rate {
	s, r, p := clampInputs(s, rtt, p)
	return Rate(cubicWindow(r, p) * s / r)
}

// cubicWindow is CUBIC's average window in segments at loss event rate p
// and an RTT of r seconds, (C(3+β)/(4(1−β)))^¼ · (r/p)^¾ (RFC 8312 §5,
// Eq. 5, for a loss every 1/p packets; at C = 0.4 and β = 0.7,
// 1.054·(r/p)^¾, Eq. 7). It lies above Reno's mean window, sqrt(3/(2p)),
// where p is low and r long: at 100 ms for p below about 0.0006.
func cubicWindow(r, p float64) float64 {
	return cubicResponseConst * math.Pow(r/p, 0.75)
}

// cubicResponseConst is RFC 8312 Eq. 5's constant, (C(3+β)/(4(1−β)))^¼.
var cubicResponseConst = math.Pow(cubicC*(3+cubicBeta)/(4*(1-cubicBeta)), 0.25)

// TCPShareRate is what one bulk TCP flow of s-byte segments gets at loss
// event rate p and round-trip time rtt: the TFRC equation (t_RTO = 4R)
// with the window between timeouts the larger of Reno's mean window and
// CUBIC's average window (cubicWindow):
//
//	X = s / (R/max(sqrt(3/(2p)), W_cubic) + 12·R·sqrt(3p/8)·p·(1 + 32p²))
//
// The TCP a viewer meets is CUBIC, the default of Linux, Windows and
// macOS: Reno's rate where Reno's window is the larger (its TCP-friendly
// region, RFC 8312 §4.2), more on long or fast paths at low loss (§5.1),
// and Padhye's timeouts at heavy loss either way. Where Reno's window is
// the larger it is TFRCRate. It is the audit's estimate of a TCP flow on
// the viewer's path; docs/fairness.md gives how close it came to real TCP
// flows in the lab, and where not.
func TCPShareRate(s float64, rtt time.Duration, p float64) Rate {
	s, r, p := clampInputs(s, rtt, p)
	w := max(math.Sqrt(3/(2*p)), cubicWindow(r, p))
	return Rate(s / (r * (1/w + tfrcTimeouts(p))))
}

// tfrcF is f(p) = sqrt(2p/3) + 12·sqrt(3p/8)·p·(1 + 32p²), the equation's
// denominator per unit RTT (b = 1, t_RTO = 4R).
func tfrcF(p float64) float64 {
	return math.Sqrt(2*p/3) + tfrcTimeouts(p)
}

// tfrcTimeouts is f(p)'s timeout term, 12·sqrt(3p/8)·p·(1 + 32p²).
func tfrcTimeouts(p float64) float64 {
	return 12 * math.Sqrt(3*p/8) * p * (1 + 32*p*p)
}

// PadhyeModel holds the parameters of the full Padhye model (Padhye,
// Firoiu, Towsley, Kurose, SIGCOMM 1998). Zero fields take the defaults of
// fairgrid's audit: B = 1 packet per ACK, T0 = 4R, and a receive window of
// 64 KiB (MaxWindowBytes = 65535, so 44 packets of 1460 B).
type PadhyeModel struct {
	B              float64
	T0             time.Duration
	MaxWindowBytes float64
	// CUBIC takes the window between timeouts as the larger of Reno's mean
	// window and CUBIC's average window (cubicWindow; b = 1): CUBIC is
	// Reno in its TCP-friendly region and takes more above it, and times
	// out as Reno does.
	CUBIC bool
}

// Rate is the Padhye model's throughput:
//
//	X = s·min(W_max/R, 1/(R·sqrt(2bp/3) + T0·min(1, 3·sqrt(3bp/8))·p·(1 + 32p²)))
//
// with W_max = floor(MaxWindowBytes/s) packets; with CUBIC set,
// R·sqrt(2bp/3) is R/max(sqrt(3/(2bp)), W_cubic). It differs from TFRCRate by
// the receive-window limit and by min(1, ·), which matters only for
// p > 8/27.
func (m PadhyeModel) Rate(s float64, rtt time.Duration, p float64) Rate {
	s, r, p := clampInputs(s, rtt, p)
	b := m.B
	if !(b >= 1) {
		b = 1
	}
	t0 := 4 * r
	if m.T0 > 0 {
		t0 = m.T0.Seconds()
	}
	wBytes := m.MaxWindowBytes
	if !(wBytes > 0) {
		wBytes = 65535
	}
	wmax := max(math.Floor(wBytes/s), 1)
	perWindow := r * math.Sqrt(2*b*p/3) // R over Reno's mean window
	if m.CUBIC {
		perWindow = min(perWindow, r/cubicWindow(r, p))
	}
	loss := 1 / (perWindow + t0*min(1, 3*math.Sqrt(3*b*p/8))*p*(1+32*p*p))
	return Rate(s * min(wmax/r, loss))
}

// MathisConstant is C in the Mathis model for periodic loss and an ACK per
// packet, sqrt(3/2) (Mathis, Semke, Mahdavi, Ott, CCR 1997): the mean window
// of Reno's AIMD(1, ½).
var MathisConstant = math.Sqrt(1.5)

// MathisRate is the Mathis simplification, X = (s/R)·C/sqrt(p) with
// C = sqrt(3/2): Reno's rate ignoring timeouts, the upper bound of the
// "TCP-friendly" test of Floyd and Fall (1999). It exceeds TFRCRate by 28 %
// at p = 3 % and 2.2× at 10 %.
func MathisRate(s float64, rtt time.Duration, p float64) Rate {
	s, r, p := clampInputs(s, rtt, p)
	return Rate(s / r * MathisConstant / math.Sqrt(p))
}

// LossEventRateFor inverts TFRCRate: the loss event rate p at which a flow
// with segment size s and round-trip time rtt is TCP-fair at rate x. It is
// how RFC 5348 §6.3.1 synthesises the first loss interval from the receive
// rate. f(p) grows monotonically, so bisection converges; the result lies in
// [MinLossEventRate, 1].
func LossEventRateFor(s float64, rtt time.Duration, x Rate) float64 {
	s, r, _ := clampInputs(s, rtt, MinLossEventRate)
	if !(x > 0) {
		return 1
	}
	target := s / (r * float64(x)) // the f(p) that gives rate x
	lo, hi := MinLossEventRate, 1.0
	if tfrcF(lo) >= target {
		return lo
	}
	if tfrcF(hi) <= target {
		return hi
	}
	for range 100 {
		mid := (lo + hi) / 2
		if tfrcF(mid) < target {
			lo = mid
		} else {
			hi = mid
		}
		if hi-lo <= 1e-12*hi {
			break
		}
	}
	return (lo + hi) / 2
}

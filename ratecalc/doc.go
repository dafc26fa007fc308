// Package ratecalc computes TCP-fair rates: the rate a viewer should ask a
// simulator for, given the loss and round-trip time of its circuit. It
// imports only the standard library, starts no goroutines and never reads
// the clock: every input carries its time, so replaying a capture gives the
// same decisions as live traffic. Background and reference values:
// ../shared/docs/congestion.md.
//
// # Equations
//
// TFRCRate is the throughput equation of RFC 5348 §3.1 with b = 1 and
// t_RTO = 4R:
//
//	X = s / (R·sqrt(2p/3) + 12·R·sqrt(3p/8)·p·(1 + 32p²))   bytes/s
//
// for segment size s (bytes), round-trip time R and loss event rate p.
// MathisRate is (s/R)·sqrt(3/2)/sqrt(p), Reno without timeouts, and
// PadhyeModel the full Padhye model with a receive window; both are for
// audits. LossEventRateFor inverts TFRCRate (RFC 5348 §6.3.1).
//
// # Loss events and intervals
//
// LossHistory follows RFC 5348 §5: each sequence number counts as a packet;
// losses within one RTT of the first loss of an event belong to that event;
// the loss event rate is 1/I_mean, the weighted mean (weights 1, 1, 1, 1,
// 0.8, 0.6, 0.4, 0.2) of the last eight intervals, with the open interval
// counted only when it raises the mean, and optional history discounting
// (§5.5). Events come in as neutral Packet values (received or lost, with a
// time); the translation from LLUDP — what is lost, what is a spurious
// resend — is the measurement layer's job.
//
// # Controllers
//
// Controller is the one interface: OnPacket and OnRTT in, Rate(now) out
// once per request interval, Stats for metrics.
//
//   - VirtualTCP: the congestion window of a virtual CUBIC flow of full
//     1,460-byte segments (RFC 8312, with its Reno-friendly region),
//     whose loss events count lost bytes — a segment's worth per event,
//     one event per RTT — so that a flow of small, smooth datagrams gets
//     one TCP share of bytes where per-packet loss event rates starve it
//     (Rhee and Xu 2005; RFC 4828); rate = cwnd·1460/RTT, the RTT
//     smoothed by elapsed time, not per sample (pings are sparse), at most the
//     TFRC equation at its per-segment loss event rate and the smallest
//     RTT, with CUBIC's average window (RFC 8312 §5) between timeouts
//     where that is the larger (TCPShareRate, PadhyeModel.CUBIC). A lost
//     datagram counts for the window's share of what arrives (after a
//     cut the request in force lags the window by up to an interval).
//     SegmentLossEventRateOver is the same count over a connection's
//     counters, for audits, every lost byte whole. Where it holds against
//     real TCP and where it does not is measured, not argued:
//     docs/fairness.md.
//   - TFRC: X = max(min(X_calc, 2·max(X_recv over two intervals)), s/t_mbi)
//     with RFC 5348's start-up adapted to a request every few seconds.
//   - Window: window tracking, the approach of the Mongoose client of the
//     St Andrews thesis: an emulated Reno window (slow start, +1 packet per
//     RTT, halved once per loss event), rate = cwnd·s/SRTT, frozen while
//     the flow is application-limited.
//   - Viewer: the stock viewer's ±10 % rule, the baseline to beat.
//   - QoS: a guaranteed floor and an optional target rate around any of them.
//
// RTTStats smooths round-trip samples as RFC 6298 does.
//
// # Segment size
//
// s is the mean received payload (s = 0.9·s + 0.1·len, as Linux's CCID 3;
// RFC 5348 §3.1), unless Config.NominalSegment fixes it: TFRC-SP (RFC 4828
// §3) takes NominalSegmentSize, 1460 B, so that a flow of small packets
// gets the bytes per second a TCP flow of full segments gets at the same
// loss event rate and RTT, rather than mean/1460 of them. Both rates are
// proportional to s, so the nominal setting multiplies them by 1460/mean;
// loss events still count packets, and window tracking's
// application-limited test still measures the window in the viewer's
// packets of the mean size. Stats.SegmentSize is the mean,
// Stats.FairSegmentSize the s the rates stand on.
//
// # What the link simulator shows
//
// The tests run every controller over a deterministic simulated link
// (capacity, FIFO buffer, delay, random or bursty loss) on virtual time.
// TFRC's mean rate lies within 6 % of the equation at the loss event rate
// and RTT it measured, window tracking within 10 % of the Mathis rate, for
// loss from 0.01 % to 10 % and RTT from 50 to 300 ms. After a step from
// 0.5 % to 3 % loss, TFRC settles within ±20 % in one 5 s interval and
// window tracking in two: in this model the equation converges faster,
// contrary to the thesis.
//
// # Bad input
//
// No input gives a panic, NaN, an infinite or a negative rate. The
// equations clamp p to [MinLossEventRate, 1] (NaN counts as 1), R to
// [MinRTT, MaxRTT] and s to at least 1 byte. Controllers ignore RTT samples
// that are zero or negative, treat a received packet whose time went
// backwards as arriving at the latest time seen, and count both in
// Stats.BadInputs; a lost packet's time is an estimate and may be earlier.
// Long gaps are simply long intervals: the receive rate over them is low and
// limits TFRC. Decisions are clamped to the configured [Min, Max].
package ratecalc

// Package audit measures how far captured LLUDP traffic was from a
// TCP-fair share of its path, per circuit and direction, per second and
// over the whole connection, the way the St Andrews thesis shows it
// (figures 7.13 and 7.14; ../shared/docs/congestion.md §2.2, §10). It is
// the engine of `fairgrid audit`; its rows (report.go) are what every
// output writes, the text, JSON and CSV here and the Parquet and HTML of
// package render.
//
// # Model
//
// One capture.Reader per input feeds one circuit.Tracker, which finds the
// circuits, their identity, losses (spurious resends and duplicates
// apart), ping RTT and ack RTT (reported apart, never mixed in). Several
// inputs are merged by timestamp into one trace, so a circuit keeps its
// identity across files. The auditor adds, per direction:
//
//   - 1 s bins aligned to the capture's unix seconds, closed for every
//     flow when a datagram opens a later second: received bit/s, losses,
//     and the tracker's loss event rate p and smoothed ping RTT at the
//     bin's end. Only seconds that carried traffic are bins.
//   - The TCP-fair rate: RFC 5348 §3.1's equation (ratecalc.TFRCRate, b = 1,
//     t_RTO = 4R) at that p and R, with s = the direction's mean datagram
//     payload so far (RFC 5348 §4.1, what the controllers use) and with
//     TFRC-SP's nominal s = 1460 B (RFC 4828 §3), both reported; the
//     per-second ratios take one (Config.Segment; congestion.md §13 item
//     2). Mathis (ratecalc.MathisRate) is reported beside it with that s.
//   - The verdict's estimate of what a TCP flow on the path gets
//     (Circuit.FairTCP): the equation with the larger of Reno's and
//     CUBIC's average windows between timeouts (ratecalc.TCPShareRate:
//     the TCP a viewer meets is CUBIC, which takes more than Reno on long
//     paths at low loss) at 1,460 B, the ping RTT and the loss event rate
//     per 1,460-byte segment received with losses counted by bytes
//     (ratecalc.SegmentLossEventRateOver), as fairgrid's default
//     controller counts them, except that it counts every lost byte
//     whole, where the controller discounts a loss by its window's share
//     of what arrives (a capture has no window). The per-packet p a thin
//     flow measures lies far above a TCP flow's in the same queue, so
//     received ÷ the equation at that p (ReceivedOverFair) flatters any
//     flow that starves itself;
//     docs/fairness.md compares the estimate with the TCP flow that shared
//     the lab's bottleneck, and says where it cannot be trusted.
//   - Over the whole connection: p = loss events ÷ sequence numbers
//     counted (the mean loss interval's inverse, every interval weighted
//     alike), R = the smoothed ping RTT at the end, and the distribution
//     (mean, median, 25th and 75th percentile, R-7 interpolation) of the
//     per-second received/fair ratios and rates.
//
// A fair rate is a number only when it can be: zero loss events make it
// "unbounded: no loss" (the equation has no finite value at p = 0), no
// ping pair makes it "unknown: no RTT", and it is never guessed. Unknown
// values are nil in the rows.
//
// Requests: every AgentThrottle the viewer's endpoint sent (its own, or a
// sidecar's in its name) is a Request beside the received rate. With
// Config.Series the three controllers fairgrid runs (window tracking,
// TFRC, the viewer's stock rule) are replayed on the trace: the tracker
// feeds them as it feeds throttle.Loop's controller, and every loop
// Interval of capture time (5 s by default) each is asked for its rate,
// clamped as the loop clamps it.
//
// Across circuits: Jain's index (Jain, Chiu, Hawe, DEC TR-301, 1984) of
// received/fair over the down directions whose fair rate is known
// (congestion.md §10.2); bytes per throttle category (lludp) and per
// scheduler channel (lludp.ChannelOf); datagrams and bytes per message
// type.
//
// # Memory
//
// The capture is streamed: the state is the tracker's per circuit, one
// float per second per direction for the percentiles, and, with Series,
// the rows reported. Nothing grows with the datagrams.
//
// # Bad input
//
// A damaged capture is read up to the damage; its FileResult says at
// which byte it stopped and why, and the Report warns. Datagrams that are
// not LLUDP, or do not decode, are counted by reason; when more than 1 %
// carry message numbers the template does not know, the Report warns that
// the template may be wrong.
package audit

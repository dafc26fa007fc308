// Package circuit measures LLUDP circuits in captured traffic: what was
// lost, how long a round trip takes, how fast data arrives, and who the
// agent is. It turns lludp.Datagram values into per-circuit counters and,
// for a circuit with a ratecalc.Controller, into the neutral events the
// controller takes. Facts and sources: ../shared/docs/protocol.md §3, §9,
// §12.
//
// # Circuits
//
// A circuit is the pair (viewer endpoint, simulator endpoint). Which side
// is the simulator is decided, in order, by the configured simulator
// endpoints, by the direction of a UseCircuitCode (only a viewer sends one),
// or by the port: the common simulator range 9000–13100
// (lludp.SimPorts); if both ports are in range, the lower is the
// simulator's. Datagrams on those ports that are not LLUDP are counted by
// reason and belong to no circuit.
//
// # Candidates
//
// A spoofed-source flood costs nothing to send, so an endpoint is first a
// candidate: a record of a few hundred bytes that holds its identity and
// what its first two datagrams need for the measurements (their times,
// sizes, sequence numbers, flags, categories and ping IDs), instead of a
// circuit's 3.5 KiB. It is promoted to a circuit, and what it held replayed
// so that nothing it carried is lost from the measurements, by
//
//   - a datagram in the other direction than the ones it holds: the two
//     ends talk. A simulator answers only circuits it accepted (OpenSim
//     drops other endpoints' datagrams without a reply and acks a
//     UseCircuitCode only once authorised, protocol.md §8.8, §11.2), and a
//     spoofed source never hears the answer, so it cannot answer back; or
//   - a third datagram in one direction, each of the three advancing the
//     sequence (by at most 512, as a gap may), so that a capture holding one
//     direction only (a filter, an asymmetric route) still has its
//     circuits. A real circuit gets there within milliseconds: a viewer
//     sends ten AgentUpdates a second, a simulator more.
//
// Two datagrams per fake source therefore never make a circuit, and it
// takes a conversation or three to do so. A third datagram that does
// neither (a resend of the same number, a jump) is counted as folded and
// kept out of the measurements should the candidate be promoted later. The
// candidates live in a table of Config.MaxCandidates (8192 by default, about
// 700 bytes each with their map entry: 5.6 MiB); a new one beyond it folds
// the oldest. Folded and Candidates count the endpoints that never made a
// circuit: `fairgrid decode --summary` reports them instead of a line each,
// and its memory stays bounded whatever the capture holds of them.
//
// # Flood defence
//
// Config.MaxCircuits bounds the circuits themselves: a circuit promoted
// beyond it evicts the least recently active circuit whose AgentID and
// SessionID are unknown, else the least recently active one, and
// Config.OnEvict tells the owner. Per circuit, Stats(d).Packets counts
// the datagrams each way, and IdentityDatagrams the viewer→simulator
// datagrams (UseCircuitCode, CompleteAgentMovement, AgentUpdate,
// AgentThrottle) that carried its current IDs since IdentitySince;
// IdentityConflicts counts those that carried others. A daemon that injects
// requests with those IDs can wait until enough datagrams of a promoted
// circuit agree: one spoofed datagram is cheap, ten a second from the
// viewer's own endpoint are what a real viewer sends.
//
// # Loss
//
// Each direction's sequence numbers are tracked in serial arithmetic,
// modulo 2^24 until a number above 0xFFFFFF proves a 32-bit (OpenSim) peer.
// Sequence 0 is OpenSim's out-of-band ack of UseCircuitCode unless it
// continues the sequence (a 24-bit wrap). A missing number is lost once
// three later numbers have arrived (NDUPACK = 3); filled earlier by an
// original, it was reordering. A resend that fills a missing number means
// the original was lost; a resend of a number already received is
// spurious — OpenSim sends many while viewers are slow to ack — and is
// counted on its own, never as loss. Jumps of more than 512 numbers restart
// tracking instead of recording hundreds of losses (a restarted circuit, a
// capture gap). Losses within one RTT of the first loss of an event form
// one loss event (RFC 5348 §5.2), and the loss event rate comes from
// ratecalc.LossHistory.
//
// # Round-trip time
//
// The network RTT is the viewer's StartPingCheck to the simulator's
// CompletePingCheck with the same PingID, smoothed as RFC 6298 says. The
// viewer's reliable packets against the simulator's acks give a second
// signal, reported apart: OpenSim delays its acks by up to 500 ms. The
// simulator's own pings, answered by the viewer, measure only the viewer's
// local delay at a viewer-side capture, and are reported apart too.
//
// # Identity
//
// AgentID, SessionID and circuit code come from UseCircuitCode,
// CompleteAgentMovement and AgentUpdate; an AgentThrottle fills them only
// when unknown, and one whose IDs contradict the circuit's is not the
// viewer's (a simulator ignores it too). The viewer's latest sequence number
// and its latest AgentThrottle are kept for the sidecar. Of those messages
// only the IDs are read, straight from the bytes, without decoding the
// rest: AgentUpdate is a third of a viewer's traffic.
//
// # Cost
//
// A Tracker allocates only when a candidate appears or is promoted; a
// circuit's state is about 3.5 KiB, a candidate's about 700 bytes. The
// latest two circuits seen are found without a map lookup.
package circuit

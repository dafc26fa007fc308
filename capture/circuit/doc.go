// Package circuit measures LLUDP circuits in captured traffic: what was
// lost, how long a round trip takes, how fast data arrives, and who the
// agent is. It turns capture.Datagram values into per-circuit counters and,
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
// (capture.SimPorts); if both ports are in range, the lower is the
// simulator's. Datagrams on those ports that are not LLUDP are counted by
// reason and belong to no circuit.
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
// and its latest AgentThrottle are kept for the sidecar.
//
// # Cost
//
// A Tracker allocates only when a circuit appears; a circuit's state is
// about 3.4 KiB.
package circuit

// Package throttle turns a target rate into the AgentThrottle a simulator
// receives. ViewerSplit shapes a total the way the Second Life viewer does,
// so requests look like those simulators already get; WeightedSplit uses
// configured proportions instead. Loop is the per-circuit control loop of
// the sidecar daemon and the proxy: it measures every circuit from the
// datagrams it observes (lludp.Datagram), decides each one's request
// every interval and sends it through a Sender.
//
// # Controllers and the segment size
//
// Config.NewController builds each circuit's controller by name (the
// virtual TCP, DefaultController, calibrated against real TCP in the lab:
// docs/fairness.md; window tracking and TFRC, the baselines; the viewer's
// stock rule) and Config.Clamp bounds what it asks for; the loop and the
// audit's replay both use them. Config.Segment is the s window tracking's
// and TFRC's rates stand on (the virtual TCP always stands on 1460 B): SegmentMean, the circuit's mean
// datagram payload (RFC 5348 §3.1, the default), or SegmentNominal,
// TFRC-SP's 1460 B (RFC 4828 §3), which asks for 1460/mean times as much.
// The lab measures the choice beside a bulk CUBIC flow (docs/lab.md,
// "which segment size s is TCP-fair"). A reload rebuilds the controllers
// with a new setting.
//
// # What is not here
//
// This package is the control core: it measures, decides and encodes,
// and imports neither gopacket nor Prometheus. What runs it as a program
// is the application layer beside it: package throttle/sidecar (the
// sidecar: a source of datagrams, the raw sender, the Prometheus
// collector, reloads), package throttle/proxy (the SOCKS 5 front-end) and
// package throttle/group (the run group every front-end is).
//
// # Floods
//
// A datagram with a spoofed source costs nothing to send, so the loop
// bounds what it keeps: at most Config.MaxCircuits circuits (circuits
// whose agent is unknown are evicted first, then the least recently
// active), endpoints that never hold a conversation stay cheap candidates
// in the tracker (package circuit), and the log has one summary line per
// interval, not a line per circuit.
//
// A request is sent in the name of a circuit's AgentID and SessionID only
// once IdentityDatagrams = 3 viewer→simulator datagrams of one circuit
// have carried them, from that viewer endpoint. The viewer repeats its IDs
// constantly on its root region's circuit: UseCircuitCode and
// CompleteAgentMovement when it arrives, then AgentUpdate 1 to 125 times
// a second for as long as it stays (protocol.md §9, §11.2). So a real
// circuit — even one whose capture started mid-session — reaches three
// within three seconds at the slowest, before the first decision at the
// default 5 s interval, and loses nothing; more would delay it at the
// slowest AgentUpdate rate. A neighbour region's circuit carries the IDs
// only in its UseCircuitCode; it shares the viewer's UDP socket, so the
// root circuit from the same endpoint vouches for it. A blind spoofer that
// sends from fresh addresses puts one datagram on each endpoint; to have
// the loop speak for an agent it must forge the same endpoint and IDs
// three times and hold a conversation with the simulator from there. Not
// two: a viewer resends an unacknowledged UseCircuitCode, so two copies of
// one login datagram are normal and prove nothing.
package throttle

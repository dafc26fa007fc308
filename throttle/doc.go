// Package throttle turns a target rate into the AgentThrottle a simulator
// receives. ViewerSplit shapes a total the way the Second Life viewer does,
// so requests look like those simulators already get; WeightedSplit uses
// configured proportions instead. Loop is the per-circuit control loop of
// the sidecar daemon: it measures every circuit from captured datagrams,
// decides each one's request every interval and sends it.
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
// # The sidecar
//
// Sidecar is that loop with its inputs and outputs, the one piece every
// front-end runs: a Source of timestamped datagrams (a live capture, the
// link emulator's tap, a SOCKS5 proxy's relay), a Sender (raw sockets as
// the viewer, the emulator, the proxy's socket), and Run, which runs the
// source, the loop's ticks, the metrics server and reloads as a group:
// the first to fail stops the rest, and Run returns once all have
// stopped. A front-end that relays the traffic itself pushes what it
// relays into a PushSource, and asks Request for the request in force to
// rewrite the viewer's own AgentThrottle in flight. The daemon reopens a
// failed capture every DefaultReopenEvery; a SIGHUP arrives as a value on
// SidecarConfig.Reloads, and the sidecar runs the Reloader, a Running: the
// reload state machine beside Loop.Reconfigure, which reads the settings
// anew, keeps what needs a restart, hands the loop its part and only then
// puts in force what lives beside the loop, all or nothing. The proxy
// front-end is package throttle/proxy.
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

// Package gateway is fairgrid's server side in front of an unmodified
// OpenSim: a UDP gateway at the region's public address that carries
// every viewer circuit to the region, schedules what the region sends
// each viewer with package opensim, measures each circuit at the server
// and keeps each viewer at the lesser of its own request and a TCP-fair
// rate. docs/gateway.md is the operator's account; this is the model.
//
// # Circuits
//
// OpenSim binds its UDP socket to InternalAddress:InternalPort
// (Regions.ini) and tells viewers ExternalHostName and the port
// (protocol.md §13.1d). The gateway listens at the public address of each
// configured Route and gives every viewer circuit a socket of its own
// towards the route's region, so the region sees one endpoint per circuit,
// as without the gateway. Destinations come from the configuration only,
// never from a datagram: the gateway is not an open relay.
//
// A circuit opens only once the viewer has proved its address (probe.go):
// its first UseCircuitCode is held, not passed on, and answered with one
// reliable StartPingCheck numbered at random; the viewer's ack of that
// number, which only a receiver of it can know, opens the circuit, sends
// the held UseCircuitCode to the region from the circuit's new socket, and
// starts the circuit's numbering towards the viewer there. Until then the
// endpoint costs no socket and is sent at most three times what it sent
// (RFC 9000 §8). The circuit is pending until the viewer acks a datagram
// of the region's (whose numbers are as unguessable), then established;
// CompleteAgentMovement, which anyone can spoof, proves nothing. Bounds
// (Config): MaxViewers circuits in all, each a socket; MaxPending probes,
// the oldest making room only once it is PendingHold (1 s) old, else the
// newcomer is refused; MaxPerPrefix circuits, and apart probes, from one
// source /24 or /64; UpMax bytes a second from each viewer to the region.
// A UseCircuitCode from a circuit's endpoint with another code, agent or
// session is dropped (Mismatch): it never resets a circuit, which only a
// logout or CloseCircuit ends. Probes are dropped after PendingTimeout,
// pending circuits closed after it, silent ones after IdleTimeout,
// logged-out ones Linger after the LogoutReply or CloseCircuit.
// docs/gateway.md, "The gateway under attack", gives each defence's limit.

// # Scheduling
//
// The region's datagrams go into the opensim scheduler by channel
// (lludp.ChannelOf: Avatar, Task, Texture, Layer, Asset) and leave at
// the circuit's rate, circuits sharing Scheduler.SceneMax — the gateway's
// uplink — by proportional fair queuing; messages of no channel (acks,
// pings, the handshake) leave at once, as OpenSim sends them. A channel's
// queue is bounded in bytes and packets; a new datagram finding it full is
// dropped (tail drop, counted): the region's own resend of a reliable
// datagram then does its job, and an unreliable one was never owed. A
// resend is never refused (opensim.Scheduler.Enqueue). Each datagram's
// wait in its queue is measured per channel.
//
// # Sequence numbers
//
// Fair queuing sends a circuit's channels out of the region's numbering
// order, and a viewer declares a number lost once three later ones have
// arrived (NDUPACK = 3), so the gateway numbers what leaves for a viewer in
// departure order and translates the viewer's acks back (renumber.go); a
// resend carries its original's number, and a resend of a datagram still
// queued is dropped.
//
// # Measurement at the server
//
// The estimator sees each datagram leave for the viewer and each ack
// come back:
//
//   - Loss: a reliable datagram is lost once NDUPACK = 3 reliable
//     datagrams sent after it are acked and it is not (RFC 5681's
//     duplicate-ack rule in departure order). Losses within one RTT are
//     one loss event (RFC 5348 §5.2), in the controller. Unreliable
//     datagrams are never acked, so they are never seen lost: the loss
//     event rate is that of reliable datagrams, unbiased if loss does not
//     depend on reliability, and their bytes count towards the receive
//     rate as sent (biased high by the loss rate, a few per cent).
//   - Lost acks: an ack travels in a viewer datagram that can be lost on
//     the way up, which would make a delivered datagram look lost. The
//     viewer's own sequence numbers show such a loss as a gap. The
//     datagrams whose acks the lost one could have carried (sent from one
//     RTT plus the viewer's ack batching before the viewer's previous
//     datagram, to one RTT before the gap was seen) leave the loss history
//     whatever their fate, so what remains is a sample chosen by time, not
//     by fate, and unbiased; the price is the datagrams left out.
//   - RTT: the region's StartPingCheck leaving the gateway to the
//     viewer's CompletePingCheck: the network round trip plus the viewer's
//     time to answer. OpenSim pings every 5 s. Acks give a second sample
//     per reliable datagram, kept apart (it includes the viewer's ack
//     delay, 100 ms in the Second Life viewer) and never used to control.
//
// The fair rate comes from the same ratecalc controllers the sidecar uses,
// by name (throttle.Config.NewController; by default
// throttle.DefaultController, vtcp: one TCP share of 1,460-byte segments,
// where the per-packet equations of tfrc and window starve a viewer of
// small datagrams, docs/fairness.md), every Control.Interval.
//
// # The rate
//
// A circuit's rate is min(the viewer's own AgentThrottle, the fair rate),
// split over the categories by what each carried from the region over the
// last interval, the viewer's own proportions its floor and starting point
// (splitOf, the one place the split is made, with throttle.DemandSplit;
// Control.FixedSplit keeps the viewer's proportions): OpenSim's category
// buckets do not lend to each other, and a busy category held to its
// fixed fraction of the rate starves. The fair rate applies from the circuit's
// first datagram: the controller's initial rate before any decision,
// never the scheduler's default, and during the circuit's first Interval
// it follows the controller every 100 ms. A reliable datagram unacked for
// max(1 s, 3 RTT + 200 ms) counts as lost, so a circuit that acks nothing
// reads as losing everything. The viewer's
// AgentThrottle is rewritten in flight when the fair rate is lower
// (lludp.AppendReplacedThrottles: sequence number, flags and acks kept),
// and the gateway asserts the rate from the circuit's socket, unreliable
// with the viewer's latest sequence number, when it changes by MinChange
// or every ResendEvery decisions while below the request, so OpenSim
// produces about what the gateway sends. Core is all of this without
// sockets, on explicit time; Gateway is the shell.
package gateway

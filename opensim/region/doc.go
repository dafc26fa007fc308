// Package region is a test region simulator: an LLUDP endpoint that
// behaves like OpenSim where fairgrid's measurements depend on it (the
// login handshake, acks and resends, pings, AgentThrottle) and schedules
// its traffic with package opensim. `fairgrid sim` runs one.
//
// # On OpenSim's terms
//
// Config.Scheduler.ChannelBuckets gives each client OpenSim's per-category
// token buckets, which do not lend an idle category's rate to the busy
// ones (package opensim, doc.go); without it the region's scheduler lends
// (`fairgrid sim --buckets opensim|fair`). The application-limited
// activities (workload.go) offer what a region has to send — terrain
// patches after edits, object updates on arrival and then a trickle,
// Config.Avatars avatars moving, textures over UDP — whatever the throttle;
// Demand states each one's mean in bytes/s. Neighbour regions (child.go)
// are further Servers with Config.Child, each given the root's throttles
// times OpenSim's distance factor, so one viewer holds a root circuit and
// K child circuits as in OpenSim. docs/opensim.md lists the modes, the
// workloads and their demands, and the sources in OpenSim 0.9.2.2.
//
// # The 50-unacked stall
//
// OpenSim stops dequeuing everything but resends for a client with more
// than 50 reliable packets unacknowledged (LLUDPClient.DequeueOutgoing's
// AckStall, added in OpenSim commit 066a6fba; protocol.md §8.5): a fixed
// window of 50 packets, so a client whose round trip has grown (a queue
// filled by a TCP flow beside it) gets about 50 packets a round trip,
// whatever its throttle says. The region does the same by default
// (Config.AckStall 0: 50), to the saturating activities and the workloads
// alike. A negative Config.AckStall removes it: the region's throttle
// alone then sets its rate, as in fairgrid's own scheduler, and what a
// client that never acks can cost stays bounded by its throttle times
// the 3 s RTO at the most, since resend takes each packet out of the
// unacked set when it queues it again.
//
// # Admission control
//
// Without Config.Allowed the region accepts any circuit code, and a
// UseCircuitCode datagram costs nothing to send from a spoofed address:
// each used to open a full circuit that lived for the 60 s client timeout,
// was pinged and had its RegionHandshake resent every second. Ten thousand
// a second grew the simulator past 300 MB and halved an established
// viewer's rate. A circuit is now pending from its UseCircuitCode until
// its CompleteAgentMovement, which a viewer sends one round trip later,
// and three limits apply to pending circuits (AdmissionConfig; flags of
// `fairgrid sim` in brackets):
//
//   - At most MaxPending = 1024 at once [--max-pending]. A
//     UseCircuitCode beyond it is refused and not acked, so a real viewer
//     sends it again a second later (it tries four times). The cap bounds
//     a flood from fresh addresses, which no per-source limit can: a
//     pending circuit costs about 7 KB of memory, and its RegionHandshake
//     resent every second; under 10,000 spoofed UseCircuitCode a second,
//     4096 pending circuits cost an established viewer 15–30 % of its
//     rate on a 2-core machine, 1024 nothing measurable. 1024 still takes
//     a login storm of 1,000 viewers at once, and a larger one in waves
//     a second apart, as the refused retry.
//   - A pending circuit is closed after PendingTimeout = 10 s
//     [--pending-timeout]: a viewer completes the handshake in one round
//     trip, and resends its CompleteAgentMovement three times at least a
//     second apart, so 10 s covers a slow, lossy path; a spoofed circuit
//     frees its slot within that. Pending circuits are not pinged.
//   - New circuits per source /24 (IPv4) or /64 (IPv6) pass a token
//     bucket of CircuitBurst = 1000 at once and CircuitRate = 50 a second
//     [--circuit-burst, --circuit-rate]. Many viewers share one NAT, and
//     a whole class or event may log in through one address, so the burst
//     lets 1,000 logins from one address through at once; a prefix that
//     keeps opening more than 50 a second is not logging people in. Once
//     its burst is spent, one prefix holds at most 50 × 10 s = 500
//     pending circuits, under half the cap, so it cannot lock the others
//     out. The limiter tracks at most MaxPrefixes = 16384 prefixes, the
//     least recently used evicted first; a bucket refills in 20 s, after
//     which its entry carries no information. Stress runs that log in
//     thousands of viewers from one address need a larger burst and cap.
//
// Whatever the datagrams, the bytes read but not yet handled are bounded
// too (16 MB; beyond it they are dropped as a full socket buffer would).
//
// Circuits that completed the handshake are never refused or evicted by
// these limits, and everything refused is counted (Counters, and the
// fairgrid_sim_refused_circuits_total, fairgrid_sim_pending_circuits,
// fairgrid_sim_limiter_* and fairgrid_sim_inbound_overflow_datagrams_total
// series of Collector) and logged as one summary
// line at most every 10 s, never one line per datagram.
//
// # Stress mode
//
// With Config.Stress each movement AgentUpdate is echoed, as an
// ImprovedTerseObjectUpdate naming the mover and its movement counter, to
// every avatar within the view distance, the mover included (stress.go).
// The avatars are indexed in a sparse grid of cells one view distance
// wide, so the world may be larger than a region (up to 65,536 m a side)
// at no cost: the viewers' density sweep spreads them wider as they grow
// in number. Echoes bypass the scheduler, as OpenSim's unthrottled sends
// do. The reader takes datagrams with recvmmsg, up to 32 a call, and
// hands the loop each batch at once; the echoes of a whole batch leave in
// one sendmmsg. Traffic and the fairgrid_sim_datagrams_total and
// fairgrid_sim_stress_* series count what went in and out.
//
// LLUDP has no proof of address: a spoofer can send CompleteAgentMovement
// blind, with the IDs it chose itself, and complete the handshake. The
// per-prefix budget bounds how fast one prefix does that; a region that
// must not admit strangers at all restricts circuits with Config.Allowed,
// as OpenSim does through its login service.
package region

// Package viewer is a synthetic Second Life viewer for tests and
// benchmarks: it logs in with UseCircuitCode (no XML-RPC), completes the
// handshake, streams AgentUpdate, pings, acks, resends, asks for its
// throttle with the viewer's split, and measures what it receives with the
// circuit tracker the sidecar uses. Defaults follow the Second Life viewer
// (protocol.md §9.1–§9.2, §11.2): AckCollectTime 100 ms, a ping every 5 s
// (circuit_heartbeat_interval), reliable resends after max(1 s, 5 × RTT)
// with 3 retries (message.h LL_RELIABLE_TIMEOUT_FACTOR,
// LL_DEFAULT_RELIABLE_RETRIES), the classic 1,500 kbps throttle.
//
// # Child circuits
//
// With Config.Children the viewer also holds a child circuit to each
// neighbour region, from its one socket, opened once the root circuit is
// complete, as a viewer does on EnableSimulator (child.go): UseCircuitCode,
// RegionHandshakeReply, acks, pings and resends, but no
// CompleteAgentMovement, AgentUpdate or AgentThrottle. A neighbour region
// (opensim/region, Config.Child) completes the circuit on the
// RegionHandshakeReply and throttles it at the root's throttle times
// OpenSim's distance factor. The Report gives each child circuit's
// figures and the total over all circuits.
//
// # Stress mode
//
// After the study of MMORPG server I/O that issue #15 follows (Registered
// I/O against IOCP): every viewer moves once a second and the region
// (opensim/region, stress mode) sends each movement to the avatars within
// its view distance; each viewer times the echo of its own movement.
// RunStress runs one step and measures, over a window that leaves out a
// warm-up of 3 s (the login storm): the mean and 99th-percentile echo
// delay, the mean neighbours per movement, and, from the region's
// Prometheus metrics, the datagrams per second in and out at the region
// and its CPU seconds; the viewers' own CPU seconds come from getrusage.
// Region and viewers run as two processes, so each figure is one side's.
//
// Density: in one 256 m region with a fixed view the neighbours per move
// grow with the number of viewers, so the work grows as N². The constant
// density mode spreads each step's viewers over a larger square instead
// (WorldForNeighbours), sized for a chosen mean of neighbours per move,
// border included; the region's grid is sparse, so a larger world costs
// it nothing. A larger area was chosen over more regions in one process:
// the region's per-client work (scheduler, acks, pings) is the same
// either way, and one socket keeps the measurement about one endpoint.
//
// Stress viewers run on one event loop per CPU (fleet_linux.go) with one
// 10 ms tick that does each viewer's pings, acks and resends every 50 ms
// and sends viewer i's movement in slot i mod 100 of each second, so the
// movements arrive evenly as independent clients' would. How a loop
// reaches the network is the fleet (StressOptions.Fleet):
//
//   - shared (the default where it works; sharedfleet_linux.go): all of
//     127.0.0.0/8 is local on Linux, so viewer i has an address of its
//     own, 127.(1+i/64000).(i/250 mod 256).(1+i mod 250), and its loop's
//     port, and each loop serves all its viewers from one UDP socket bound
//     to 0.0.0.0:port with IP_PKTINFO (ip(7)): a datagram's destination
//     says which viewer it is for, and each datagram sent names its
//     viewer's address as the source. The region still sees one endpoint
//     per viewer. The kernel queues everything on one socket, so a burst
//     costs one wake-up rather than one per viewer, and the loop reads 64
//     datagrams per recvmmsg and sends all a turn wrote in one sendmmsg.
//     It costs the viewers and the region less CPU than a socket per
//     viewer (docs/testbed.md, stress mode): the region's sends were each
//     waking a viewer's socket. A probe datagram between two
//     fleet addresses checks, before each step, that the kernel takes the
//     source address and reports the destination.
//   - per-viewer: a socket each, watched by one epoll set per loop (Go's
//     poller watches the set), a datagram read per ready socket. Used
//     when the region is not on IPv4 loopback or the probe fails (auto
//     says why), and on request. Elsewhere than Linux each viewer runs on
//     its own goroutines (Run), which at thousands of viewers spends more
//     on goroutine wake-ups than on datagrams.
//
// 250 fleet viewers share each /24, the prefix by which the region's
// admission control budgets new circuits, where a per-viewer fleet on
// 127.0.0.1 is one prefix; `make bench-sim` raises the sim's burst and
// pending cap above any step's viewers, so neither fleet is refused.
package viewer

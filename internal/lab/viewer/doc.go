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
// Stress viewers run on one event loop per CPU (fleet_linux.go): an epoll
// set of their sockets, watched by Go's poller, and one 10 ms tick that
// does each viewer's pings, acks and resends every 50 ms and sends viewer
// i's movement in slot i mod 100 of each second, so the movements arrive
// evenly as independent clients' would. Elsewhere each viewer runs on its
// own goroutines (Run), which at thousands of viewers spends more on
// goroutine wake-ups than on datagrams.
package viewer

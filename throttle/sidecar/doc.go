// Package sidecar runs fairgrid's control loop (package throttle) as a
// program: the application layer of the sidecar daemon (fairgrid run)
// and of the SOCKS 5 proxy (package throttle/proxy), beside the control
// core, which measures and decides and knows nothing of sockets,
// Prometheus or files.
//
// Sidecar is the loop with its inputs and outputs, the one piece every
// such front-end runs: a Source of timestamped datagrams (a live capture,
// the link emulator's tap, a SOCKS 5 proxy's relay), a throttle.Sender
// (RawSender: raw sockets as the viewer; the emulator; the proxy's
// socket), and Run, which runs the source, the loop's ticks, the metrics
// server and reloads as one group.Group: the first to fail stops the
// rest, and Run returns once all have stopped. A front-end that relays
// the traffic itself pushes what it relays into a PushSource, and asks
// Request for the request in force to rewrite the viewer's own
// AgentThrottle in flight. A failed capture is reopened every
// DefaultReopenEvery.
//
// # Reloads
//
// A SIGHUP arrives as a value on Config.Reloads, and the sidecar runs the
// Reloader, a Running: the reload state machine beside
// throttle.Loop.Reconfigure, which reads the settings anew, keeps what
// needs a restart, hands the loop its part and only then puts in force
// what lives beside the loop, all or nothing.
//
// # Metrics
//
// Collector exports the loop's state to Prometheus, built at scrape time
// from a snapshot, on a registry the caller owns.
package sidecar

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
// Daemon is the loop of a front-end that reads the configuration file
// (run, proxy) with what lives beside it: the log level, the Collector,
// and the settings in force. Live is fairgrid run: NewLive acquires the
// raw sockets (or a DryRunSender, which logs what it would send) and the
// capture, Run serves LiveGroup — the sidecar's members and WarnIfSilent,
// which says once when a capture sees no simulator traffic and which
// interfaces carry it — and Close releases, also when Run never ran.
//
// # Reloads
//
// Reloads is the one reload mechanism of run, proxy and the gateway: each
// SIGHUP (NotifyReloads) arrives as a value on its channel, and it
// applies a Reloader, logs a refusal and counts both outcomes, exported as
// fairgrid_config_reloads_total{result}. The daemons' Reloader is a
// Running: the reload state machine beside throttle.Loop.Reconfigure,
// which reads the settings anew, keeps what needs a restart, hands the
// loop its part and only then puts in force what lives beside the loop,
// all or nothing. The gateway's is a ReloadFunc around its Reconfigure.
//
// # Metrics
//
// Collector exports the loop's state to Prometheus, built at scrape time
// from a snapshot, on a registry the caller owns (Registry adds the
// process's own collectors); ReloadCollector exports a Reloads' counts
// beside another front-end's collector.
package sidecar

// Package gatewaylab is `fairgrid lab gateway`: a view of the fairness
// rig (internal/lab/fairness) at the demo's link, with a stock viewer
// reaching the region through fairgrid's gateway (package
// opensim/gateway) beside the same stock viewer reaching the region
// directly, and, as a further arm, through the gateway with fairgrid's
// sidecar at the viewer too; each arm a cell of the rig on its own copy
// of the link, all run at once.
//
// # The rig
//
// Each arm is one cell of fairness.Run with a product seat
// (internal/lab/demand's Seat): a shared drop-tail bottleneck
// (internal/lab/link), by default the demo's link (1 Mbit/s, 50 ms one
// way, a 100-datagram buffer each way, 1 % random loss towards the
// viewer; internal/lab/demo.DefaultLink), carrying a bulk CUBIC download
// of gVisor's userspace TCP (internal/lab/tcpflow), which starts once the
// viewer has logged in, and the viewer's LLUDP circuit. The viewer is the
// lab's stock viewer (internal/lab/viewer): it asks for 1,500 kbit/s
// (Config.Throttle, in place of the rig's SeatAsks) and follows the stock
// ±10 % rule; nothing of fairgrid runs at it. The region is `fairgrid
// sim`'s (opensim/region), with OpenSim's non-lending category buckets.
//
//	stock:           viewer ⇄ relay ⇄ [bottleneck] ⇄ region
//	gateway:         viewer ⇄ relay ⇄ [bottleneck] ⇄ gateway ⇄ region
//	gateway+sidecar: as gateway, and the relay's tap feeds a sidecar.Sidecar
//	                 whose AgentThrottle crosses the bottleneck as the viewer's
//
// The gateway sits where an operator puts it, at the region's public
// address: on the server's side of the bottleneck, so it measures the
// viewer's loss and round trip across the link (its acks and pings) and
// schedules what the region sends before it enters the link's queue.
//
// # What is reported
//
// For each arm, over the measured part of the run (after the warm-up),
// from the rig's Result: the download's rate on the wire and its share of
// what the two received, the viewer's received rate on the wire, and its
// datagrams' queueing delay in the bottleneck's FIFO (mean and 95th
// percentile). For the gateway arms also the gateway's own view of the
// circuit, read from the seat's gateway as the run goes: its queueing
// delay (the scheduler's, mean by channel), its fair rate, loss event
// rate and RTT, how often it re-asserted the rate to the region, and the
// circuit once a second (the request it saw, its fair rate, the rate in
// force, and how much that moved: the client side's arm shows whether the
// two ends fight). TCP-fair means one share: beside one bulk download,
// the viewer's bytes/s equal to the download's, within 0.8–1.25.
//
// Runs are real time: on a loaded machine the figures move, and the
// result says how long each arm actually ran.
package gatewaylab

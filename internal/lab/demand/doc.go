// Package demand runs a viewer against a region that has less to say than
// the link carries, through each of fairgrid's front-ends, and measures
// what the viewer receives: issue 33's check that fairgrid never makes a
// viewer slower when the link has room.
//
// The region is `fairgrid sim`'s, with OpenSim 0.9.2.2's per-category
// token buckets that do not lend to each other (opensim.Config.
// ChannelBuckets; protocol.md §8.4) and one of its application-limited
// workloads (region.Terrain, Objects, Avatars, Textures), whose demand
// region.Demand states. The path is the lab's link emulator (loss and
// delay each way). The viewer is the lab's LLUDP viewer, asking for the
// classic 1,500 kbps and following the stock ±10 % rule. The front-ends:
//
//   - Stock: no fairgrid, the baseline;
//   - Sidecar: `fairgrid run`'s loop on the viewer's datagrams as its host
//     sees them, its AgentThrottles sent from the viewer's address;
//   - Proxy: the viewer's UDP through `fairgrid proxy`'s SOCKS 5 relay,
//     which rewrites the viewer's AgentThrottles and sends its own;
//   - Gateway: a stock viewer behind `fairgrid gateway` at the region's
//     address, which schedules the region's datagrams and asserts its own
//     rate towards the region;
//   - GatewaySidecar: both, the gateway in front of the region and the
//     sidecar's loop on the viewer's host.
//
// A Seat is the viewer's side of one run (the region and its
// neighbours, the front-end, the links, the viewer) as one member of a
// group.Group: Run puts it on its own link, internal/lab/fairness on
// the bottleneck of each cell of its grid (`fairgrid lab fairness
// --seats`).
//
// Each is the product's own code (throttle.Loop, sidecar.Sidecar,
// throttle/proxy, opensim/gateway) over real LLUDP on loopback, in real
// time.
package demand

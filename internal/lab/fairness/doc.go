// Package fairness measures fairgrid's promise — beside a TCP flow on a
// shared bottleneck, the viewer gets 0.8–1.25× that flow's bytes/s — over
// a grid of links, and is what `fairgrid lab fairness` and its make test
// subset run.
//
// # The rig
//
// Run puts, on one link.Bottleneck, bulk TCP downloads (gVisor's
// userspace Reno or CUBIC through internal/lab/tcpflow, or Linux's reno,
// cubic or bbr through internal/lab/kerneltcp as root) and one or more
// viewers. A viewer here is its region's sender and its host's
// measurement, reduced to what the fairness question needs: the region
// sends datagrams with sequence numbers as fast as the throttle allows
// (saturating demand: it can always send more than the link, so the
// controller, not the region, sets the rate), in jittered 10 ms rounds as
// OpenSim's token buckets drip, with payloads drawn from opensim/region's Flying
// mix (80, 1,000 and 1,200 bytes; mean about 820) and 28 bytes of IPv4
// and UDP on the wire. At the viewer's host a sequence gap is a loss once
// three later datagrams have arrived (NDUPACK, RFC 5348 §5.1), with the
// lost datagrams' times interpolated; a ping every PingEvery crosses both
// directions of the bottleneck (so the RTT has the queueing delay in it);
// and every Interval the controller — built by throttle.Config's
// NewController, as the sidecar builds it — decides, and its request
// crosses the uplink to the region, which applies it when it arrives.
// What the rig leaves out, on purpose, is LLUDP itself (reliable resends,
// acks, OpenSim's per-category buckets, the 50-unacked stall): those are
// internal/lab/scenario's, which runs the real region, viewer and
// sidecar, and they would make the region, not the controller, the limit.
// Against a region without the stall (Cell.Region demand.FairgridRegion)
// the sidecar's seat below gives the same rows as this rig on the same
// cells (docs/results/seats-bare.md), at about 60 % of the CPU: the rig
// stays for the controller's own question.
//
// # The product's seats
//
// A cell's Product puts what users run in the viewer's seat instead:
// internal/lab/demand's Seat, the product's own code (throttle.Loop and
// its Sidecar, throttle/proxy's SOCKS 5 relay, opensim/gateway, both of
// the last two, or none: stock) over real LLUDP, against a region of
// `fairgrid sim` with OpenSim 0.9.2.2's non-lending category buckets and
// its 50-unacked stall (or, with Cell.Region demand.FairgridRegion,
// fairgrid's own scheduler, whose idle categories lend, and no stall:
// the region's throttle alone sets its rate), the lab viewer with its acks, pings and resends
// asking 5,120 kbit/s (SeatAsks), loss and RTT measured by
// throttle/circuit. Its circuits (the root's and Cell.Neighbours'
// children's) cross the cell's bottleneck as flows "lludp VIEWER down",
// their sum the seat's share on the wire. The region's demand saturates
// (flying) unless Cell.Demand names an application-limited workload;
// Seats adds one such row per seat at LimitedCell. The cell's gVisor TCP
// flows start seatLogin in, so that the viewer logs in on a quiet link.
//
// Everything runs on the real clock: gVisor's TCP cannot run on virtual
// time (tcpflow's doc says why), so a cell costs its warm-up plus its
// duration in wall time, and many cells run at once. Results are noisy on
// a loaded machine: seeds make the links' losses, the stacks' choices and
// the datagram sizes repeatable, not the goroutines' timing.
//
// # What is measured
//
// A run also reports how much less than its throttle allowed the region
// sent (SenderShortfall): on a loaded machine the sender wakes late, and a
// run that was not saturating says nothing of the controller.
//
// Each run reports, over the part after the warm-up, each viewer's and
// each TCP flow's bits/s on the wire as the bottleneck delivered them, the
// controller's loss event rate (per 1,460-byte segment for the virtual
// TCP, per packet for the others), the TCP data's queueing delay, and the
// per-second series of the whole run (bytes and drops at the bottleneck,
// and a gVisor TCP sender's window and RTT), with the first viewer's
// controller state at every decision (Trace): what the ratio comes from.
// TCPPEquiv inverts the Mathis rate
// at the TCP flows' rate and RTT: the loss event rate a Reno flow of full
// segments would need for the rate TCP got, to set beside the viewer's.
// A reference cell (Cell.Reference) puts a bulk TCP download in the
// viewer's seat instead: the control, one TCP flow's share beside
// another's on the same rig, the scale against which a controller's
// misses are read; its rows are named tcp:KIND.
// A Row folds a cell's seeds into the fields of issue #20's grid; Grid
// lists the cells (the centre, each axis varied alone, or the whole cross
// product); WriteMarkdown and WriteJSON print them, and
// internal/audit/render's WriteSharesHTML draws them.
//
// Measured figures are in docs/fairness.md, generated by the command.
package fairness

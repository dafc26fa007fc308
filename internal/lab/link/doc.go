// Package link emulates a network link between viewers (and other
// clients) and a simulator (and other servers), so that loss, delay and a
// shared queue are reproducible on one machine without root or kernel
// support (this project's kernels have no netem, and their qdiscs keep GSO
// super-packets: a pfifo limit 20 held about 12 KB per entry with offloads
// off, so a kernel queue in packets is not the one the literature means).
//
// # Pipe: one direction, no clock
//
// Pipe is one direction: a drop-tail FIFO ahead of a bottleneck of fixed
// rate, a fixed one-way delay, and random (Bernoulli) or bursty
// (two-state Gilbert–Elliott, same mean rate) loss before the queue. The
// FIFO's limit is in datagrams (the seed study's uplink buffers of 20 and
// 200 packets, the access points' 37 to 266) or in bytes, or both; the
// datagram being serialised counts towards it. A packet of s bytes
// arriving at t leaves the bottleneck at max(t, previous departure) +
// s/rate and reaches the far end Delay later; that is all the model there
// is, and it is exact in integer nanoseconds.
//
// It decides each datagram's fate from its arrival time and size alone,
// without a clock, so a seeded Pipe is deterministic and testable on
// virtual time. PipeConfig.Validate refuses every value the pipe would
// otherwise have to reinterpret (a NaN or sub-datagram burst length, a
// loss outside [0, 1]); a loss of 1 drops everything, bursty or not.
//
// A Pipe keeps statistics per Flow label: arrivals, deliveries, drops by
// cause, the packets queued and on the delay line at a given time, and the
// distribution of each forwarded packet's queueing delay in a bounded
// histogram (DelayHistogram: mean exact, quantiles within 1.6 %). Every
// packet that arrived is in exactly one of delivered, dropped at random,
// dropped by the full queue, queued, or in flight (FlowStats.Conserved).
//
// # Bottleneck: a shared link for any packets
//
// Bottleneck joins a client side and a server side through one Pipe per
// direction that every flow shares: the Relay's LLUDP datagrams, gVisor's
// userspace TCP (internal/lab/tcpflow), Linux TCP read from TUN devices
// (internal/lab/kerneltcp). Its packet API is deliberately plain:
//
//	b, _ := link.NewBottleneck(link.BottleneckConfig{Up: up, Down: down, Seed: 1}, log)
//	f, _ := b.AddFlow(link.FlowConfig{Name: "cubic upload data", Dir: link.Up,
//		Deliver: func(pkt []byte) { tunB.Write(pkt) }})
//	var g group.Group // its first error ends every member's run
//	g.Add(b.Run, nil)
//	// … in another member: b.Send(f, pkt), pkt a whole IPv4 packet read from TUN A; b owns it now
//	err := g.Run(ctx)
//
// A packet is bytes and a flow label; the bottleneck never parses it. Its
// size on the wire is its length plus the flow's Overhead: 0 for IP
// packets, 28 for UDP payloads such as the Relay's, so an LLUDP datagram
// and a TCP segment cost what they would on an IPv4 link. Each flow names
// its direction and its Deliver; flows may share a Deliver (one per TUN
// device or stack), and the owner decides what a flow is — one per TCP
// connection and direction gives per-connection statistics, one per
// device gives per-host ones.
//
// Send stamps the arrival with time.Now and decides the packet's fate at
// once; Run waits (with a timer) for each forwarded packet's delivery time
// and calls Deliver then, both directions merged in time order. Those are
// the only clock reads, so inside a testing/synctest bubble the bottleneck
// runs on the bubble's virtual time; outside, deliveries are late by the
// Go scheduler's timer slack (tens of microseconds on an idle machine)
// while the decisions and statistics stay exact. A Tap sees every
// arrival, drop and delivery (at the decided time); PcapWriter.Tap writes
// the events of one kind to a pcap capture of raw IP frames, giving the
// flows that carry UDP payloads (FlowConfig.UDP, as the Relay's do) the
// IPv4 and UDP headers they would have had.
//
// # Relay
//
// Relay puts two pipes in a UDP relay: viewers send to its listening
// address, and each viewer endpoint reaches the simulator from a socket of
// its own, so the simulator sees one client per viewer. A tap sees traffic
// as the viewer's host would, and InjectUp sends as a viewer: together they
// let the sidecar run its demo without raw sockets or capture privileges.
// With Config.Shared, the relay's datagrams cross a Bottleneck instead of
// its own pipes, as flows "lludp VIEWER up" and "lludp VIEWER down", so a
// viewer and TCP flows share one queue.
package link

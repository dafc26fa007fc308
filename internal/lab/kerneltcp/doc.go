// Package kerneltcp runs Linux's own TCP (reno, cubic, bbr) through the
// lab's userspace bottleneck (link.Bottleneck), as root: the real kernel
// congestion controls meet the same drop-tail queue as the viewer's
// datagrams and gVisor's userspace flows.
//
// # Model
//
// A Lab is two network namespaces, client and server (NamePrefix, the
// creating pid and a random part: fglab-<pid>-<hex>-c and -s), each with
// one TUN device. The devices are each other's point-to-point peer
// (ClientAddr, ServerAddr), so the kernel routes everything for the other
// side into its TUN device and nothing else. The forwarder (Run) reads
// each IPv4 packet from one device, labels it with its flow, sends it into
// the bottleneck, and the bottleneck's delivery writes it into the other
// device at the time the pipe decided:
//
//	client ns: TCP ─► tun ─► read ─► Bottleneck.Send ─► (queue, rate, delay, loss)
//	                                                        │ Deliver at its time
//	server ns: TCP ◄─ tun ◄─ write ◄────────────────────────┘   (and back the same way)
//
// The bottleneck is the only queue on the path. A TUN device opened
// without IFF_VNET_HDR (linux/if_tun.h) cannot take GSO packets, so the
// kernel segments TCP's super-packets in software before the device: the
// device advertises a gso_max_size of 64 KiB, yet every packet the
// forwarder reads is at most the MTU (TestFlowFillsBottleneck checks it),
// so the bottleneck counts wire-sized packets as a router would, and no
// offloads need turning off. The device gets no qdisc (tc noqueue): the
// default pfifo_fast would hold up to txqueuelen (500) of those
// super-packets ahead of the bottleneck (the issue's "a pfifo limit 20
// held about 12 KB per entry"); with it, one BBR run on the reference
// bottleneck ended with a smoothed RTT of 166 ms against 81 ms without,
// while the bottleneck's mean queueing delay was 59 ms against 31 ms: the
// difference waited in the kernel. What the forwarder has not
// read yet waits in the device's ring, whose overflow the kernel counts
// (DeviceCounters.TxDropped, zero in the tests).
//
// A flow (Lab.Flow) is one bulk TCP connection: a listener in the server
// namespace, a connection from the client namespace, the sender writing
// as fast as the socket takes data. Its congestion control is set per
// socket with the TCP_CONGESTION socket option (tcp(7)), so the system
// default does not matter. These kernels have reno (RFC 5681), cubic
// (RFC 9438) and bbr (draft-cardwell-iccrg-bbr-congestion-control, v1 in
// Linux) but no vegas, so bbr stands for the delay-based family. A flow is
// two bottleneck flows, "<name> data" and "<name> acks", told apart by
// the server's port (the kernel picks it, so flows never collide); packets
// of no running flow go through "<lab> other up" and "down".
//
// # Namespaces from Go
//
// Sockets and TUN devices belong to the network namespace of the thread
// that creates them and keep it. So the lab creates each on a goroutine
// locked to an OS thread that has entered the namespace (setns(2)), and
// lets that goroutine exit still locked, which makes the runtime throw the
// thread away instead of reusing it in the wrong namespace. Reads, writes
// and the bulk loops then run on any goroutine. This keeps everything in
// one process, so a failed test leaves no helper process behind, and the
// flow's counters need no inter-process plumbing (re-executing the test
// binary inside `ip netns exec` was the alternative).
//
// Namespaces, addresses, routes and the qdisc are configured by running
// iproute2's ip and tc rather than by netlink messages of our own: the
// tools are on every machine with network namespaces, their commands are
// the ones a reader types to reproduce the lab, and x/sys/unix has the
// rtnetlink constants but no message builders.
//
// # Cleanup
//
// Close closes the devices (a TUN device without TUNSETPERSIST vanishes
// with its last file descriptor) and deletes the namespaces; it runs
// after a failed New too. Tests register it with t.Cleanup, which also
// runs when a test panics (TestCleanupAfterPanic checks it in a child
// process). A run that is killed leaves its namespaces mounted in
// /run/netns; the next New deletes those whose creating process is gone
// (SweepStale).
//
// # Measuring
//
// Lab.Flow returns the receiving application's goodput over the measured
// time (after a warm-up), the bytes read in each second, the sender's
// TCP_INFO (retransmissions, smoothed RTT, congestion window), and the
// bottleneck's statistics of the flow's data and acknowledgement
// directions (throughput in IP bytes, queueing delay distribution, drops
// by cause). The forwarder keeps its own counts (Stats) and the kernel its
// device counters (Lab.DeviceCounters): after Lab.Drain the three agree
// packet for packet (TestPacketConservation).
//
// # Real time
//
// The lab runs on the wall clock: a packet reaches the bottleneck when the
// forwarder reads it. On a busy machine the forwarder's threads wait for a
// CPU behind other processes, and what the kernel sent meanwhile arrives
// at the bottleneck in one burst. With the machine's two cores under a
// load average of 11, 7 of 12 reference flows (four runs of the three
// congestion controls) stayed below 85 % of the rate, down to 2 % (a
// second with no byte delivered, a smoothed RTT of 3 s over a 40 ms path,
// 327 drops from one burst); under SCHED_RR all 33 flows of the same
// series and load reached 94–97 %. SetRealtime puts the
// process's threads under that policy; the tests do it in TestMain, and
// so should a command that runs labs as root.
//
// It is Linux-only and needs root: Supported says why not elsewhere.
package kerneltcp

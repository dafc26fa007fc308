// Package capture reads UDP datagrams from capture files and live
// interfaces, in pure Go, without cgo or libpcap: its own reader parses pcap
// and pcapng files and streams (gzip-compressed too), and gopacket's
// afpacket captures on Linux through an AF_PACKET socket. It knows nothing
// of LLUDP; package throttle/circuit measures the circuits in what it
// returns.
//
// # Files
//
// A file is read in 1 MiB blocks and its records are parsed in place, so
// a datagram costs no system call, no copy and no allocation. pcap in
// either byte order with micro- or nanosecond timestamps is read, and
// pcapng with several sections and interfaces (each with its link type,
// if_tsresol and if_tsoffset), Enhanced, obsolete and Simple Packet Blocks
// (a Simple Packet Block has no time: it gets the time of the packet
// before it). Packets of a pcapng interface whose link type capture does
// not decode are counted as not IP.
//
// # Frames
//
// Reader.Next parses each frame at fixed offsets — Ethernet (with 802.1Q
// and 802.1ad tags), Linux cooked capture v1 and v2, raw IPv4 and IPv6, BSD
// and OpenBSD loopback — down to the UDP payload, and returns it as a
// Datagram. IP fragments are counted and skipped, never reassembled
// (LLUDP senders keep datagrams under the MTU, protocol.md §2.6); other
// protocols and ports outside the configured ranges are counted by reason
// in Stats.
//
// # Ownership
//
// Next does not copy: a Datagram's Payload aliases the reader's buffer and
// is valid only until the next call to Next. Keep a copy to hold it longer.
// A Reader is not safe for concurrent use; Close may be called from another
// goroutine to end a blocked live read.
//
// # Live capture
//
// OpenLive reads a TPACKET_V3 ring that the kernel fills and hands over a
// block at a time (full, or 25 ms after it opened), so a daemon wakes a few
// times a second instead of once per datagram; timestamps are the kernel's,
// so the batching delays actions but changes no measurement. It installs a
// classic BPF filter in the kernel that passes only UDP
// over IPv4 or IPv6 on the simulator ports, so the socket carries nothing
// else. On a loopback interface every datagram is seen twice, once going
// out and once coming in; the filter drops the outgoing copy
// (SKF_AD_PKTTYPE = PACKET_OUTGOING). Stats.KernelDrops reports what the
// kernel dropped because the reader fell behind: the gaps those leave are not
// network loss (protocol.md §12.2 rule 8).
//
// # Broken captures
//
// A file cut short inside a record, or with a record whose length is
// impossible (beyond 16 MiB or the snapshot length, below a block's least,
// not a multiple of 4 in pcapng, larger than its block) or whose pcapng
// trailing length disagrees with its leading one, yields everything before
// the break and then a *BrokenError naming the record and its byte offset:
// "record 7,381 at byte 1,000,030: …". An unknown link type is
// ErrUnknownLinkType.
package capture

// Package tcm is the lab's TCM-like multiplexer (Tunnelling, Compressing
// and Multiplexing, as Saldana et al. propose for game traffic; the tcmtf
// list's subject, ../shared/seeds/001_e9d8247e49fbaed2.txt): the packets
// of a set of TCP flows, both ways, wait for the end of a round of period
// T (the sawtooth multiplexing delay, 0 to T), their TCP/IP headers are
// compressed against a per-flow context, and a round's packets cross a
// shared link.Bottleneck in bundles; the far end takes the bundles apart,
// rebuilds the native packets exactly and hands them on. The lab's
// multiplexing scenario runs it as a branch of its own ("ours": the
// document's set-up is the sawtooth delay alone).
//
// # Bundles
//
// A bundle is a tunnel packet of at most an Ethernet MTU (1,500 bytes,
// RFC 894): IPv4 and UDP headers (28 bytes, counted by the bottleneck as
// the flow's overhead; TCM's L2TPv3-over-IP and PPP would be 3 bytes
// shorter), then each packet behind a 2-byte length (Simplemux's
// separator is one to three bytes, PPPMux's one or two plus a protocol
// byte, RFC 3153).
//
// # Header compression
//
// The kinds follow RFC 1144 (Van Jacobson's TCP/IP header compression,
// which IPHC, RFC 2507, builds on for TCP), told apart by a packet's first
// byte: a native IPv4 packet, UNCOMPRESSED_TCP (the native packet with its
// protocol byte replaced by the context's number, establishing the
// context) and COMPRESSED_TCP. The compressed header carries the TCP
// checksum and the low 16 bits of the sequence, acknowledgement and
// timestamp numbers (decoded against the far end's context as ROHC's
// W-LSB does, RFC 3095 §4.5.1), so that a lost bundle costs only its own
// packets: a gVisor segment's 52-byte header becomes 14 (RFC 2507 reaches
// 4–7 for typical TCP by omitting what did not change, which a lost bundle
// desynchronises). A flow's first packet, SYN/FIN/RST, a resend and a
// change in a constant field go in full. The checksums are
// capture/ipsum's.
package tcm

// Package lludp decodes and encodes LLUDP, the UDP message protocol between
// Second Life / OpenSim viewers and region simulators. It imports only the
// standard library and never reads the clock.
//
// # Wire format
//
// Facts and sources are in ../shared/docs/protocol.md (§2–§6); in short:
//
//	offset  size       content
//	0       1          flags: 0x80 zero-coded, 0x40 reliable, 0x20 resent, 0x10 acks appended
//	1       4          sequence number, big-endian
//	5       1          extra-header length (0 from every known sender)
//	6       1, 2 or 4  message number: High NN | Medium FF NN | Low FF FF NNNN (BE) | Fixed FF FF FF Fx
//	…       …          body: blocks and fields as the template says, little-endian
//	end−4n−1 4n+1      appended acks: n big-endian u32, then the count n
//
// Zero-coding covers everything from offset 6 up to the appended acks,
// message number included: a run of k zeros is 00 k. Receivers decide by the
// flag, never by the template (OpenSim zero-codes messages the template calls
// Unencoded). Decoding follows the viewer's zeroCodeExpand, edge cases
// included (00 00 c is 256+c zeros; a trailing 00 is one zero), and stops
// with ErrZeroCodeOverflow past MaxPacketSize, so hostile input cannot make
// it allocate or run without bound.
//
// Byte orders: the header's sequence number and the appended acks are
// big-endian; body fields are little-endian except IPPORT (big-endian) and
// IPADDR (network order). The IDs inside a PacketAck body are therefore
// little-endian, while appended acks are big-endian.
//
// # Template
//
// Message layouts come from message_template.msg. Builtin returns the
// current official template (483 messages), generated into template_gen.go
// by `go generate ./lludp` from ../shared/testdata/real/templates; the
// template content is Linden Lab's, shipped by the viewer under LGPL-2.1.
// ParseTemplate loads another at run time, such as the 2007 template for old
// captures. A missing trailing Variable block decodes as zero instances and
// extra trailing bytes are ignored, as in the viewer.
//
// # Decoding
//
// ParseHeader reads flags, sequence, acks and the message number without
// touching the body or allocating: the per-datagram path of circuit
// tracking. Packet.DecodeFromBytes decodes everything into a reused view
// (Count, Field) without allocating once warm, following gopacket's
// contract: it may alias the input. Packet.DecodeValues decodes every field
// into reused typed Values, and Packet.AppendJSON and AppendText render
// straight from the datagram's bytes; neither boxes a value or allocates
// once warm. Packet.Decode copies the result into boxed Go values (Decoded)
// for tools that keep or re-encode them. Packet.Unmarshal fills a typed
// struct (messages.go) for the messages fairgrid handles on hot paths.
//
// Errors are *DecodeError values naming the part that failed and its offset
// in the expanded datagram, wrapping sentinels (ErrTruncated,
// ErrUnknownMessage, ErrZeroCodeOverflow, ErrAckTrailer, ErrVariableLength,
// ErrMissingBlock) for errors.Is and for counting by reason.
//
// # Encoding
//
// AppendMessage writes a typed message and AppendPacket any payload. With
// FlagZeroCoded the payload is coded only when that makes it strictly
// shorter, as the viewer does; acks go after the coding, big-endian.
//
// # Categories
//
// Message.Category is the OpenSim throttle category the simulator sends a
// message through (category.go has the one table, from OpenSim's
// LLClientView.cs): the seven AgentThrottle categories plus Unthrottled.
// ChannelOf refines them into the five channels of the St Andrews server
// design (channel.go): the categories' Task less its avatar-state messages
// (OpenSim's former State sub-category, protocol.md §8.1), which go to
// ChannelAvatar. The channels are one table beside the categories, so the
// scheduler (package opensim) and the capture's tracker (package circuit)
// read them from one place and neither imports the other.
//
// # Datagrams and ports
//
// Datagram is a datagram with its endpoints and the time it was seen, the
// unit every source hands on (a capture file, a live ring, the proxy's
// relay, the test rigs). It lives here, not in package capture, so that
// the measurement and the rigs take datagrams without the capture stack.
// Ports and SimPorts (9000–13100) say which UDP ports are a simulator's.
package lludp

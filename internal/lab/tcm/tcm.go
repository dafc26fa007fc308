package tcm

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fairgrid/fairgrid/capture/ipsum"
	"github.com/fairgrid/fairgrid/internal/lab/link"
)

// The multiplexer's bundles, as TCM and Simplemux (Saldana et al.'s
// tunnelling, compressing and multiplexing of game traffic) carry them: a
// tunnel packet of at most an Ethernet MTU (RFC 894) whose payload is the
// multiplexed packets, each behind a separator giving its length.
const (
	// bundleMTU bounds a bundle on the wire, its tunnel headers included;
	// a round's packets that do not fit go in further bundles.
	bundleMTU = 1500
	// bundleTunnel is the tunnel's IPv4 and UDP headers (RFC 791, RFC
	// 768), counted by the bottleneck as a flow's Overhead. TCM tunnels
	// with L2TPv3 over IP and PPP instead (IPv4 20, L2TPv3 session ID 4,
	// RFC 3931 over IP, PPP protocol field 1 compressed, RFC 1661 §6.5:
	// 25 bytes, as we read the TCM papers): we keep UDP, which a capture
	// shows, at 3 bytes more per bundle (about 0.3 % of a 250 kbit/s
	// link at 30 bundles/s).
	bundleTunnel = 28
	// bundleSeparator is the length in front of each packet (Simplemux's
	// separator is one to three bytes; two cover an IP packet's length).
	// PPPMux's is one or two bytes of length, plus a protocol byte when
	// the kind changes (RFC 3153); ours carries the kind in the
	// packet's first byte instead (RFC 1144), so two bytes stand for
	// PPPMux's two or three.
	bundleSeparator = 2
)

// multiplexCase is one configuration: a bottleneck rate, N flows in each
// branch, and the multiplexing period T of the second branch; Published

const FlowName = "multiplexer"

// The tunnel's endpoints in a capture: the client and server hosts of
// tcpflow's nets, and a port of ours.
var (
	muxClient = netip.MustParseAddrPort("10.77.0.1:5777")
	muxServer = netip.MustParseAddrPort("10.77.0.2:5777")
)

// Multiplexer holds the packets of a set of flows, both ways, until the
// end of its current round of period T and then sends them across the
// shared bottleneck in bundles; at the far end it takes the bundles apart
// and hands each packet to its stack. A packet so waits between 0 and T
// (the sawtooth multiplexing delay), and a round's packets of all the
// flows share the bundles' queue slots and tunnel headers.
type Multiplexer struct {
	period  time.Duration
	shared  *link.Bottleneck
	receive func(dir link.Direction, packet []byte) // hands a packet to its stack
	bundles [2]link.Flow                            // by direction
	log     *slog.Logger

	mu          sync.Mutex // guards held, compressors, sub and sent
	held        [2][]byte  // by direction: the bundle being filled, separators and packets
	compressors [2]headerCompressor
	sub         []byte // the packet being bundled, compressed
	sent        [2]Stats

	rmu           sync.Mutex // guards decompressors, tossed and restored
	decompressors [2]headerDecompressor
	tossed        [2]uint64
	restored      [2]uint64 // bytes of the native packets rebuilt

	malformed atomic.Uint64
	reported  sync.Once
}

// Stats counts a direction's packets into the multiplexer:
// their native bytes and what they took in bundles (separators aside).
type Stats struct {
	// Packets went in, Compressed of them with a compressed header.
	Packets, Compressed uint64
	// NativeBytes is their bytes as they came, WireBytes what they took
	// in bundles.
	NativeBytes, WireBytes uint64
	// Tossed counts the compressed packets the far end could not rebuild
	// (their context's establishing packet lost) and threw away;
	// RestoredBytes the native packets' bytes it rebuilt.
	Tossed, RestoredBytes uint64
}

// Since is what was counted after earlier.
func (s Stats) Since(earlier Stats) Stats {
	return Stats{Packets: s.Packets - earlier.Packets, Compressed: s.Compressed - earlier.Compressed,
		NativeBytes: s.NativeBytes - earlier.NativeBytes, WireBytes: s.WireBytes - earlier.WireBytes, Tossed: s.Tossed - earlier.Tossed,
		RestoredBytes: s.RestoredBytes - earlier.RestoredBytes}
}

// Malformed is how many bundles or packets did not parse: ours, so each
// is a programming error a run should fail on.
func (m *Multiplexer) Malformed() uint64 { return m.malformed.Load() }

// Compression returns dir's counts so far.
func (m *Multiplexer) Compression(dir link.Direction) Stats {
	m.mu.Lock()
	s := m.sent[dir]
	m.mu.Unlock()
	m.rmu.Lock()
	s.Tossed, s.RestoredBytes = m.tossed[dir], m.restored[dir]
	m.rmu.Unlock()
	return s
}

// New registers the bundles' flows with shared; receive gets
// each packet at the far end (tcpflow.Net.Receive).
func New(shared *link.Bottleneck, period time.Duration, receive func(dir link.Direction, packet []byte), log *slog.Logger) (*Multiplexer, error) {
	if period <= 0 {
		return nil, fmt.Errorf("tcm: multiplexing period %v: want a positive one", period)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Multiplexer{period: period, shared: shared, receive: receive, log: log}
	for _, dir := range []link.Direction{link.Up, link.Down} {
		ends := link.UDPEndpoints{Src: muxClient, Dst: muxServer}
		if dir == link.Down {
			ends = link.UDPEndpoints{Src: muxServer, Dst: muxClient}
		}
		f, err := shared.AddFlow(link.FlowConfig{Name: FlowName + " " + dir.String(), Dir: dir, Overhead: bundleTunnel, UDP: ends,
			Deliver: func(bundle []byte) { m.unbundle(dir, bundle) }})
		if err != nil {
			return nil, fmt.Errorf("tcm: %w", err)
		}
		m.bundles[dir] = f
	}
	return m, nil
}

// Hold takes a packet going dir, compressed, into the round's bundle;
// when it would overflow the bundle, the bundle leaves first (a packet
// larger than a bundle goes alone).
func (m *Multiplexer) Hold(dir link.Direction, packet []byte) {
	m.mu.Lock()
	var compressed bool
	var err error
	m.sub, compressed, err = m.compressors[dir].compress(m.sub[:0], packet)
	if err != nil {
		// tcpflow's stacks send IPv4 only: a programming error, failing
		// the run.
		m.mu.Unlock()
		m.malformed.Add(1)
		m.reported.Do(func() { m.log.Error("multiplexer: a packet could not be bundled", "err", err) })
		return
	}
	s := &m.sent[dir]
	s.Packets++
	if compressed {
		s.Compressed++
	}
	s.NativeBytes += uint64(len(packet))
	s.WireBytes += uint64(len(m.sub))
	var full []byte
	if len(m.held[dir]) > 0 && bundleTunnel+len(m.held[dir])+bundleSeparator+len(m.sub) > bundleMTU {
		full, m.held[dir] = m.held[dir], nil
	}
	m.held[dir] = appendBundled(m.held[dir], m.sub)
	m.mu.Unlock()
	if full != nil {
		m.send(dir, full)
	}
}

// Run ends a round every period until ctx ends.
func (m *Multiplexer) Run(ctx context.Context) error {
	return Rounds(ctx, m.period, func() {
		for _, dir := range []link.Direction{link.Up, link.Down} {
			m.mu.Lock()
			bundle := m.held[dir]
			m.held[dir] = nil
			m.mu.Unlock()
			if bundle != nil {
				m.send(dir, bundle)
			}
		}
	})
}

// Rounds calls end at the end of every round of period, until ctx ends:
// the clock of a multiplexing delay, whose packets wait for their round's
// end (the sawtooth of 0 to period).
func Rounds(ctx context.Context, period time.Duration, end func()) error {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			end()
		}
	}
}

func (m *Multiplexer) send(dir link.Direction, bundle []byte) {
	if _, err := m.shared.Send(m.bundles[dir], bundle); err != nil {
		// Only a flow the bottleneck did not hand out fails.
		m.reported.Do(func() { m.log.Error("multiplexer: the bottleneck refused a bundle", "err", err) })
	}
}

// unbundle hands a bundle's packets, arrived across dir and rebuilt, to
// their stack.
func (m *Multiplexer) unbundle(dir link.Direction, bundle []byte) {
	subs, err := splitBundle(bundle)
	if err != nil {
		// Ours, so a programming error: counted, said once, and failing
		// the run.
		m.malformed.Add(1)
		m.reported.Do(func() { m.log.Error("multiplexer: a bundle did not parse", "err", err) })
		return
	}
	packets := make([][]byte, 0, len(subs))
	m.rmu.Lock()
	for _, sub := range subs {
		p, err := m.decompressors[dir].restore(sub)
		switch {
		case errors.Is(err, errNoContext) || errors.Is(err, errChecksum):
			m.tossed[dir]++
		case err != nil:
			m.malformed.Add(1)
			m.reported.Do(func() { m.log.Error("multiplexer: a packet in a bundle did not decompress", "err", err) })
		default:
			m.restored[dir] += uint64(len(p))
			packets = append(packets, p)
		}
	}
	m.rmu.Unlock()
	for _, p := range packets {
		m.receive(dir, p)
	}
}

// appendBundled appends packet to a bundle's payload behind its length.
func appendBundled(bundle, packet []byte) []byte {
	bundle = binary.BigEndian.AppendUint16(bundle, uint16(len(packet)))
	return append(bundle, packet...)
}

// Errors of splitBundle.
var (
	errBundleEmpty     = errors.New("empty bundle")
	errBundleTruncated = errors.New("bundle ends inside a packet")
	errBundleZero      = errors.New("zero-length packet in a bundle")
)

// splitBundle returns the packets of a bundle's payload, which alias it.
func splitBundle(bundle []byte) ([][]byte, error) {
	if len(bundle) == 0 {
		return nil, errBundleEmpty
	}
	var packets [][]byte
	for off := 0; off < len(bundle); {
		if len(bundle)-off < bundleSeparator {
			return nil, fmt.Errorf("%w: separator at byte %d", errBundleTruncated, off)
		}
		n := int(binary.BigEndian.Uint16(bundle[off:]))
		off += bundleSeparator
		if n == 0 {
			return nil, fmt.Errorf("%w: at byte %d", errBundleZero, off-bundleSeparator)
		}
		if len(bundle)-off < n {
			return nil, fmt.Errorf("%w: %d bytes announced at byte %d, %d left", errBundleTruncated, n, off-bundleSeparator, len(bundle)-off)
		}
		packets = append(packets, bundle[off:off+n:off+n])
		off += n
	}
	return packets, nil
}

// TCM's header compression, as the multiplexer does it before bundling
// and undoes after the bottleneck: each TCP/IP header becomes a few bytes
// against a per-flow context both ends hold, and the far end rebuilds the
// native packet exactly. The kinds follow RFC 1144 (Van Jacobson's TCP/IP
// header compression, which IPHC, RFC 2507, builds on for TCP), told apart
// by a packet's first byte as RFC 1144's SLIP framing has them (TYPE_IP,
// TYPE_UNCOMPRESSED_TCP, TYPE_COMPRESSED_TCP): 0x4_ a native IPv4 packet, 0x7_ UNCOMPRESSED_TCP (the native packet, its IP protocol
// byte replaced by the context's number, establishing the context), 0x8_
// and above COMPRESSED_TCP. The compressed header's fields are ours,
// chosen to survive lost bundles (the sequence, acknowledgement and
// timestamp numbers travel as their 16 low bits, decoded against the far
// end's context as ROHC's W-LSB does, RFC 3095 §4.5.1), so that a lost
// bundle costs its own packets and no more.
const (
	typeIP              = 0x40
	typeUncompressedTCP = 0x70
	typeCompressedTCP   = 0x80
	// compressedPSH, in a COMPRESSED_TCP packet's first byte, carries the
	// TCP PSH flag: the one flag gVisor's segments change within a
	// connection (any other change sends the header in full).
	compressedPSH = 0x01

	// compressedTCPHeader is our compressed header without TCP options:
	// kind (1), context number (1), the TCP checksum sent as is (2, as
	// RFC 1144, IPHC (RFC 2507) and ROHC-TCP (RFC 6846) all carry it: it
	// checks the rebuilt header end to end), and the low 16
	// bits of sequence and acknowledgement numbers and the window (2
	// each). compressedTSFields adds the timestamp option's two values'
	// low bits (RFC 7323 §3), which gVisor sends on every segment. So a
	// gVisor segment's 52-byte header (IPv4 20, TCP 20, options 12) costs
	// 14 bytes. That is more than the literature's figure for TCP: RFC
	// 2507's abstract gives 4-7 octets, checksum included, for "typical"
	// TCP headers, and TCM (Saldana et al., CCNC 2014; MTAP 2015)
	// compresses with IPHC or ROHC. We keep ours rather than
	// that figure because ours is what crosses our bottleneck and carries
	// everything the far end needs to rebuild every packet exactly even
	// after lost bundles (the RFCs' smallest forms omit fields that did
	// not change since the previous packet, which a lost bundle
	// desynchronises): a conservative saving of 38 of 52 bytes.
	compressedTCPHeader = 10
	compressedTSFields  = 4
	// lsbReach is how far (either way) a number may move from the context
	// and still travel as its low 16 bits: half the 16-bit window
	// (RFC 3095 §4.5.1's interpretation interval, centred), leaving
	// another 2^14 for the far end's context to lag behind by lost
	// packets. A larger move sends the header in full.
	lsbReach = 1 << 14
	// maxContexts: one byte numbers a direction's contexts (RFC 1144's
	// 8-bit connection number); later flows travel uncompressed.
	maxContexts = 256
)

// Offsets in an IPv4 header (RFC 791) and a TCP header (RFC 9293 §3.1).
const (
	ipTotalLength = 2
	ipProtocol    = 9
	ipChecksum    = 10
	ipSrc         = 12
	tcpSeq        = 4
	tcpAck        = 8
	tcpDataOffset = 12
	tcpFlags      = 13
	tcpWindow     = 14
	tcpChecksum   = 16
	protocolTCP   = 6
	flagFIN       = 0x01
	flagSYN       = 0x02
	flagRST       = 0x04
	flagPSH       = 0x08
	optionEnd     = 0
	optionNOP     = 1
	optionTS      = 8 // RFC 7323 §3: kind 8, length 10
)

// tcpPacket is a native IPv4 TCP packet's layout: where its parts start.
type tcpPacket struct {
	b      []byte
	tcp    int // the TCP header's offset
	header int // IP and TCP headers' length: the payload's offset
	ts     int // the timestamp option's offset in b, 0 if none
}

// parseTCP reads packet as an unfragmented IPv4 TCP packet whose lengths
// agree; ok is false for anything else (which travels native).
func parseTCP(packet []byte) (p tcpPacket, ok bool) {
	if len(packet) < 40 || packet[0]>>4 != 4 || packet[ipProtocol] != protocolTCP {
		return p, false
	}
	ihl := int(packet[0]&0x0f) * 4
	// More fragments, or an offset: a fragment has no TCP header of its own.
	if ihl < 20 || int(binary.BigEndian.Uint16(packet[ipTotalLength:])) != len(packet) || binary.BigEndian.Uint16(packet[6:])&0x3fff != 0 {
		return p, false
	}
	if len(packet) < ihl+20 {
		return p, false
	}
	doff := int(packet[ihl+tcpDataOffset]>>4) * 4
	if doff < 20 || len(packet) < ihl+doff {
		return p, false
	}
	p = tcpPacket{b: packet, tcp: ihl, header: ihl + doff}
	for off := ihl + 20; off < p.header; {
		kind := packet[off]
		if kind == optionEnd {
			break
		}
		if kind == optionNOP {
			off++
			continue
		}
		if off+1 >= p.header || packet[off+1] < 2 || off+int(packet[off+1]) > p.header {
			return p, false
		}
		if kind == optionTS && packet[off+1] == 10 && p.ts == 0 {
			p.ts = off
		}
		off += int(packet[off+1])
	}
	return p, true
}

func (p tcpPacket) u32(off int) uint32 { return binary.BigEndian.Uint32(p.b[off:]) }
func (p tcpPacket) seq() uint32        { return p.u32(p.tcp + tcpSeq) }
func (p tcpPacket) ack() uint32        { return p.u32(p.tcp + tcpAck) }
func (p tcpPacket) flags() byte        { return p.b[p.tcp+tcpFlags] }
func (p tcpPacket) payload() int       { return len(p.b) - p.header }

// tsVal and tsEcr are the timestamp option's values (0 without one).
func (p tcpPacket) tsVal() uint32 {
	if p.ts == 0 {
		return 0
	}
	return p.u32(p.ts + 2)
}

func (p tcpPacket) tsEcr() uint32 {
	if p.ts == 0 {
		return 0
	}
	return p.u32(p.ts + 6)
}

// dynamic reports whether byte i of a header travels in a compressed
// header (or is rebuilt: the IP length and checksum); every other byte
// must equal the context's.
func (p tcpPacket) dynamic(i int) bool {
	switch {
	case i == ipTotalLength || i == ipTotalLength+1 || i == ipChecksum || i == ipChecksum+1:
		return true
	case i >= p.tcp+tcpSeq && i < p.tcp+tcpDataOffset: // sequence and acknowledgement numbers
		return true
	case i >= p.tcp+tcpWindow && i < p.tcp+tcpChecksum+2: // window and checksum
		return true
	case p.ts != 0 && i >= p.ts+2 && i < p.ts+10:
		return true
	}
	return false
}

// tcpContext is what both ends know of a flow: its last header (whose
// other bytes are the flow's constants) and numbers.
type tcpContext struct {
	header             []byte
	layout             tcpPacket // header's, without b
	seq, ack, val, ecr uint32
	payload            int // the last packet's payload length: a resend repeats seq with one
	valid              bool
}

func (c *tcpContext) set(p tcpPacket) {
	c.header = append(c.header[:0], p.b[:p.header]...)
	c.layout = tcpPacket{tcp: p.tcp, header: p.header, ts: p.ts}
	c.seq, c.ack, c.val, c.ecr, c.payload, c.valid = p.seq(), p.ack(), p.tsVal(), p.tsEcr(), p.payload(), true
}

// near reports whether v can travel as its low 16 bits against ref.
func near(v, ref uint32) bool {
	d := int32(v - ref)
	return d > -lsbReach && d < lsbReach
}

// fromLow16 is the number whose low 16 bits are low nearest to ref.
func fromLow16(low uint16, ref uint32) uint32 {
	return ref + uint32(int32(int16(low-uint16(ref))))
}

// flowKey is a TCP flow's addresses and ports.
type flowKey [12]byte

func (p tcpPacket) key() flowKey {
	var k flowKey
	copy(k[:8], p.b[ipSrc:ipSrc+8])
	copy(k[8:], p.b[p.tcp:p.tcp+4])
	return k
}

// headerCompressor is one direction's sending end.
type headerCompressor struct {
	ids      map[flowKey]byte
	contexts []tcpContext
}

// errNotIPv4 is compress's refusal of what is not an IPv4 packet: its
// first byte would read as another kind at the far end.
var errNotIPv4 = errors.New("not an IPv4 packet")

// compress appends packet to dst as it crosses the bottleneck: a
// COMPRESSED_TCP packet when the flow's context allows, otherwise the
// native packet, as UNCOMPRESSED_TCP (establishing the context) if it is
// TCP. Connections' openings and endings (SYN, FIN, RST), a change in
// what the context holds constant, a number too far from the context's,
// a resend (the sequence number not moving on, as RFC 1144's compressor
// has it, which renews the far end's context after losses) and a packet
// whose checksums are wrong (the far end recomputes the IPv4 one and
// checks its rebuilt headers with the TCP one) all go in full.
func (c *headerCompressor) compress(dst, packet []byte) (out []byte, compressed bool, err error) {
	if len(packet) == 0 || packet[0]>>4 != 4 {
		return dst, false, errNotIPv4
	}
	p, ok := parseTCP(packet)
	if !ok {
		return append(dst, packet...), false, nil
	}
	if c.ids == nil {
		c.ids = map[flowKey]byte{}
	}
	k := p.key()
	id, known := c.ids[k]
	if !known {
		if len(c.contexts) == maxContexts {
			return append(dst, packet...), false, nil
		}
		id = byte(len(c.contexts))
		c.ids[k] = id
		c.contexts = append(c.contexts, tcpContext{})
	}
	ctx := &c.contexts[id]
	if !ctx.compressible(p) {
		ctx.set(p)
		if p.flags()&(flagSYN|flagFIN|flagRST) != 0 {
			// The next packet establishes the context again: a new
			// connection's numbers are unrelated to the last one's.
			ctx.valid = false
		}
		start := len(dst)
		dst = append(dst, packet...)
		dst[start] = typeUncompressedTCP | packet[0]&0x0f
		dst[start+ipProtocol] = id
		return dst, false, nil
	}
	ctx.set(p)
	kind := byte(typeCompressedTCP)
	if p.flags()&flagPSH != 0 {
		kind |= compressedPSH
	}
	b := p.b
	dst = append(dst, kind, id, b[p.tcp+tcpChecksum], b[p.tcp+tcpChecksum+1])
	dst = binary.BigEndian.AppendUint16(dst, uint16(p.seq()))
	dst = binary.BigEndian.AppendUint16(dst, uint16(p.ack()))
	dst = append(dst, b[p.tcp+tcpWindow], b[p.tcp+tcpWindow+1])
	if p.ts != 0 {
		dst = binary.BigEndian.AppendUint16(dst, uint16(p.tsVal()))
		dst = binary.BigEndian.AppendUint16(dst, uint16(p.tsEcr()))
	}
	return append(dst, b[p.header:]...), true, nil
}

// compressible reports whether p can travel compressed against c.
func (c *tcpContext) compressible(p tcpPacket) bool {
	if !c.valid || p.flags()&(flagSYN|flagFIN|flagRST) != 0 || c.layout.tcp != p.tcp || c.layout.header != p.header || c.layout.ts != p.ts || !p.checksumsOK() {
		return false
	}
	for i, v := range c.header {
		if v != p.b[i] && !p.dynamic(i) && !(i == p.tcp+tcpFlags && (v^p.b[i]) == flagPSH) {
			return false
		}
	}
	if d := int32(p.seq() - c.seq); d < 0 || d == 0 && p.payload() > 0 && c.payload > 0 {
		return false // a resend
	}
	return near(p.seq(), c.seq) && near(p.ack(), c.ack) && near(p.tsVal(), c.val) && near(p.tsEcr(), c.ecr)
}

// Errors of headerDecompressor.restore. A packet that meets one of the
// last two is tossed, as RFC 1144 §4 has the decompressor do until
// the context is renewed: it was compressed against a context whose
// establishing packet the bottleneck dropped, so TCP sees it lost.
var (
	errCompressedShort    = errors.New("compressed packet shorter than its header")
	errCompressedKind     = errors.New("unknown packet kind")
	errUncompressedNotTCP = errors.New("uncompressed TCP packet does not parse")
	errNoContext          = errors.New("no context for a compressed packet")
	errChecksum           = errors.New("rebuilt header fails the TCP checksum")
)

// headerDecompressor is one direction's receiving end.
type headerDecompressor struct {
	contexts [maxContexts]tcpContext
}

// restore returns the native packet sub (one of a bundle's packets)
// stands for, in memory of its own.
func (d *headerDecompressor) restore(sub []byte) ([]byte, error) {
	if len(sub) == 0 {
		return nil, errCompressedShort
	}
	switch {
	case sub[0]&0xf0 == typeIP:
		return bytes.Clone(sub), nil
	case sub[0]&0xf0 == typeUncompressedTCP:
		if len(sub) <= ipProtocol {
			return nil, errUncompressedNotTCP
		}
		packet := bytes.Clone(sub)
		id := packet[ipProtocol]
		packet[0] = typeIP | packet[0]&0x0f
		packet[ipProtocol] = protocolTCP
		p, ok := parseTCP(packet)
		if !ok {
			return nil, errUncompressedNotTCP
		}
		ctx := &d.contexts[id]
		ctx.set(p)
		ctx.valid = p.flags()&(flagSYN|flagFIN|flagRST) == 0
		return packet, nil
	case sub[0]&typeCompressedTCP != 0 && sub[0]&^(typeCompressedTCP|compressedPSH) == 0:
	default:
		return nil, fmt.Errorf("%w: %#x", errCompressedKind, sub[0])
	}
	if len(sub) < 2 {
		return nil, errCompressedShort
	}
	ctx := &d.contexts[sub[1]]
	if !ctx.valid {
		return nil, fmt.Errorf("%w %d", errNoContext, sub[1])
	}
	p := ctx.layout
	c := compressedTCPHeader
	if p.ts != 0 {
		c += compressedTSFields
	}
	if len(sub) < c {
		return nil, errCompressedShort
	}
	packet := make([]byte, len(ctx.header)+len(sub)-c)
	copy(packet, ctx.header)
	copy(packet[len(ctx.header):], sub[c:])
	p.b = packet
	binary.BigEndian.PutUint16(packet[ipTotalLength:], uint16(len(packet)))
	packet[p.tcp+tcpFlags] &^= flagPSH
	if sub[0]&compressedPSH != 0 {
		packet[p.tcp+tcpFlags] |= flagPSH
	}
	copy(packet[p.tcp+tcpChecksum:], sub[2:4])
	binary.BigEndian.PutUint32(packet[p.tcp+tcpSeq:], fromLow16(binary.BigEndian.Uint16(sub[4:]), ctx.seq))
	binary.BigEndian.PutUint32(packet[p.tcp+tcpAck:], fromLow16(binary.BigEndian.Uint16(sub[6:]), ctx.ack))
	copy(packet[p.tcp+tcpWindow:], sub[8:10])
	if p.ts != 0 {
		binary.BigEndian.PutUint32(packet[p.ts+2:], fromLow16(binary.BigEndian.Uint16(sub[10:]), ctx.val))
		binary.BigEndian.PutUint32(packet[p.ts+6:], fromLow16(binary.BigEndian.Uint16(sub[12:]), ctx.ecr))
	}
	binary.BigEndian.PutUint16(packet[ipChecksum:], 0)
	binary.BigEndian.PutUint16(packet[ipChecksum:], ^ipsum.Sum(0, packet[:p.tcp]))
	if !p.checksumOK() {
		// Rebuilt against a context that lost packets left behind: the
		// packet is tossed and so is every one until the context is renewed.
		ctx.valid = false
		return nil, errChecksum
	}
	ctx.set(p)
	return packet, nil
}

// checksumsOK verifies the IPv4 header's checksum, which the far end
// recomputes, and the TCP checksum, which it checks the rebuilt packet
// with.
func (p tcpPacket) checksumsOK() bool {
	return ipsum.Sum(0, p.b[:p.tcp]) == 0xffff && p.checksumOK()
}

// checksumOK verifies the TCP checksum over the pseudo-header (RFC 9293
// §3.1) and the segment.
func (p tcpPacket) checksumOK() bool {
	segment := p.b[p.tcp:]
	sum := uint32(ipsum.Sum(0, p.b[ipSrc:ipSrc+8])) + protocolTCP + uint32(len(segment))
	return ipsum.Sum(sum, segment) == 0xffff
}

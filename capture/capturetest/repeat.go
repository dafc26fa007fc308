package capturetest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// RepeatStats says what Repeat wrote.
type RepeatStats struct {
	Copies    int    // how many times the input was written
	Frames    uint64 // every frame, TCP and the rest included
	Datagrams uint64 // LLUDP datagrams among them
}

// Repeat writes the pcap capture read from in to out again and again, as one
// long session, until it holds at least datagrams LLUDP datagrams: each
// copy's timestamps follow the previous copy's, and in every LLUDP datagram
// the sequence number, the appended acks, the IDs of a PacketAck, the ping
// IDs and StartPingCheck's OldestUnacked are moved on by what the copies
// before used, so each circuit's numbers continue where the last copy left
// them instead of starting over. Frames that are not LLUDP (the TCP login,
// anything else) are copied with their time shifted. The frames are parsed
// and written again by gopacket, which shares no code with package capture.
func Repeat(out io.Writer, in io.Reader, datagrams uint64) (RepeatStats, error) {
	var st RepeatStats
	pr, err := pcapgo.NewReader(in)
	if err != nil {
		return st, fmt.Errorf("read capture: %w", err)
	}
	var recs []kept
	var perCopy uint64
	flows := map[flowKey]*flowSpan{}
	for {
		data, ci, err := pr.ReadPacketData()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return st, fmt.Errorf("read capture: %w", err)
		}
		p, err := parseRecord(append([]byte(nil), data...), ci, pr.LinkType())
		if err != nil {
			return st, err
		}
		rec := kept{ci: ci, data: p.data, flow: p.flow, lludp: p.udp != nil}
		if rec.lludp {
			f := flows[rec.flow]
			if f == nil {
				f = &flowSpan{}
				flows[rec.flow] = f
			}
			f.note(p.udp.Payload)
			perCopy++
		}
		recs = append(recs, rec)
	}
	if perCopy == 0 {
		return st, errors.New("no LLUDP datagrams in the capture")
	}
	first, last := recs[0].ci.Timestamp, recs[len(recs)-1].ci.Timestamp
	// A copy starts one average gap after the last one ended.
	period := last.Sub(first) + last.Sub(first)/time.Duration(len(recs))

	w := pcapgo.NewWriterNanos(out)
	if err := w.WriteFileHeader(pr.Snaplen(), pr.LinkType()); err != nil {
		return st, err
	}
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	var payload []byte
	for st.Datagrams < datagrams {
		k := uint32(st.Copies)
		shift := time.Duration(st.Copies) * period
		for _, r := range recs {
			ci := r.ci
			ci.Timestamp = ci.Timestamp.Add(shift)
			frame := r.data
			if r.lludp {
				// Parsed again for each copy: holding 24,000 parsed
				// packets would cost more memory than the capture.
				p, err := parseRecord(r.data, r.ci, pr.LinkType())
				if err != nil {
					return st, err
				}
				payload, err = renumber(append(payload[:0], p.udp.Payload...), k, flows[r.flow], flows[r.flow.reverse()])
				if err != nil {
					return st, err
				}
				if err := gopacket.SerializeLayers(buf, opts, append(p.below, gopacket.Payload(payload))...); err != nil {
					return st, fmt.Errorf("write frame: %w", err)
				}
				frame = buf.Bytes()
				st.Datagrams++
			}
			ci.CaptureLength, ci.Length = len(frame), len(frame)+r.ci.Length-r.ci.CaptureLength
			if err := w.WritePacket(ci, frame); err != nil {
				return st, err
			}
			st.Frames++
		}
		st.Copies++
	}
	return st, nil
}

type flowKey struct{ src, dst netip.AddrPort }

func (k flowKey) reverse() flowKey { return flowKey{k.dst, k.src} }

// flowSpan is how far one direction of a circuit moves its numbers in one
// copy of the capture.
type flowSpan struct {
	minSeq, maxSeq uint32
	seen           bool
	pings          uint32 // ping IDs used: the unwrapped distance first to last, plus one
	lastPing       uint8
	pinged         bool
}

func (f *flowSpan) note(p []byte) {
	h, _, end, err := lludp.ParseHeader(p)
	if err != nil {
		return
	}
	if h.Sequence != 0 {
		if !f.seen || h.Sequence < f.minSeq {
			f.minSeq = h.Sequence
		}
		if !f.seen || h.Sequence > f.maxSeq {
			f.maxSeq = h.Sequence
		}
		f.seen = true
	}
	if h.ID == lludp.StartPingCheckID {
		if body, ok := plainBody(p, h, end); ok && len(body) >= 1 {
			if !f.pinged {
				f.pings = 1
			} else {
				f.pings += uint32(body[0] - f.lastPing)
			}
			f.lastPing, f.pinged = body[0], true
		}
	}
}

func (f *flowSpan) seqSpan() uint32 {
	if f == nil || !f.seen {
		return 0
	}
	return f.maxSeq - f.minSeq + 1
}

func (f *flowSpan) pingSpan() uint32 {
	if f == nil {
		return 0
	}
	return f.pings
}

// renumber moves the numbers of LLUDP datagram p on by k copies: its own
// sequence numbers by own's span, the numbers it acknowledges by peer's.
func renumber(p []byte, k uint32, own, peer *flowSpan) ([]byte, error) {
	h, acks, end, err := lludp.ParseHeader(p)
	if err != nil || k == 0 {
		return p, nil // not LLUDP after all, or the first copy: as it was
	}
	ownSeq, peerSeq := k*own.seqSpan(), k*peer.seqSpan()
	if h.Sequence != 0 {
		binary.BigEndian.PutUint32(p[1:], h.Sequence+ownSeq)
	}
	for i := range acks.Len() {
		at := end + 4*i
		binary.BigEndian.PutUint32(p[at:], acks.At(i)+peerSeq)
	}
	switch h.ID {
	case lludp.PacketAckID, lludp.StartPingCheckID, lludp.CompletePingCheckID:
	default:
		return p, nil
	}
	// The body: expanded if zero-coded, rewritten, coded again.
	msgStart := lludp.HeaderSize + int(h.Extra)
	body := p[msgStart:end]
	if h.Flags&lludp.FlagZeroCoded != 0 {
		expanded := make([]byte, lludp.MaxPacketSize)
		n, err := lludp.ZeroDecode(expanded, body)
		if err != nil {
			return nil, fmt.Errorf("zero-coded %v: %w", h.ID, err)
		}
		body = expanded[:n]
	}
	idLen := len(lludp.AppendMessageNumber(nil, h.ID))
	if len(body) < idLen {
		return p, nil
	}
	fields := body[idLen:]
	switch h.ID {
	case lludp.PacketAckID: // count, then little-endian IDs
		if len(fields) >= 1 {
			for i := 0; i < int(fields[0]) && 1+4*i+4 <= len(fields); i++ {
				at := fields[1+4*i:]
				binary.LittleEndian.PutUint32(at, binary.LittleEndian.Uint32(at)+peerSeq)
			}
		}
	case lludp.StartPingCheckID: // PingID, OldestUnacked
		if len(fields) >= 5 {
			fields[0] += uint8(k * own.pingSpan())
			if old := binary.LittleEndian.Uint32(fields[1:]); old != 0 {
				binary.LittleEndian.PutUint32(fields[1:], old+ownSeq)
			}
		}
	case lludp.CompletePingCheckID: // PingID, the peer's
		if len(fields) >= 1 {
			fields[0] += uint8(k * peer.pingSpan())
		}
	}
	if h.Flags&lludp.FlagZeroCoded == 0 {
		return p, nil
	}
	out := append([]byte(nil), p[:msgStart]...)
	out = lludp.AppendZeroEncode(out, body)
	return append(out, p[end:]...), nil
}

// plainBody returns the message of a datagram that is not zero-coded,
// message number included.
func plainBody(p []byte, h lludp.Header, end int) ([]byte, bool) {
	if h.Flags&lludp.FlagZeroCoded != 0 {
		return nil, false
	}
	start := lludp.HeaderSize + int(h.Extra) + len(lludp.AppendMessageNumber(nil, h.ID))
	if start > end {
		return nil, false
	}
	return p[start:end], true
}

// kept is one frame of the input as Repeat keeps it between copies.
type kept struct {
	ci    gopacket.CaptureInfo
	data  []byte
	flow  flowKey
	lludp bool
}

// record is one frame of the input parsed; udp is set for LLUDP datagrams,
// with the layers below the payload ready to serialise again.
type record struct {
	ci    gopacket.CaptureInfo
	data  []byte
	udp   *layers.UDP
	below []gopacket.SerializableLayer
	flow  flowKey
}

func parseRecord(data []byte, ci gopacket.CaptureInfo, lt layers.LinkType) (record, error) {
	rec := record{ci: ci, data: data}
	pkt := gopacket.NewPacket(rec.data, lt, gopacket.NoCopy)
	udp, _ := pkt.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if udp == nil || pkt.Layer(gopacket.LayerTypeFragment) != nil || ci.CaptureLength != ci.Length {
		return rec, nil
	}
	if _, _, _, err := lludp.ParseHeader(udp.Payload); err != nil {
		return rec, nil
	}
	var srcIP, dstIP netip.Addr
	for _, l := range pkt.Layers() {
		if l == udp {
			break
		}
		s, ok := l.(gopacket.SerializableLayer)
		if !ok {
			return rec, nil // a layer gopacket cannot write back: leave the frame as it is
		}
		switch ip := l.(type) {
		case *layers.IPv4:
			srcIP, _ = netip.AddrFromSlice(ip.SrcIP)
			dstIP, _ = netip.AddrFromSlice(ip.DstIP)
			if err := udp.SetNetworkLayerForChecksum(ip); err != nil {
				return rec, err
			}
		case *layers.IPv6:
			srcIP, _ = netip.AddrFromSlice(ip.SrcIP)
			dstIP, _ = netip.AddrFromSlice(ip.DstIP)
			if err := udp.SetNetworkLayerForChecksum(ip); err != nil {
				return rec, err
			}
		}
		rec.below = append(rec.below, s)
	}
	if !srcIP.IsValid() {
		return rec, nil
	}
	rec.udp = udp
	rec.below = append(rec.below, udp)
	rec.flow = flowKey{netip.AddrPortFrom(srcIP.Unmap(), uint16(udp.SrcPort)), netip.AddrPortFrom(dstIP.Unmap(), uint16(udp.DstPort))}
	return rec, nil
}

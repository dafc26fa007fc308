package circuit

import (
	"encoding/binary"
	"errors"
	"io"
	"net/netip"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/ratecalc"
)

// replay holds the real capture's datagrams in memory and moves them on to
// the next copy in place: each flow's sequence numbers, the acks of the
// reverse flow's numbers and the ping IDs advance by what one copy used,
// and the times by the capture's length, so the circuits continue from copy
// to copy instead of starting over (each copy would otherwise be nothing
// but duplicates).
type replay struct {
	ds     []capture.Datagram
	flows  map[[2]netip.AddrPort]*replayFlow
	period time.Duration
}

type replayFlow struct {
	seqLo, seqHi uint32
	seen         bool
	pings        uint32 // ping IDs one copy uses, unwrapped
	lastPing     uint8
	pinged       bool
}

func (f *replayFlow) seqSpan() uint32 {
	if f == nil || !f.seen {
		return 0
	}
	return f.seqHi - f.seqLo + 1
}

// readReplay reads every datagram of a capture file into memory.
func readReplay(tb testing.TB, path string) *replay {
	tb.Helper()
	r, err := capture.OpenFile(path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	rp := &replay{flows: map[[2]netip.AddrPort]*replayFlow{}}
	for {
		d, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			tb.Fatal(err)
		}
		d.Payload = append([]byte(nil), d.Payload...)
		rp.ds = append(rp.ds, d)
		h, _, end, err := lludp.ParseHeader(d.Payload)
		if err != nil {
			continue
		}
		f := rp.flow(d.Src, d.Dst)
		if h.Sequence != 0 {
			if !f.seen || h.Sequence < f.seqLo {
				f.seqLo = h.Sequence
			}
			if !f.seen || h.Sequence > f.seqHi {
				f.seqHi = h.Sequence
			}
			f.seen = true
		}
		if body := replayBody(d.Payload, h, end); h.ID == lludp.StartPingCheckID && len(body) > 0 {
			if f.pinged {
				f.pings += uint32(body[0] - f.lastPing)
			} else {
				f.pings = 1
			}
			f.lastPing, f.pinged = body[0], true
		}
	}
	if len(rp.ds) == 0 {
		tb.Fatalf("%s: no datagrams", path)
	}
	span := rp.ds[len(rp.ds)-1].At.Sub(rp.ds[0].At)
	rp.period = span + span/time.Duration(len(rp.ds))
	return rp
}

func (rp *replay) flow(src, dst netip.AddrPort) *replayFlow {
	f := rp.flows[[2]netip.AddrPort{src, dst}]
	if f == nil {
		f = &replayFlow{}
		rp.flows[[2]netip.AddrPort{src, dst}] = f
	}
	return f
}

// replayBody is the message after its number, if not zero-coded (the
// messages renumbered here never are, in the real capture).
func replayBody(p []byte, h lludp.Header, end int) []byte {
	if h.Flags.ZeroCoded() {
		return nil
	}
	start := lludp.HeaderSize + int(h.Extra) + len(lludp.AppendMessageNumber(nil, h.ID))
	if start > end {
		return nil
	}
	return p[start:end]
}

// next moves every datagram on by one copy.
func (rp *replay) next() {
	for i := range rp.ds {
		d := &rp.ds[i]
		d.At = d.At.Add(rp.period)
		p := d.Payload
		h, acks, end, err := lludp.ParseHeader(p)
		if err != nil {
			continue
		}
		own, peer := rp.flows[[2]netip.AddrPort{d.Src, d.Dst}], rp.flows[[2]netip.AddrPort{d.Dst, d.Src}]
		if h.Sequence != 0 {
			binary.BigEndian.PutUint32(p[1:], h.Sequence+own.seqSpan())
		}
		for i := range acks.Len() {
			binary.BigEndian.PutUint32(p[end+4*i:], acks.At(i)+peer.seqSpan())
		}
		body := replayBody(p, h, end)
		switch {
		case h.ID == lludp.PacketAckID && len(body) > 0:
			for i := 0; i < int(body[0]) && 5+4*i <= len(body); i++ {
				at := body[1+4*i:]
				binary.LittleEndian.PutUint32(at, binary.LittleEndian.Uint32(at)+peer.seqSpan())
			}
		case h.ID == lludp.StartPingCheckID && len(body) >= 5:
			body[0] += uint8(own.pings)
			if old := binary.LittleEndian.Uint32(body[1:]); old != 0 {
				binary.LittleEndian.PutUint32(body[1:], old+own.seqSpan())
			}
		case h.ID == lludp.CompletePingCheckID && len(body) > 0 && peer != nil:
			body[0] += uint8(peer.pings)
		}
	}
}

// TestRealReplayContinues: three copies of the real capture through one
// tracker are the same two circuits, three times as long, still without a
// loss, a resync or a duplicate: the replay the benchmark runs is one long
// session, not copies the tracker would take for duplicates.
func TestRealReplayContinues(t *testing.T) {
	rp := readReplay(t, realCapture(t))
	once := NewTracker(Config{})
	for _, d := range rp.ds {
		once.Observe(d)
	}
	tr := NewTracker(Config{})
	const copies = 3
	for k := range copies {
		if k > 0 {
			rp.next()
		}
		for _, d := range rp.ds {
			tr.Observe(d)
		}
	}
	cs := tr.Circuits()
	if len(cs) != 2 || tr.InvalidTotal() != 0 {
		t.Fatalf("%d circuits, %d invalid", len(cs), tr.InvalidTotal())
	}
	for i, c := range cs {
		base := once.Circuits()[i]
		for _, dir := range []Direction{Down, Up} {
			s, b := c.Stats(dir), base.Stats(dir)
			if s.Packets != copies*b.Packets || s.Lost != 0 || s.Resyncs != 0 || s.Duplicates != b.Duplicates*copies || s.SpuriousResends != copies*b.SpuriousResends {
				t.Errorf("%v %v: %+v\nonce: %+v", c.Key, dir, s, b)
			}
		}
		if c.RTT().Samples() != copies*base.RTT().Samples() || c.AckRTT().Samples() < copies*base.AckRTT().Samples()*9/10 {
			t.Errorf("%v: %d ping pairs, %d ack samples; once %d, %d", c.Key, c.RTT().Samples(), c.AckRTT().Samples(), base.RTT().Samples(), base.AckRTT().Samples())
		}
	}
}

// BenchmarkObserveReal is the tracker alone on the real capture's
// datagrams, replayed as one continuous session: ns/op is per datagram.
func BenchmarkObserveReal(b *testing.B) {
	rp := readReplay(b, realCapture(b))
	tr := NewTracker(Config{})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		tr.Observe(rp.ds[i])
		if i++; i == len(rp.ds) {
			b.StopTimer()
			rp.next()
			i = 0
			b.StartTimer()
		}
	}
}

// BenchmarkObserveControllerReal is BenchmarkObserveReal with each
// circuit's controller fed (BenchmarkObserveController on the real
// capture), per datagram.
func BenchmarkObserveControllerReal(b *testing.B) {
	rp := readReplay(b, realCapture(b))
	for _, tc := range benchControllers {
		b.Run(tc.name, func(b *testing.B) {
			cfg := Config{NewController: func(Key) ratecalc.Controller { return tc.make() }}
			tr := NewTracker(cfg)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				tr.Observe(rp.ds[i])
				if i++; i == len(rp.ds) {
					b.StopTimer()
					rp.next()
					i = 0
					b.StartTimer()
				}
			}
		})
	}
}

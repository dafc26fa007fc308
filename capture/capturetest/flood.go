package capturetest

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// Flood is a spoofed-source flood at a simulator: every source sends a few
// datagrams and is never heard of again, as a flood costs nothing to send
// from fresh addresses.
type Flood struct {
	Sources   int            // distinct source endpoints, 10.x.y.z:40000 onwards
	PerSource int            // datagrams from each, with sequence numbers 1, 2, …; default 1
	Garbage   bool           // random bytes of 8 to 200 instead of UseCircuitCode
	Sim       netip.AddrPort // the target; default 10.255.0.1:9000
	Start     time.Time      // the first datagram's time; a source every 10 µs after
	Seed      uint64
}

// Each calls fn with every datagram of the flood in time order, one source
// after another. The payload is reused: fn must not keep it.
func (f Flood) Each(fn func(Datagram) error) error {
	sim := f.Sim
	if !sim.IsValid() {
		sim = netip.MustParseAddrPort("10.255.0.1:9000")
	}
	per := max(f.PerSource, 1)
	rng := rand.New(rand.NewPCG(f.Seed, 11))
	var payload []byte
	for i := range f.Sources {
		src := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), uint16(40000+i%20000))
		at := f.Start.Add(time.Duration(i) * 10 * time.Microsecond)
		for k := range per {
			if f.Garbage {
				payload = payload[:0]
				for range 8 + rng.IntN(193) {
					payload = append(payload, byte(rng.Uint32()))
				}
			} else {
				var agent, session lludp.UUID
				for j := range agent {
					agent[j], session[j] = byte(rng.Uint32()), byte(rng.Uint32())
				}
				var err error
				payload, err = lludp.AppendMessage(payload[:0], lludp.Header{Flags: lludp.FlagReliable, Sequence: uint32(k + 1)},
					&lludp.UseCircuitCode{Code: rng.Uint32(), SessionID: session, AgentID: agent}, nil)
				if err != nil {
					return err
				}
			}
			if err := fn(Datagram{At: at.Add(time.Duration(k) * time.Microsecond), Src: src, Dst: sim, Payload: payload}); err != nil {
				return err
			}
		}
	}
	return nil
}

// WritePcap writes the flood as a pcap capture, streaming: a flood of a
// million sources needs no more memory than one. The datagrams of also (a
// real circuit, say) are merged in by time; they must be in time order.
func (f Flood) WritePcap(w io.Writer, also []Datagram) error {
	pw := pcapgo.NewWriterNanos(w)
	if err := pw.WriteFileHeader(65536, layers.LinkTypeEthernet); err != nil {
		return err
	}
	write := func(d Datagram) error {
		frame, err := Frame(d)
		if err != nil {
			return err
		}
		if err := pw.WritePacket(gopacket.CaptureInfo{Timestamp: d.At, CaptureLength: len(frame), Length: len(frame)}, frame); err != nil {
			return fmt.Errorf("write flood: %w", err)
		}
		return nil
	}
	err := f.Each(func(d Datagram) error {
		for len(also) > 0 && !also[0].At.After(d.At) {
			if err := write(also[0]); err != nil {
				return err
			}
			also = also[1:]
		}
		return write(d)
	})
	if err != nil {
		return err
	}
	for _, d := range also {
		if err := write(d); err != nil {
			return err
		}
	}
	return nil
}

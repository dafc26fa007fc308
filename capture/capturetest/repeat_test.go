package capturetest

import (
	"bytes"
	"errors"
	"io"
	"net/netip"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// TestRepeat: each copy's LLUDP numbers continue the copy before: the
// sequence numbers of each direction, the acks (appended and in a
// PacketAck) of the other's, the ping IDs, OldestUnacked; zero-coded bodies
// too. Times follow on, and frames that are not LLUDP are copied as they
// were.
func TestRepeat(t *testing.T) {
	viewer := netip.MustParseAddrPort("10.0.0.2:40000")
	sim := netip.MustParseAddrPort("10.0.0.1:9000")
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	var ds []Datagram
	add := func(at time.Duration, up bool, h lludp.Header, m lludp.Typed, acks []uint32) {
		b, err := lludp.AppendMessage(nil, h, m, acks)
		if err != nil {
			t.Fatal(err)
		}
		src, dst := sim, viewer
		if up {
			src, dst = viewer, sim
		}
		ds = append(ds, Datagram{At: t0.Add(at), Src: src, Dst: dst, Payload: b})
	}
	ms := time.Millisecond
	for seq := uint32(100); seq < 110; seq++ { // the sim's 100..109
		add(time.Duration(seq)*ms, false, lludp.Header{Flags: lludp.FlagReliable, Sequence: seq}, &lludp.LayerData{Type: lludp.LayerLand, Data: make([]byte, 40)}, nil)
	}
	add(200*ms, true, lludp.Header{Sequence: 50}, &lludp.StartPingCheck{PingID: 254, OldestUnacked: 49}, []uint32{105})
	add(201*ms, false, lludp.Header{Sequence: 110}, &lludp.CompletePingCheck{PingID: 254}, nil)
	add(202*ms, true, lludp.Header{Sequence: 51, Flags: lludp.FlagZeroCoded}, &lludp.PacketAck{IDs: []uint32{108, 109}}, nil)
	add(203*ms, true, lludp.Header{Sequence: 52}, &lludp.StartPingCheck{PingID: 255}, nil)
	ds = append(ds, Datagram{At: t0.Add(204 * ms), Src: netip.MustParseAddrPort("10.0.0.3:53"), Dst: netip.MustParseAddrPort("10.0.0.4:53"), Payload: []byte("dns")})
	var in, out bytes.Buffer
	if err := Write(&in, Pcap, ds); err != nil {
		t.Fatal(err)
	}
	st, err := Repeat(&out, bytes.NewReader(in.Bytes()), 3*uint64(len(ds)-1)-1)
	if err != nil {
		t.Fatal(err)
	}
	if st.Copies != 3 || st.Frames != 3*uint64(len(ds)) || st.Datagrams != 3*uint64(len(ds)-1) {
		t.Fatalf("%+v", st)
	}
	r, err := pcapgo.NewReader(&out)
	if err != nil {
		t.Fatal(err)
	}
	// Per copy: the sim's numbers move by 11 (100..110), the viewer's by 3
	// (50..52), the viewer's ping IDs by 2 (254, 255), the sim's by 0.
	const simSpan, viewerSpan, pingSpan = 11, 3, 2
	var last time.Time
	for i := 0; ; i++ {
		data, ci, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			if i != 3*len(ds) {
				t.Fatalf("%d frames", i)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !ci.Timestamp.After(last) {
			t.Fatalf("frame %d at %v, not after %v", i, ci.Timestamp, last)
		}
		last = ci.Timestamp
		k, orig := uint32(i/len(ds)), ds[i%len(ds)]
		pkt := gopacket.NewPacket(data, layers.LinkTypeEthernet, gopacket.Default)
		udp, _ := pkt.Layer(layers.LayerTypeUDP).(*layers.UDP)
		if udp == nil {
			t.Fatalf("frame %d: %v", i, pkt)
		}
		if string(orig.Payload) == "dns" {
			if string(udp.Payload) != "dns" {
				t.Errorf("frame %d: %q", i, udp.Payload)
			}
			continue
		}
		var p, want lludp.Packet
		if err := p.DecodeFromBytes(udp.Payload); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if err := want.DecodeFromBytes(orig.Payload); err != nil {
			t.Fatal(err)
		}
		own, peer := k*simSpan, k*viewerSpan
		if orig.Src == viewer {
			own, peer = peer, own
		}
		if got := p.Sequence; got != want.Sequence+own {
			t.Errorf("frame %d: sequence %d, want %d", i, got, want.Sequence+own)
		}
		for j := range want.Acks.Len() {
			if got := p.Acks.At(j); got != want.Acks.At(j)+peer {
				t.Errorf("frame %d: appended ack %d, want %d", i, got, want.Acks.At(j)+peer)
			}
		}
		switch p.Message().ID {
		case lludp.StartPingCheckID:
			var got, w lludp.StartPingCheck
			p.Unmarshal(&got)
			want.Unmarshal(&w)
			wantOld := w.OldestUnacked
			if wantOld != 0 {
				wantOld += own
			}
			if got.PingID != w.PingID+uint8(k*pingSpan) || got.OldestUnacked != wantOld {
				t.Errorf("frame %d: %+v, want ID %d and OldestUnacked %d", i, got, w.PingID+uint8(k*pingSpan), wantOld)
			}
		case lludp.CompletePingCheckID:
			var got, w lludp.CompletePingCheck
			p.Unmarshal(&got)
			want.Unmarshal(&w)
			if got.PingID != w.PingID+uint8(k*pingSpan) {
				t.Errorf("frame %d: pong %d, want %d", i, got.PingID, w.PingID+uint8(k*pingSpan))
			}
		case lludp.PacketAckID:
			var got, w lludp.PacketAck
			p.Unmarshal(&got)
			want.Unmarshal(&w)
			for j := range w.IDs {
				if got.IDs[j] != w.IDs[j]+peer {
					t.Errorf("frame %d: PacketAck ID %d, want %d", i, got.IDs[j], w.IDs[j]+peer)
				}
			}
			if p.Flags&lludp.FlagZeroCoded == 0 || udp.Payload[0]&0x80 == 0 {
				t.Errorf("frame %d: no longer zero-coded", i)
			}
		}
		if ip, _ := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4); ip == nil || int(ip.Length) != 20+8+len(udp.Payload) || int(udp.Length) != 8+len(udp.Payload) {
			t.Errorf("frame %d: IP and UDP lengths not fixed", i)
		}
	}
}

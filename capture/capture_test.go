package capture

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"net/netip"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/capture/capturetest"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"golang.org/x/net/bpf"
)

var (
	src4 = netip.MustParseAddrPort("192.0.2.10:50123")
	dst4 = netip.MustParseAddrPort("192.0.2.20:9000")
	src6 = netip.MustParseAddrPort("[2001:db8::10]:50123")
	dst6 = netip.MustParseAddrPort("[2001:db8::20]:9000")
	t0   = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
)

// ipUDP serialises IP and UDP (and the payload) with gopacket.
func ipUDP(t testing.TB, src, dst netip.AddrPort, payload []byte, ipOpts func(gopacket.SerializableLayer)) []byte {
	t.Helper()
	udp := &layers.UDP{SrcPort: layers.UDPPort(src.Port()), DstPort: layers.UDPPort(dst.Port())}
	var ip gopacket.SerializableLayer
	if src.Addr().Is4() {
		ip4 := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: src.Addr().AsSlice(), DstIP: dst.Addr().AsSlice()}
		_ = udp.SetNetworkLayerForChecksum(ip4)
		ip = ip4
	} else {
		ip6 := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolUDP, SrcIP: src.Addr().AsSlice(), DstIP: dst.Addr().AsSlice()}
		_ = udp.SetNetworkLayerForChecksum(ip6)
		ip = ip6
	}
	if ipOpts != nil {
		ipOpts(ip)
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ip, udp, gopacket.Payload(payload)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func ether(ip []byte, vlans int) []byte {
	et := uint16(0x0800)
	if ip[0]>>4 == 6 {
		et = 0x86DD
	}
	f := []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1}
	for range vlans {
		f = append(f, 0x81, 0x00, 0x00, 0x2A)
	}
	return append(binary.BigEndian.AppendUint16(f, et), ip...)
}

// TestLinkTypes: the same datagram under every link type decodes alike.
func TestLinkTypes(t *testing.T) {
	payload := []byte{0x40, 0, 0, 0, 1, 0, 1, 3, 4, 0, 0, 0}
	for _, tc := range []struct {
		name     string
		lt       LinkType
		src, dst netip.AddrPort
		frame    func(ip []byte) []byte
	}{
		{"ethernet v4", LinkEthernet, src4, dst4, func(ip []byte) []byte { return ether(ip, 0) }},
		{"ethernet v6", LinkEthernet, src6, dst6, func(ip []byte) []byte { return ether(ip, 0) }},
		{"ethernet 802.1Q", LinkEthernet, src4, dst4, func(ip []byte) []byte { return ether(ip, 1) }},
		{"ethernet QinQ", LinkEthernet, src6, dst6, func(ip []byte) []byte { return ether(ip, 2) }},
		{"linux sll", LinkLinuxSLL, src4, dst4, func(ip []byte) []byte { return append(make([]byte, 16), ip...) }},
		{"linux sll2", LinkSLL2, src6, dst6, func(ip []byte) []byte { return append(make([]byte, 20), ip...) }},
		{"raw v4", LinkRaw, src4, dst4, func(ip []byte) []byte { return ip }},
		{"raw v6", LinkRaw, src6, dst6, func(ip []byte) []byte { return ip }},
		{"ipv4", LinkIPv4, src4, dst4, func(ip []byte) []byte { return ip }},
		{"ipv6", LinkIPv6, src6, dst6, func(ip []byte) []byte { return ip }},
		{"bsd loopback", LinkNull, src4, dst4, func(ip []byte) []byte { return append([]byte{2, 0, 0, 0}, ip...) }},
		{"openbsd loop", LinkLoop, src6, dst6, func(ip []byte) []byte { return append([]byte{0, 0, 0, 24}, ip...) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.frame(ipUDP(t, tc.src, tc.dst, payload, nil))
			src, dst, got, _, ok := udpFrame(tc.lt, f)
			if !ok || src != tc.src || dst != tc.dst || !bytes.Equal(got, payload) {
				t.Errorf("got %v→%v %x ok=%v", src, dst, got, ok)
			}
		})
	}
}

func TestSkipReasons(t *testing.T) {
	payload := []byte{0x40, 0, 0, 0, 1, 0, 1}
	v4 := ipUDP(t, src4, dst4, payload, nil)
	frag := ipUDP(t, src4, dst4, payload, func(l gopacket.SerializableLayer) { l.(*layers.IPv4).Flags = layers.IPv4MoreFragments })
	later := ipUDP(t, src4, dst4, payload, func(l gopacket.SerializableLayer) { l.(*layers.IPv4).FragOffset = 100 })
	tcp := append([]byte{}, v4...)
	tcp[9] = 6
	v6frag := ipUDP(t, src6, dst6, payload, nil)
	v6frag[6] = 44 // a fragment header where UDP was
	arp := append([]byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x06}, make([]byte, 28)...)
	for _, tc := range []struct {
		name  string
		lt    LinkType
		frame []byte
		want  SkipReason
	}{
		{"arp", LinkEthernet, arp, SkipNotIP},
		{"tcp", LinkRaw, tcp, SkipNotUDP},
		{"first fragment", LinkRaw, frag, SkipFragment},
		{"later fragment", LinkRaw, later, SkipFragment},
		{"ipv6 fragment", LinkRaw, v6frag, SkipFragment},
		{"short ethernet", LinkEthernet, arp[:10], SkipTruncated},
		{"cut ip", LinkRaw, v4[:15], SkipTruncated},
		{"cut udp", LinkRaw, v4[:len(v4)-3], SkipTruncated},
		{"version 5", LinkRaw, append([]byte{0x50}, v4[1:]...), SkipNotIP},
		{"empty", LinkRaw, nil, SkipTruncated},
	} {
		if _, _, _, skip, ok := udpFrame(tc.lt, tc.frame); ok || skip != tc.want {
			t.Errorf("%s: ok=%v skip %v, want %v", tc.name, ok, skip, tc.want)
		}
	}
}

// captureBytes writes datagrams as pcap or pcapng, optionally gzipped.
func captureBytes(t testing.TB, ds []capturetest.Datagram, format capturetest.Format, gz bool) []byte {
	t.Helper()
	var out bytes.Buffer
	var w io.Writer = &out
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(&out)
		w = zw
	}
	if err := capturetest.Write(w, format, ds); err != nil {
		t.Fatal(err)
	}
	if zw != nil {
		zw.Close()
	}
	return out.Bytes()
}

func readAll(t testing.TB, data []byte, ports Ports) ([]Datagram, Stats, error) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(data), ports)
	if err != nil {
		return nil, Stats{}, err
	}
	var out []Datagram
	for {
		d, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, r.Stats(), nil
		}
		if err != nil {
			return out, r.Stats(), err
		}
		d.Payload = append([]byte(nil), d.Payload...)
		out = append(out, d)
	}
}

// TestFormats: pcap, pcapng, and both gzipped, give the same datagrams,
// with the port filter applied.
func TestFormats(t *testing.T) {
	ds := []capturetest.Datagram{
		{At: t0, Src: src4, Dst: dst4, Payload: []byte("one")},
		{At: t0.Add(time.Millisecond), Src: dst6, Dst: src6, Payload: []byte("two")},
		{At: t0.Add(2 * time.Millisecond), Src: netip.MustParseAddrPort("192.0.2.1:53"), Dst: netip.MustParseAddrPort("192.0.2.2:5353"), Payload: []byte("dns")},
	}
	var first []Datagram
	for _, ng := range []capturetest.Format{capturetest.Pcap, capturetest.Pcapng} {
		for _, gz := range []bool{false, true} {
			got, st, err := readAll(t, captureBytes(t, ds, ng, gz), SimPorts)
			if err != nil {
				t.Fatalf("ng=%v gz=%v: %v", ng, gz, err)
			}
			if len(got) != 2 || st.Frames != 3 || st.SkippedBy(SkipPort) != 1 || st.Datagrams != 2 || st.Bytes != 6 {
				t.Fatalf("ng=%v gz=%v: %d datagrams, stats %+v", ng, gz, len(got), st)
			}
			if got[1].Src != dst6 || string(got[1].Payload) != "two" || !got[1].At.Equal(t0.Add(time.Millisecond)) {
				t.Errorf("ng=%v gz=%v: second datagram %+v", ng, gz, got[1])
			}
			if first == nil {
				first = got
			} else if got[0].At != first[0].At || got[1].Dst != first[1].Dst {
				t.Errorf("ng=%v gz=%v differs from pcap", ng, gz)
			}
		}
	}
}

// TestBrokenCapture: a file cut inside a record reports how far it got and
// keeps every datagram before the break.
func TestBrokenCapture(t *testing.T) {
	var ds []capturetest.Datagram
	for i := range 10 {
		ds = append(ds, capturetest.Datagram{At: t0.Add(time.Duration(i) * time.Millisecond), Src: src4, Dst: dst4, Payload: []byte{byte(i), 1, 2, 3}})
	}
	for _, ng := range []capturetest.Format{capturetest.Pcap, capturetest.Pcapng} {
		data := captureBytes(t, ds, ng, false)
		got, st, err := readAll(t, data[:len(data)-20], nil)
		var be *BrokenError
		if !errors.As(err, &be) || len(got) != 9 || be.Frames != 9 || st.Datagrams != 9 {
			t.Errorf("ng=%v: %d datagrams, err %v", ng, len(got), err)
		}
	}
	if _, _, err := readAll(t, []byte("not a capture at all"), nil); err == nil {
		t.Error("garbage accepted as a capture")
	}
	if _, _, err := readAll(t, nil, nil); err == nil {
		t.Error("an empty file accepted as a capture")
	}
}

func TestUnknownLinkType(t *testing.T) {
	var out bytes.Buffer
	w := pcapgo.NewWriter(&out)
	if err := w.WriteFileHeader(65536, layers.LinkType(147)); err != nil {
		t.Fatal(err)
	}
	if _, err := NewReader(&out, nil); !errors.Is(err, ErrUnknownLinkType) {
		t.Errorf("got %v, want ErrUnknownLinkType", err)
	}
}

// TestBPFFilter runs the live filter in x/net/bpf's virtual machine.
func TestBPFFilter(t *testing.T) {
	payload := []byte{0x40, 0, 0, 0, 1, 0, 1}
	prog, err := udpFilter(Ports{{Lo: 9000, Hi: 13100}}, false)
	if err != nil {
		t.Fatal(err)
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	other := netip.MustParseAddrPort("192.0.2.1:5353")
	withOpts := ipUDP(t, src4, dst4, payload, func(l gopacket.SerializableLayer) {
		l.(*layers.IPv4).Options = []layers.IPv4Option{{OptionType: 1}, {OptionType: 1}, {OptionType: 1}, {OptionType: 0}}
	})
	later := ipUDP(t, src4, dst4, payload, func(l gopacket.SerializableLayer) { l.(*layers.IPv4).FragOffset = 10 })
	tcp := ipUDP(t, src4, dst4, payload, nil)
	tcp[9] = 6
	arp := append([]byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x06}, make([]byte, 28)...)
	for _, tc := range []struct {
		name  string
		frame []byte
		pass  bool
	}{
		{"v4 to sim", ether(ipUDP(t, src4, dst4, payload, nil), 0), true},
		{"v4 from sim", ether(ipUDP(t, dst4, src4, payload, nil), 0), true},
		{"v4 with IP options", ether(withOpts, 0), true},
		{"v6", ether(ipUDP(t, src6, dst6, payload, nil), 0), true},
		{"v4 other ports", ether(ipUDP(t, src4, other, payload, nil), 0), false},
		{"v6 other ports", ether(ipUDP(t, netip.MustParseAddrPort("[2001:db8::1]:53"), netip.MustParseAddrPort("[2001:db8::2]:53"), payload, nil), 0), false},
		{"later fragment", ether(later, 0), false},
		{"tcp", ether(tcp, 0), false},
		{"arp", arp, false},
	} {
		n, err := vm.Run(tc.frame)
		if err != nil {
			t.Fatal(err)
		}
		if (n > 0) != tc.pass {
			t.Errorf("%s: filter kept %d bytes, want pass=%v", tc.name, n, tc.pass)
		}
	}
	if _, err := udpFilter(make(Ports, maxPortRanges+1), false); err == nil {
		t.Error("too many port ranges accepted")
	}
}

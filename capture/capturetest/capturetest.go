// Package capturetest writes captures for tests: UDP datagrams as
// Ethernet/IP/UDP frames in pcap or pcapng files. The headers are
// serialised by gopacket's layers, so capture's own frame parser is checked
// against an encoder it shares nothing with.
package capturetest

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// Datagram is one UDP datagram to write.
type Datagram struct {
	At       time.Time
	Src, Dst netip.AddrPort
	Payload  []byte
}

// Format is a capture file format.
type Format int

const (
	Pcap Format = iota
	Pcapng
)

func (f Format) String() string {
	if f == Pcapng {
		return "pcapng"
	}
	return "pcap"
}

// Frame returns d as an Ethernet frame, IPv4 or IPv6 by its addresses.
func Frame(d Datagram) ([]byte, error) {
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}}
	udp := &layers.UDP{SrcPort: layers.UDPPort(d.Src.Port()), DstPort: layers.UDPPort(d.Dst.Port())}
	var ip gopacket.SerializableLayer
	if d.Src.Addr().Is4() {
		eth.EthernetType = layers.EthernetTypeIPv4
		ip4 := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: d.Src.Addr().AsSlice(), DstIP: d.Dst.Addr().AsSlice()}
		if err := udp.SetNetworkLayerForChecksum(ip4); err != nil {
			return nil, err
		}
		ip = ip4
	} else {
		eth.EthernetType = layers.EthernetTypeIPv6
		ip6 := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolUDP, SrcIP: d.Src.Addr().AsSlice(), DstIP: d.Dst.Addr().AsSlice()}
		if err := udp.SetNetworkLayerForChecksum(ip6); err != nil {
			return nil, err
		}
		ip = ip6
	}
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, eth, ip, udp, gopacket.Payload(d.Payload)); err != nil {
		return nil, fmt.Errorf("serialise frame: %w", err)
	}
	return buf.Bytes(), nil
}

// Write writes the datagrams as an Ethernet capture in the given format,
// with nanosecond timestamps.
func Write(w io.Writer, format Format, ds []Datagram) error {
	var write func(gopacket.CaptureInfo, []byte) error
	var flush func() error
	switch format {
	case Pcapng:
		nw, err := pcapgo.NewNgWriter(w, layers.LinkTypeEthernet)
		if err != nil {
			return err
		}
		write, flush = nw.WritePacket, nw.Flush
	default:
		pw := pcapgo.NewWriterNanos(w)
		if err := pw.WriteFileHeader(65536, layers.LinkTypeEthernet); err != nil {
			return err
		}
		write, flush = pw.WritePacket, func() error { return nil }
	}
	for _, d := range ds {
		f, err := Frame(d)
		if err != nil {
			return err
		}
		if err := write(gopacket.CaptureInfo{Timestamp: d.At, CaptureLength: len(f), Length: len(f)}, f); err != nil {
			return err
		}
	}
	return flush()
}

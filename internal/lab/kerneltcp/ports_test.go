package kerneltcp

import (
	"encoding/binary"
	"os"
	"testing"
)

// realCapture is a tcpdump capture of a real OpenSim region on loopback
// (see its SOURCES.md): Ethernet frames holding IPv4 TCP (login,
// capabilities) and UDP (LLUDP).
const realCapture = "../../../../shared/testdata/real/opensim-0922-captures/testclient-2x-10min.pcap"

// realPackets returns up to n IPv4 packets of each protocol from the real
// capture, or the error reading it (the test data lives in ../shared
// beside the repository).
func realPackets(t testing.TB, n int) (tcp, udp [][]byte, err error) {
	t.Helper()
	b, err := os.ReadFile(realCapture)
	if err != nil {
		return nil, nil, err
	}
	const (
		pcapHeader   = 24 // libpcap file format: global header
		recordHeader = 16 // per-packet header: ts_sec, ts_usec, incl_len, orig_len
		ethernetLen  = 14 // DLT_EN10MB: tcpdump on lo writes zeroed Ethernet headers
	)
	if len(b) < pcapHeader || binary.LittleEndian.Uint32(b) != 0xa1b2c3d4 || binary.LittleEndian.Uint32(b[20:]) != 1 {
		t.Fatalf("%s: not a little-endian Ethernet pcap", realCapture)
	}
	for off := pcapHeader; off+recordHeader <= len(b) && (len(tcp) < n || len(udp) < n); {
		incl := int(binary.LittleEndian.Uint32(b[off+8:]))
		frame := b[off+recordHeader : min(off+recordHeader+incl, len(b))]
		off += recordHeader + incl
		if len(frame) <= ethernetLen || binary.BigEndian.Uint16(frame[12:]) != 0x0800 {
			continue
		}
		pkt := frame[ethernetLen:]
		switch {
		case len(pkt) > 9 && pkt[9] == 6 && len(tcp) < n:
			tcp = append(tcp, pkt)
		case len(pkt) > 9 && pkt[9] == 17 && len(udp) < n:
			udp = append(udp, pkt)
		}
	}
	return tcp, udp, nil
}

func TestTCPPorts(t *testing.T) {
	// A SYN from 10.200.0.1:40000 to 10.200.0.2:5001, header only.
	syn := []byte{
		0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0, 10, 200, 0, 1, 10, 200, 0, 2,
		0x9c, 0x40, 0x13, 0x89, 0, 0, 0, 0, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0,
	}
	withOptions := append([]byte{0x46, 0, 0, 44, 0, 0, 0x40, 0, 64, 6, 0, 0, 10, 200, 0, 1, 10, 200, 0, 2, 1, 1, 1, 0}, syn[20:]...)
	later := append([]byte(nil), syn...)
	later[6], later[7] = 0x00, 0xb9 // fragment offset 185 × 8 bytes: no TCP header here
	udp := append([]byte(nil), syn...)
	udp[9] = 17
	v6 := append([]byte(nil), syn...)
	v6[0] = 0x60
	badIHL := append([]byte(nil), syn...)
	badIHL[0] = 0x44 // 16-byte header, below IPv4's minimum
	tests := []struct {
		name     string
		pkt      []byte
		src, dst uint16
		ok       bool
	}{
		{"syn", syn, 40000, 5001, true},
		{"ip options", withOptions, 40000, 5001, true},
		{"ports only", syn[:24], 40000, 5001, true},
		{"cut in the ports", syn[:23], 0, 0, false},
		{"later fragment", later, 0, 0, false},
		{"udp", udp, 0, 0, false},
		{"ipv6", v6, 0, 0, false},
		{"header length below 20", badIHL, 0, 0, false},
		{"options beyond the packet", withOptions[:26], 0, 0, false},
		{"empty", nil, 0, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src, dst, ok := tcpPorts(tc.pkt)
			if src != tc.src || dst != tc.dst || ok != tc.ok {
				t.Errorf("tcpPorts = %d, %d, %v; want %d, %d, %v", src, dst, ok, tc.src, tc.dst, tc.ok)
			}
		})
	}
	t.Run("real capture", func(t *testing.T) {
		tcp, _, err := realPackets(t, 1)
		if err != nil {
			t.Skipf("skipped: the real capture is not there: %v", err)
		}
		// Its first TCP packet: the region's HTTP server (port 9000)
		// answering a TestClient at port 43120 with 148 bytes of
		// PSH|ACK (decoded by hand from the capture).
		if src, dst, ok := tcpPorts(tcp[0]); src != 9000 || dst != 43120 || !ok {
			t.Errorf("tcpPorts = %d, %d, %v; want 9000, 43120, true", src, dst, ok)
		}
	})
}

// FuzzTCPPorts: whatever a TUN device hands over, the classifier neither
// panics nor reads ports from outside the packet or from a non-TCP one.
func FuzzTCPPorts(f *testing.F) {
	tcp, udp, err := realPackets(f, 8)
	if err != nil {
		f.Logf("no real seeds, only the fuzzer's own inputs: %v", err)
	}
	for _, p := range append(tcp, udp...) {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, pkt []byte) {
		src, dst, ok := tcpPorts(pkt)
		if !ok {
			if src != 0 || dst != 0 {
				t.Errorf("not TCP, yet ports %d, %d", src, dst)
			}
			return
		}
		ihl := int(pkt[0]&0x0f) * 4
		if pkt[0]>>4 != 4 || pkt[9] != 6 || ihl < 20 || len(pkt) < ihl+4 {
			t.Fatalf("accepted a packet that is not a first TCP fragment with ports: % x", pkt)
		}
		if src != binary.BigEndian.Uint16(pkt[ihl:]) || dst != binary.BigEndian.Uint16(pkt[ihl+2:]) {
			t.Errorf("ports %d, %d, not the header's", src, dst)
		}
	})
}

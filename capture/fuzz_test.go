package capture

import (
	"testing"
)

// FuzzUDPFrame: no frame of any link type panics the parser, and what it
// returns lies inside the frame.
func FuzzUDPFrame(f *testing.F) {
	payload := []byte{0x40, 0, 0, 0, 1, 0, 1}
	f.Add(uint8(0), ether(ipUDP(f, src4, dst4, payload, nil), 1))
	f.Add(uint8(0), ether(ipUDP(f, src6, dst6, payload, nil), 0))
	f.Add(uint8(2), ipUDP(f, src4, dst4, payload, nil))
	types := []LinkType{LinkEthernet, LinkLinuxSLL, LinkRaw, LinkNull, LinkLoop, LinkIPv4, LinkIPv6, LinkSLL2}
	f.Fuzz(func(t *testing.T, which uint8, frame []byte) {
		_, _, p, _, ok := udpFrame(types[int(which)%len(types)], frame)
		if ok && len(p) > len(frame) {
			t.Fatalf("payload of %d bytes from a %d-byte frame", len(p), len(frame))
		}
	})
}

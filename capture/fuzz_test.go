package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
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

// FuzzReader: no byte string panics the pcap/pcapng reader or makes it
// loop; a broken capture's offset lies inside the input, every frame is
// counted once, and the error stays.
func FuzzReader(f *testing.F) {
	frame := ether(ipUDP(f, src4, dst4, []byte{0x40, 0, 0, 0, 1, 0, 1}, nil), 0)
	le, be := binary.LittleEndian, binary.BigEndian
	f.Add(pcapFile(f, le, 65535, frame, frame[:20]))
	f.Add(pcapFile(f, be, 65535, frame))
	f.Add(cat(ngSection(le), ngIface(le, LinkEthernet, 9, 0), ngEPB(le, 0, 1, frame), ngIface(le, 147, 0, 0), ngEPB(le, 1, 2, frame)))
	f.Add(cat(ngSection(be), ngIface(be, LinkEthernet, 0x8A, 60), ngEPB(be, 0, 1, frame), ngSection(le), ngIface(le, LinkRaw, 0, 0)))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(bytes.NewReader(data), nil)
		if err != nil {
			return
		}
		n := 0
		for ; ; n++ {
			if n > len(data)/16 {
				t.Fatalf("%d datagrams from %d bytes", n, len(data))
			}
			if _, err = r.Next(); err != nil {
				break
			}
		}
		var be *BrokenError
		if errors.As(err, &be) && (be.Offset < 0 || !be.Uncompressed && be.Offset > int64(len(data)) || be.Frames != r.Stats().Frames) {
			t.Fatalf("%v: offset %d of %d bytes, %d frames counted", err, be.Offset, len(data), r.Stats().Frames)
		}
		if be == nil && !errors.Is(err, io.EOF) {
			t.Fatalf("%v: neither the end nor a *BrokenError", err)
		}
		st := r.Stats()
		skipped := uint64(0)
		for _, s := range st.Skipped {
			skipped += s
		}
		if st.Datagrams != uint64(n) || st.Frames != st.Datagrams+skipped {
			t.Fatalf("%d datagrams returned, stats %+v", n, st)
		}
		if _, again := r.Next(); again != err {
			t.Fatalf("error not sticky: %v, then %v", err, again)
		}
	})
}

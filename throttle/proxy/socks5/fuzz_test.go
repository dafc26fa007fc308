package socks5

import (
	"bytes"
	"net/netip"
	"testing"
)

// Seeds are the messages real clients send: curl 8 (greetings with and
// without --proxy-user, CONNECT by IP and by --socks5-hostname), PySocks
// 1.7 (UDP ASSOCIATE declaring its bound port) and the Second Life viewer
// (llproxy.cpp: a greeting offering one method, UDP ASSOCIATE from 0.0.0.0:0).
var handshakeSeeds = [][]byte{
	append([]byte{5, 1, 0}, 5, 1, 0, 1, 127, 0, 0, 1, 0x1f, 0x90),
	append(append([]byte{5, 2, 0, 2, 1, 6}, "viewer\x06secret"...), 5, 1, 0, 3, 9, 'l', 'o', 'c', 'a', 'l', 'h', 'o', 's', 't', 0, 80),
	append([]byte{5, 1, 0}, 5, 3, 0, 1, 0, 0, 0, 0, 0xc3, 0x51),
	append([]byte{5, 1, 0}, 5, 3, 0, 1, 0, 0, 0, 0, 0, 0),
	append([]byte{5, 1, 0}, 5, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x23, 0x28),
}

// FuzzHandshake runs the server's three parsers over arbitrary bytes in
// order: they must never panic, and what they accept must encode back to
// the bytes they read (an IPv4-mapped IPv6 address as IPv4).
func FuzzHandshake(f *testing.F) {
	for _, s := range handshakeSeeds {
		f.Add(s, true)
		f.Add(s[3:], false)
	}
	f.Fuzz(func(t *testing.T, data []byte, userPass bool) {
		r := bytes.NewReader(data)
		methods, err := readGreeting(r)
		if err != nil {
			return
		}
		if len(methods) == 0 || len(methods) > 255 {
			t.Fatalf("greeting with %d methods accepted", len(methods))
		}
		if userPass {
			if _, _, err := readUserPass(r); err != nil {
				return
			}
		}
		start := len(data) - r.Len()
		req, err := readRequest(r)
		if err != nil {
			return
		}
		end := len(data) - r.Len()
		enc := appendAddr([]byte{version5, req.cmd, 0}, req.dst)
		if bytes.Equal(enc, data[start:end]) {
			return
		}
		// The one allowed change: appendAddr writes an IPv4-mapped IPv6
		// address as IPv4, the address a peer would dial.
		back, err := readRequest(bytes.NewReader(enc))
		if !req.dst.IP.Is4In6() || err != nil || back.cmd != req.cmd || back.dst.IP != req.dst.IP.Unmap() || back.dst.Port != req.dst.Port {
			t.Fatalf("request %x re-encodes as %x", data[start:end], enc)
		}
	})
}

// FuzzUDPHeader checks the UDP header parser never panics or reads past
// the datagram, and that an accepted IP header re-encodes as read.
func FuzzUDPHeader(f *testing.F) {
	viewer := []byte{0, 0, 0, 1, 127, 0, 0, 1, 0x23, 0x28}
	// An LLUDP UseCircuitCode-like payload behind the viewer's 10 bytes.
	f.Add(append(bytes.Clone(viewer), 0x40, 0, 0, 0, 1, 0, 0xff, 0xff, 0, 3))
	f.Add([]byte{0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x23, 0x28, 'x'})
	f.Add(append([]byte{0, 0, 0, 3, 9}, "localhost\x23\x28data"...))
	f.Add([]byte{0, 0, 1, 1, 127, 0, 0, 1, 0, 80})
	f.Add([]byte{0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		dst, off, err := parseUDPHeader(data)
		if err != nil {
			return
		}
		shortest := udpHeaderIPv4
		if dst.Name != "" {
			shortest = 4 + 1 + 1 + 2
		}
		if off > len(data) || off < shortest {
			t.Fatalf("payload offset %d for %d bytes", off, len(data))
		}
		if dst.Name != "" {
			return
		}
		ap := netip.AddrPortFrom(dst.IP, dst.Port)
		if dst.IP.Is4In6() {
			return // written back as IPv4 by design
		}
		hdr := make([]byte, udpHeaderLen(ap))
		putUDPHeader(hdr, ap)
		if !bytes.Equal(hdr[2:], data[2:off]) {
			t.Fatalf("header %x re-encodes as %x", data[:off], hdr)
		}
	})
}

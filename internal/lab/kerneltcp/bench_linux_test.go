//go:build linux

package kerneltcp

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
)

// BenchmarkForwarder: how many packets a second the path through the lab
// carries (TUN read, bottleneck, TUN write, and the kernel on both ends),
// against the same sockets over loopback in the same run. A window of
// datagrams goes out, then the receiver reads them all: the window stays
// far below the device ring (500) and the socket buffer, so nothing may
// be lost, and a loss fails the benchmark. The bottleneck is unlimited
// and without delay, so only the per-packet cost is measured.
func BenchmarkForwarder(b *testing.B) {
	const (
		window  = 64
		payload = 1400 // with IPv4 and UDP headers, 1,428 bytes: near the MTU, as bulk TCP
	)
	run := func(b *testing.B, send, recv *net.UDPConn, to netip.AddrPort) {
		out := make([]byte, payload)
		in := make([]byte, 2*payload)
		b.SetBytes(payload)
		b.ResetTimer()
		for i := 0; i < b.N; i += window {
			n := min(window, b.N-i)
			for range n {
				if _, err := send.WriteToUDPAddrPort(out, to); err != nil {
					b.Fatal(err)
				}
			}
			// A deadline, not a sleep: a lost datagram must fail, not hang.
			recv.SetReadDeadline(time.Now().Add(5 * time.Second))
			for got := range n {
				if _, err := recv.Read(in); err != nil {
					if errors.Is(err, os.ErrDeadlineExceeded) {
						b.Fatalf("%d of %d datagrams lost", n-got, n)
					}
					b.Fatal(err)
				}
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "packets/s")
	}
	b.Run("loopback", func(b *testing.B) {
		recv, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			b.Fatal(err)
		}
		defer recv.Close()
		send, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			b.Fatal(err)
		}
		defer send.Close()
		run(b, send, recv, recv.LocalAddr().(*net.UDPAddr).AddrPort())
	})
	b.Run("lab", func(b *testing.B) {
		r := startLab(b, link.PipeConfig{})
		var recv, send *net.UDPConn
		listen := func(ns *os.File, addr netip.Addr, conn **net.UDPConn) {
			if err := inNamespace(ns, func() error {
				var err error
				*conn, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
				return err
			}); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { (*conn).Close() })
		}
		listen(r.lab.ns[server], ServerAddr, &recv)
		listen(r.lab.ns[client], ClientAddr, &send)
		run(b, send, recv, recv.LocalAddr().(*net.UDPAddr).AddrPort())
	})
}

//go:build unix

package socks5

import (
	"context"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"
)

// nopHooks is the lightest hook: the cost of the hook interface itself.
type nopHooks struct{}

func (nopHooks) ClientDatagram(_ *Association, _ netip.AddrPort, p []byte, _ time.Time) []byte {
	return p
}
func (nopHooks) RemoteDatagram(*Association, netip.AddrPort, []byte, time.Time) {}
func (nopHooks) AssociationClosed(*Association)                                 {}

// benchWindow datagrams are kept in flight so that the relay, not the
// round trip, is what the benchmark waits on.
const benchWindow = 8

// BenchmarkRelay measures a datagram's round trip client -> relay -> UDP
// echo -> relay -> client with benchWindow in flight, through the SOCKS5
// proxy and, as the baseline of the same run, through a plain UDP relay of
// the same shape (two sockets, two goroutines, no header, no hooks). Each
// op relays two datagrams. datagrams/cpu-s divides by the whole process's
// CPU time (client and echo included in both), the per-core figure.
func BenchmarkRelay(b *testing.B) {
	payload := make([]byte, 120) // a typical LLUDP datagram (protocol.md §13.1: 223,621 B / 1,811)
	b.Run("plain", func(b *testing.B) {
		echo := benchEcho(b)
		relay := plainRelay(b, addrPortOf(echo.LocalAddr()))
		pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			b.Fatal(err)
		}
		defer pc.Close()
		send := func() error { _, err := pc.WriteToUDPAddrPort(payload, relay); return err }
		recv := func(buf []byte) error { _, _, err := pc.ReadFromUDPAddrPort(buf); return err }
		runWindow(b, pc, send, recv)
	})
	b.Run("socks5", func(b *testing.B) {
		echo := benchEcho(b)
		srv := startServer(b, Config{Hooks: nopHooks{}})
		c, err := DialUDP(context.Background(), srv.addr, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		dst := addrPortOf(echo.LocalAddr())
		send := func() error { _, err := c.WriteToUDPAddrPort(payload, dst); return err }
		recv := func(buf []byte) error { _, _, err := c.ReadFromUDPAddrPort(buf); return err }
		runWindow(b, c, send, recv)
	})
}

type deadliner interface{ SetReadDeadline(time.Time) error }

func runWindow(b *testing.B, d deadliner, send func() error, recv func([]byte) error) {
	buf := make([]byte, 2048)
	d.SetReadDeadline(time.Now().Add(time.Minute))
	for range benchWindow {
		if err := send(); err != nil {
			b.Fatal(err)
		}
	}
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		if err := recv(buf); err != nil {
			b.Fatalf("a datagram was lost or the relay stalled: %v", err)
		}
		if err := send(); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := b.Elapsed()
	cpu := cpuTime() - cpu0
	b.StopTimer()
	for range benchWindow {
		recv(buf)
	}
	b.ReportMetric(float64(2*b.N)/elapsed.Seconds(), "datagrams/s")
	if cpu > 0 {
		b.ReportMetric(float64(2*b.N)/cpu.Seconds(), "datagrams/cpu-s")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchEcho(b *testing.B) *net.UDPConn {
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	b.Cleanup(func() { pc.Close(); <-done })
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			pc.WriteToUDPAddrPort(buf[:n], from)
		}
	}()
	return pc
}

// plainRelay forwards datagrams from the first client that writes to it to
// target, and target's answers back: a UDP relay with nothing of SOCKS.
func plainRelay(b *testing.B, target netip.AddrPort) netip.AddrPort {
	front, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	back, err := net.ListenUDP("udp", nil)
	if err != nil {
		b.Fatal(err)
	}
	client := make(chan netip.AddrPort, 1)
	done := make(chan struct{}, 2)
	b.Cleanup(func() { front.Close(); back.Close(); <-done; <-done })
	go func() {
		defer func() { done <- struct{}{} }()
		buf := make([]byte, 2048)
		known := false
		for {
			n, from, err := front.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			if !known {
				client <- from
				known = true
			}
			back.WriteToUDPAddrPort(buf[:n], target)
		}
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		buf := make([]byte, 2048)
		var to netip.AddrPort
		for {
			n, _, err := back.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			if !to.IsValid() {
				to = <-client
			}
			front.WriteToUDPAddrPort(buf[:n], to)
		}
	}()
	return addrPortOf(front.LocalAddr())
}

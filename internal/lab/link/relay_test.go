package link

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// echoServer answers every datagram with itself and counts senders.
func echoServer(t *testing.T) (netip.AddrPort, func() map[netip.AddrPort]int) {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var mu sync.Mutex
	from := map[netip.AddrPort]int{}
	go func() {
		buf := make([]byte, 65536)
		for {
			n, addr, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			mu.Lock()
			from[addr]++
			mu.Unlock()
			c.WriteToUDPAddrPort(buf[:n], addr)
		}
	}()
	return c.LocalAddr().(*net.UDPAddr).AddrPort(), func() map[netip.AddrPort]int {
		mu.Lock()
		defer mu.Unlock()
		out := map[netip.AddrPort]int{}
		for k, v := range from {
			out[k] = v
		}
		return out
	}
}

// TestRelayLoopback: through a relay with 10 % loss each way, every count
// adds up: what the viewer sent is forwarded or dropped, the simulator saw
// what was forwarded up, the viewer got what was forwarded down; two
// viewers reach the simulator from two ports.
func TestRelayLoopback(t *testing.T) {
	sim, seen := echoServer(t)
	var tapMu sync.Mutex
	tapped := map[bool]int{}
	r, err := New(Config{
		Listen:   netip.MustParseAddrPort("127.0.0.1:0"),
		Upstream: sim,
		Down:     PipeConfig{Loss: 0.1, Delay: 5 * time.Millisecond},
		Up:       PipeConfig{Loss: 0.1, Delay: 5 * time.Millisecond, Rate: 10_000_000},
		Seed:     42,
		Tap: func(d Datagram) {
			tapMu.Lock()
			tapped[d.Up]++
			tapMu.Unlock()
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	const n = 1000
	received := 0
	for v := range 2 {
		c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(r.Addr()))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// Bursts of 50, each followed by reading its echoes until the link
		// is quiet, so no socket buffer overflows: the kernel's drops would
		// not be the emulator's.
		buf := make([]byte, 100)
		for i := range n / 2 {
			if _, err := c.Write([]byte{byte(v), byte(i), byte(i >> 8), 'x'}); err != nil {
				t.Fatal(err)
			}
			if i%50 != 49 {
				continue
			}
			for {
				c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
				if _, err := c.Read(buf); err != nil {
					break
				}
				received++
			}
		}
	}
	down, up := r.Stats()
	simSaw := seen()
	total := 0
	for _, k := range simSaw {
		total += k
	}
	t.Logf("up %+v, down %+v, sim saw %d from %d ports, viewers got %d", up, down, total, len(simSaw), received)
	if up.Forwarded+up.DroppedRandom+up.DroppedQueue != n || uint64(total) != up.Forwarded {
		t.Errorf("up: %d forwarded + %d dropped of %d sent; the simulator saw %d", up.Forwarded, up.DroppedRandom, n, total)
	}
	if down.Forwarded+down.DroppedRandom != up.Forwarded || uint64(received) != down.Forwarded {
		t.Errorf("down: %d forwarded + %d dropped of %d echoed; viewers got %d", down.Forwarded, down.DroppedRandom, up.Forwarded, received)
	}
	if up.DroppedRandom < 60 || up.DroppedRandom > 140 || len(simSaw) != 2 {
		t.Errorf("%d random drops of %d (want ~100); %d upstream ports (want 2)", up.DroppedRandom, n, len(simSaw))
	}
	tapMu.Lock()
	defer tapMu.Unlock()
	if tapped[true] != n || tapped[false] != received {
		t.Errorf("tap saw %d up and %d down", tapped[true], tapped[false])
	}
}

package link

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
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

// TestRelaySharedBottleneck: with a shared bottleneck, the relay's
// datagrams cross it as the viewer's flows, counted there and in the
// relay's Stats alike, and they queue behind another flow's packets in
// the same direction: a 30 KB burst ahead of them on a 1 Mbit/s downlink
// delays the echo by its 240 ms of serialisation.
func TestRelaySharedBottleneck(t *testing.T) {
	sim, seen := echoServer(t)
	b, err := NewBottleneck(BottleneckConfig{
		Up:   PipeConfig{Delay: 5 * time.Millisecond, Loss: 0.1},
		Down: PipeConfig{Rate: 1_000_000 / 8, Delay: 5 * time.Millisecond, Buffer: 100},
		Seed: 42,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	filler, err := b.AddFlow(FlowConfig{Name: "filler", Dir: Down, Deliver: func([]byte) {}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Upstream: sim, Shared: b, Up: PipeConfig{Delay: time.Second}}, nil); err == nil || !strings.Contains(err.Error(), "shared bottleneck") {
		t.Errorf("own pipes beside a shared bottleneck: %v", err)
	}
	r, err := New(Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Upstream: sim, Shared: b}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { b.Run(ctx) })
	wg.Go(func() { r.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()

	c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(r.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 100
	received := 0
	buf := make([]byte, 100)
	for i := range n {
		if _, err := c.Write([]byte{byte(i), 'x'}); err != nil {
			t.Fatal(err)
		}
		// One at a time, so every echo that comes back is read.
		c.SetReadDeadline(time.Now().Add(60 * time.Millisecond))
		if _, err := c.Read(buf); err == nil {
			received++
		}
	}
	// The burst, then one more datagram: its echo waits behind the burst.
	for range 20 {
		b.Send(filler, make([]byte, 1500))
	}
	sent := time.Now()
	c.Write([]byte{0xff, 'x'})
	// An echo that missed its deadline above may still come: skip it.
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	for {
		var k int
		if k, err = c.Read(buf); err != nil || k == 2 && buf[0] == 0xff {
			break
		}
	}
	rtt := time.Since(sent)

	st := b.Stats()
	viewer := netip.MustParseAddrPort(c.LocalAddr().String())
	upFlow, ok1 := st.Flow("lludp " + viewer.String() + " up")
	downFlow, ok2 := st.Flow("lludp " + viewer.String() + " down")
	if !ok1 || !ok2 {
		t.Fatalf("no flows for %v in %+v", viewer, st.Flows)
	}
	down, up := r.Stats()
	total := 0
	for _, k := range seen() {
		total += k
	}
	if err != nil {
		// A 10 % loss up may take the last datagram: then only the
		// counts can be checked.
		t.Logf("the last datagram was lost (%v)", err)
	} else if rtt < 240*time.Millisecond || rtt > time.Second {
		t.Errorf("echo behind the burst after %v, want 250 ms and a little", rtt)
	}
	if upFlow.Arrived != n+1 || up.Forwarded+up.DroppedRandom != n+1 || up.Forwarded != upFlow.Arrived-upFlow.Dropped() || uint64(total) != upFlow.Delivered {
		t.Errorf("up: flow %d arrived, %d delivered, %d dropped; relay %+v; the simulator saw %d", upFlow.Arrived, upFlow.Delivered, upFlow.Dropped(), up, total)
	}
	if downFlow.Arrived != uint64(total) || down.Forwarded != downFlow.Arrived || uint64(received)+1 < downFlow.Delivered || up.DroppedRandom < 2 || up.DroppedRandom > 25 {
		t.Errorf("down: flow %d arrived, %d delivered; relay %+v; the viewer got %d", downFlow.Arrived, downFlow.Delivered, down, received)
	}
	if downFlow.ArrivedBytes != 30*uint64(total) {
		t.Errorf("down: %d bytes for %d datagrams of 2 bytes, want 30 each on the wire", downFlow.ArrivedBytes, total)
	}
}

// TestRelayReadFailure: a relay whose listening socket fails (here closed
// under it) returns the failure at once instead of running on deaf until
// its context ends.
func TestRelayReadFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, err := New(Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Upstream: netip.MustParseAddrPort("127.0.0.1:9")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		r.conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start := time.Now()
		if err := r.Run(ctx); !errors.Is(err, net.ErrClosed) {
			t.Errorf("Run = %v, want the read's failure", err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("Run returned after %v", d)
		}
	})
}

// TestRelaySharedNames: one viewer socket reaching two simulators through
// two relays on one bottleneck (a root region and a neighbour) has a
// flow each way through each relay when the second is named; unnamed,
// the second relay's flows clash with the first's and carry nothing.
func TestRelaySharedNames(t *testing.T) {
	for _, named := range []bool{true, false} {
		b, err := NewBottleneck(BottleneckConfig{Down: PipeConfig{Delay: time.Millisecond}, Up: PipeConfig{Delay: time.Millisecond}, Seed: 1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var relays []*Relay
		for i := range 2 {
			sim, _ := echoServer(t)
			cfg := Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Upstream: sim, Shared: b}
			if named && i == 1 {
				cfg.Name = "neighbour"
			}
			r, err := New(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			relays = append(relays, r)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { b.Run(ctx) })
		for _, r := range relays {
			wg.Go(func() { r.Run(ctx) })
		}
		c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 100)
		echoed := 0
		for _, r := range relays {
			if _, err := c.WriteToUDPAddrPort([]byte{1, 'x'}, r.Addr()); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(time.Second))
			if _, err := c.Read(buf); err == nil {
				echoed++
			}
		}
		viewer := netip.MustParseAddrPort(c.LocalAddr().String())
		st := b.Stats()
		cancel()
		wg.Wait()
		c.Close()
		_, second := st.Flow("lludp " + viewer.String() + " neighbour down")
		if named && (echoed != 2 || !second) {
			t.Errorf("named: %d of 2 echoed, the second relay's flow there: %v; flows %+v", echoed, second, st.Flows)
		}
		if !named && echoed != 1 {
			t.Errorf("unnamed: %d of 2 echoed, want the first relay's alone", echoed)
		}
	}
}

package viewer

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim/region"
	"golang.org/x/sys/unix"
)

// TestFleetAddr: each viewer of a shared fleet has an address of its own
// in 127.0.0.0/8, outside 127.0.0.x, never .0 or .255, at most 250 to a
// /24, and the address says which viewer it is.
func TestFleetAddr(t *testing.T) {
	tests := []struct {
		i    int
		addr string
	}{
		{0, "127.1.0.1"},
		{1, "127.1.0.2"},
		{249, "127.1.0.250"},
		{250, "127.1.1.1"},
		{63999, "127.1.255.250"},
		{64000, "127.2.0.1"},
		{maxFleet - 1, "127.254.255.250"},
	}
	for _, tt := range tests {
		a := fleetAddr(tt.i)
		if a.String() != tt.addr {
			t.Errorf("fleetAddr(%d) = %v, want %s", tt.i, a, tt.addr)
		}
		if i, ok := fleetIndex(a.As4()); !ok || i != tt.i {
			t.Errorf("fleetIndex(%v) = %d, %v; want %d", a, i, ok, tt.i)
		}
	}
	for _, s := range []string{"127.0.0.1", "127.0.5.1", "127.1.0.0", "127.1.0.251", "127.1.0.255", "127.255.255.255", "10.1.0.1"} {
		if i, ok := fleetIndex(netip.MustParseAddr(s).As4()); ok {
			t.Errorf("fleetIndex(%s) = %d, want no viewer", s, i)
		}
	}
	seen := map[netip.Addr]bool{}
	perPrefix := map[netip.Prefix]int{}
	for i := range 3 * fleetPerSecond {
		a := fleetAddr(i)
		b := a.As4()
		if seen[a] || !a.IsLoopback() || b[1] == 0 || b[3] == 0 || b[3] == 255 {
			t.Fatalf("viewer %d: address %v (taken before: %v)", i, a, seen[a])
		}
		seen[a] = true
		p, _ := a.Prefix(24)
		if perPrefix[p]++; perPrefix[p] > fleetPerPrefix {
			t.Fatalf("more than %d viewers in %v", fleetPerPrefix, p)
		}
	}
}

// TestParseFleet: the flag's names, and a clear error for others.
func TestParseFleet(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Fleet
		err  bool
	}{
		{"auto", FleetAuto, false},
		{"shared", FleetShared, false},
		{"per-viewer", FleetPerViewer, false},
		{"", "", true},
		{"Shared", "", true},
		{"sockets", "", true},
	} {
		got, err := ParseFleet(tt.in)
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("ParseFleet(%q) = %q, %v", tt.in, got, err)
		}
		if err != nil && !strings.Contains(err.Error(), "per-viewer") {
			t.Errorf("ParseFleet(%q): %v does not list the names", tt.in, err)
		}
	}
}

// fakeRegion is a bare UDP socket in the region's place, so the test sees
// exactly what the fleet sends and controls what it receives.
func fakeRegion(t *testing.T) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readPacket reads one LLUDP datagram, failing the test after a second.
func readPacket(t *testing.T, c *net.UDPConn) (lludp.Packet, netip.AddrPort) {
	t.Helper()
	buf := make([]byte, 2048)
	c.SetReadDeadline(time.Now().Add(time.Second))
	n, from, err := c.ReadFromUDPAddrPort(buf)
	if err != nil {
		t.Fatalf("the region's socket: %v", err)
	}
	var p lludp.Packet
	if err := p.DecodeFromBytes(buf[:n]); err != nil {
		t.Fatalf("from %v: %v", from, err)
	}
	return p, from
}

// TestSharedFleetEndpoints drives a shared fleet against a bare socket on
// loopback: each viewer's datagrams leave from its own address, and what
// is sent to a viewer's address reaches that viewer and no other; what
// comes from elsewhere than the region, or to an address no viewer has,
// reaches none.
func TestSharedFleetEndpoints(t *testing.T) {
	sim := fakeRegion(t)
	simAddr := sim.LocalAddr().(*net.UDPAddr).AddrPort()
	const n = 12
	shared, err := openShared(simAddr, n)
	if err != nil {
		t.Fatalf("no shared fleet on this Linux: %v", err)
	}
	f := shared.(*sharedFleet)
	defer f.close()
	vs := make([]*Viewer, n)
	for i := range vs {
		cfg := Config{Sim: simAddr, CircuitCode: uint32(100 + i), Stress: true}.withDefaults()
		if vs[i], err = newViewer(cfg, nil, f.endpoint(i)); err != nil {
			t.Fatal(err)
		}
	}
	for s, sock := range f.sockets {
		for i := s; i < n; i += len(f.sockets) {
			sock.members = append(sock.members, vs[i])
		}
	}
	flush := func() {
		for _, sock := range f.sockets {
			sock.flush()
		}
	}
	want := func(i int) netip.AddrPort { return netip.AddrPortFrom(fleetAddr(i), f.sockets[i%len(f.sockets)].port) }

	// Logins: each UseCircuitCode from its viewer's own endpoint.
	now := time.Now()
	for _, v := range vs {
		v.login(now)
	}
	flush()
	from := map[netip.AddrPort]bool{}
	for range n {
		p, src := readPacket(t, sim)
		var m lludp.UseCircuitCode
		if p.ID != lludp.UseCircuitCodeID || p.Unmarshal(&m) != nil {
			t.Fatalf("from %v: message %v, want UseCircuitCode", src, p.ID)
		}
		if i := int(m.Code) - 100; src != want(i) {
			t.Errorf("viewer %d's UseCircuitCode came from %v, want %v", i, src, want(i))
		}
		from[src] = true
	}
	if len(from) != n {
		t.Errorf("%d viewers sent from %d endpoints", n, len(from))
	}

	// A stranger's ping to viewer 0, and the region's to an address no
	// viewer has, go unanswered; the region's ping to each viewer is
	// answered by that viewer, from its address.
	stranger := fakeRegion(t)
	send := func(c *net.UDPConn, to netip.AddrPort, id uint8) {
		b, err := lludp.AppendMessage(nil, lludp.Header{Sequence: uint32(id) + 1}, &lludp.StartPingCheck{PingID: id}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.WriteToUDPAddrPort(b, to); err != nil {
			t.Fatal(err)
		}
	}
	const strangers, nobody = 200, 201
	send(stranger, want(0), strangers)
	send(sim, netip.AddrPortFrom(fleetAddr(n+3), f.sockets[0].port), nobody)
	for i := range n {
		send(sim, want(i), uint8(i))
	}
	answered := map[uint8]bool{}
	deadline := time.Now().Add(5 * time.Second)
	for len(answered) < n && time.Now().Before(deadline) {
		for _, sock := range f.sockets {
			if err := sock.wait(time.Now().Add(20 * time.Millisecond)); err != nil {
				t.Fatal(err)
			}
		}
		flush()
		sim.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		buf := make([]byte, 2048)
		for {
			k, src, err := sim.ReadFromUDPAddrPort(buf)
			if err != nil {
				break
			}
			var p lludp.Packet
			var m lludp.CompletePingCheck
			if p.DecodeFromBytes(buf[:k]) != nil || p.ID != lludp.CompletePingCheckID || p.Unmarshal(&m) != nil {
				continue // an ack or a resend of the login
			}
			switch {
			case m.PingID == strangers || m.PingID == nobody:
				t.Errorf("ping %d was answered, from %v", m.PingID, src)
			case int(m.PingID) >= n:
				t.Errorf("an answer to ping %d, which nobody sent", m.PingID)
			case src != want(int(m.PingID)):
				t.Errorf("the ping sent to viewer %d was answered from %v, want %v", m.PingID, src, want(int(m.PingID)))
			}
			answered[m.PingID] = true
		}
	}
	if len(answered) != n {
		t.Errorf("%d of %d pings answered", len(answered), n)
	}
	if failed, err := f.sendFailures(); failed != 0 {
		t.Errorf("%d datagrams refused: %v", failed, err)
	}
}

// TestSharedFleetRegion: a stress step on a shared fleet against the
// region logs every viewer in and out, times echoes, and the region sees
// one endpoint per viewer, each at the viewer's own fleet address.
func TestSharedFleetRegion(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: a long end-to-end run in real time")
	}
	var mu sync.Mutex
	endpoints := map[netip.AddrPort]bool{}
	sim := startRegion(t, region.Config{Activity: region.Idle, Stress: region.StressConfig{Enabled: true},
		OnThrottle: func(addr netip.AddrPort, _ float64, _ int64, _ time.Time) {
			mu.Lock()
			endpoints[addr] = true
			mu.Unlock()
		}})
	const n = 30
	res, err := RunStress(context.Background(), StressOptions{Sim: sim.Addr(), Viewers: n, Duration: 3 * time.Second,
		Warmup: 1500 * time.Millisecond, FirstCode: 9000, World: 60, Fleet: FleetShared})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	if res.Fleet != FleetShared || res.LoggedIn != n || res.Echoes == 0 {
		t.Errorf("%+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	addrs := map[netip.Addr]bool{}
	for e := range endpoints {
		if _, ok := fleetIndex(e.Addr().As4()); !ok {
			t.Errorf("the region saw %v, not a fleet address", e)
		}
		addrs[e.Addr()] = true
	}
	if len(endpoints) != n || len(addrs) != n {
		t.Errorf("the region saw %d endpoints at %d addresses, want %d of each", len(endpoints), len(addrs), n)
	}
	if k := sim.Counters(); k.LoggedOut != n {
		t.Errorf("%d of %d viewers logged out", k.LoggedOut, n)
	}
}

// TestFleetChoice: shared sockets are refused, with the reason, where
// they cannot work; auto then gives each viewer a socket and says why.
func TestFleetChoice(t *testing.T) {
	for _, sim := range []string{"10.0.0.1:9000", "[::1]:9000", "[::ffff:127.0.0.1]:9000"} {
		_, err := RunStress(context.Background(), StressOptions{Sim: netip.MustParseAddrPort(sim), Viewers: 2,
			Duration: 5 * time.Second, Fleet: FleetShared})
		if err == nil || !strings.Contains(err.Error(), "IPv4 loopback") {
			t.Errorf("shared fleet for a region at %s: %v, want a refusal naming IPv4 loopback", sim, err)
		}
	}
	if _, err := RunStress(context.Background(), StressOptions{Sim: netip.MustParseAddrPort("127.0.0.1:9"), Viewers: 2,
		Duration: 5 * time.Second, Fleet: "both"}); err == nil || !strings.Contains(err.Error(), `"both"`) {
		t.Errorf("fleet \"both\": %v", err)
	}
	probe, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		t.Skipf("no IPv6 loopback here for the fallback: %v", err)
	}
	probe.Close()
	sim := startRegion(t, region.Config{Listen: netip.MustParseAddrPort("[::1]:0"), Activity: region.Idle,
		Stress: region.StressConfig{Enabled: true}})
	res, err := RunStress(context.Background(), StressOptions{Sim: sim.Addr(), Viewers: 4, Duration: 2 * time.Second,
		Warmup: time.Second, FirstCode: 9100, World: 40})
	if err != nil || res.Fleet != FleetPerViewer || !strings.Contains(res.FleetFallback, "IPv4 loopback") || res.LoggedIn != 4 {
		t.Errorf("auto over IPv6: %+v, %v", res, err)
	}
}

// FuzzPktinfoDst: whatever the control messages, pktinfoDst neither
// panics nor reads past them, and where x/sys parses them it finds the
// same destination. Seeded with what this kernel delivered to the probe.
func FuzzPktinfoDst(f *testing.F) {
	sock, err := openSharedSocket(netip.MustParseAddrPort("127.0.0.1:9"), 0, 1)
	if err == nil {
		real, rerr := receivedControl(sock)
		sock.close()
		if rerr == nil {
			f.Add(real)
			f.Add(append(append([]byte(nil), real...), real...))
			f.Add(real[:len(real)-1])
		}
	}
	f.Add(pktinfoCmsg([4]byte{127, 1, 0, 2}))
	f.Add([]byte{})
	f.Add(make([]byte, unix.CmsgLen(0)))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := pktinfoDst(b)
		msgs, err := unix.ParseSocketControlMessage(b)
		if err != nil {
			return
		}
		for _, m := range msgs {
			if m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_PKTINFO && len(m.Data) >= unix.SizeofInet4Pktinfo {
				want := [4]byte(m.Data[8:12]) // ipi_addr
				if !ok || got != want {
					t.Errorf("pktinfoDst = %v, %v; x/sys finds %v", got, ok, want)
				}
				return
			}
		}
		if ok {
			t.Errorf("pktinfoDst found %v where x/sys finds no IP_PKTINFO", got)
		}
	})
}

// receivedControl sends a datagram between two fleet addresses on sock
// and returns the control messages the kernel delivered with it.
func receivedControl(sock *sharedSocket) ([]byte, error) {
	to := &unix.SockaddrInet4{Port: int(sock.port), Addr: fleetAddr(1).As4()}
	var ctl []byte
	var opErr error
	err := sock.rc.Write(func(fd uintptr) bool {
		opErr = unix.Sendmsg(int(fd), []byte("seed"), pktinfoCmsg(fleetAddr(0).As4()), to, 0)
		return true
	})
	if err = errors.Join(err, opErr); err != nil {
		return nil, err
	}
	sock.conn.SetReadDeadline(time.Now().Add(time.Second))
	buf, oob := make([]byte, 16), make([]byte, 256)
	err = sock.rc.Read(func(fd uintptr) bool {
		var n int
		_, n, _, _, opErr = unix.Recvmsg(int(fd), buf, oob, 0)
		ctl = oob[:max(n, 0)]
		return opErr != unix.EAGAIN
	})
	return ctl, errors.Join(err, opErr)
}

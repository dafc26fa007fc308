package socks5

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// nopHooks is the lightest hook: the cost of the hook interface itself.
type nopHooks struct{}

func (nopHooks) ClientDatagrams(*Association, []Datagram) {}
func (nopHooks) RemoteDatagrams(*Association, []Datagram) {}
func (nopHooks) AssociationClosed(*Association)           {}

// gatedHooks holds up the relay in its first call of each direction until
// the test opens the gate, so that what the test sends meanwhile queues in
// the socket and the relay reads it in batches. It records each batch's
// size and rewrites as a proxy would: in place, sometimes longer.
type gatedHooks struct {
	clientGate, remoteGate chan struct{}
	clientOnce, remoteOnce sync.Once

	mu          sync.Mutex
	clientSizes []int
	remoteSizes []int
}

func (h *gatedHooks) ClientDatagrams(a *Association, batch []Datagram) {
	h.clientOnce.Do(func() { <-h.clientGate })
	h.mu.Lock()
	h.clientSizes = append(h.clientSizes, len(batch))
	h.mu.Unlock()
	for i, d := range batch {
		switch {
		case bytes.HasPrefix(d.Payload, []byte("grow")):
			// Longer than the original: it must not run into the next
			// datagram of the batch.
			batch[i].Payload = append(d.Payload[:0], bytes.Repeat([]byte("G"), 3*len(d.Payload))...)
		case bytes.HasPrefix(d.Payload, []byte("drop")):
			batch[i].Payload = nil
		}
	}
}

func (h *gatedHooks) RemoteDatagrams(a *Association, batch []Datagram) {
	h.remoteOnce.Do(func() { <-h.remoteGate })
	h.mu.Lock()
	h.remoteSizes = append(h.remoteSizes, len(batch))
	h.mu.Unlock()
}

func (h *gatedHooks) AssociationClosed(*Association) {}

// TestRelayBursts: bursts longer than a batch, with datagrams the hook
// grows or drops and datagrams from a foreign source among them, arrive
// complete and in order both ways, each cause counted, and (on Linux,
// where a read takes a batch) in batches of more than one.
func TestRelayBursts(t *testing.T) {
	hooks := &gatedHooks{clientGate: make(chan struct{}), remoteGate: make(chan struct{})}
	srv := startServer(t, Config{Hooks: hooks})
	sim := udpPeer(t)
	simAddr := addrPortOf(sim.LocalAddr())
	c := dialUDP(t, srv, nil)
	foreign := udpPeer(t)

	// The first datagram opens the relay's first batch, which waits at
	// the gate while the burst queues behind it.
	c.WriteToUDPAddrPort([]byte("first"), simAddr)
	const burst = 3*relayBatch + 5
	want := []string{"first"}
	drops := 0
	for i := range burst {
		p := fmt.Sprintf("datagram %d", i)
		switch i % 7 {
		case 3:
			p = fmt.Sprintf("grow %d", i)
			want = append(want, string(bytes.Repeat([]byte("G"), 3*len(p))))
		case 5:
			p = fmt.Sprintf("drop %d", i)
			drops++
		default:
			want = append(want, p)
		}
		c.WriteToUDPAddrPort([]byte(p), simAddr)
		if i%11 == 0 {
			hdr := make([]byte, udpHeaderIPv4)
			putUDPHeader(hdr, simAddr)
			foreign.WriteToUDPAddrPort(append(hdr, "foreign"...), c.RelayAddr())
		}
	}
	close(hooks.clientGate)
	var relayFrom netip.AddrPort
	for i, w := range want {
		got, from := readOne(t, sim)
		if string(got) != w {
			t.Fatalf("sim's datagram %d: %q, want %q", i, got, w)
		}
		relayFrom = from
	}
	if n, wantN := srv.Dropped(DroppedForeignSource), uint64((burst+10)/11); n != wantN {
		t.Errorf("foreign drops %d, want %d", n, wantN)
	}
	if n := srv.Dropped(DroppedByHook); n != uint64(drops) {
		t.Errorf("hook drops %d, want %d", n, drops)
	}
	if n := srv.stats.datagrams[dirClientToRemote].Load(); n != uint64(len(want)) {
		t.Errorf("relayed client->remote %d, want %d", n, len(want))
	}

	// The other way: a burst from the simulator, each datagram wrapped in
	// the header naming it.
	sim.WriteToUDPAddrPort([]byte("reply first"), relayFrom)
	for i := range burst {
		sim.WriteToUDPAddrPort(fmt.Appendf(nil, "reply %d", i), relayFrom)
	}
	close(hooks.remoteGate)
	buf := make([]byte, 2048)
	for i := -1; i < burst; i++ {
		w := fmt.Sprintf("reply %d", i)
		if i < 0 {
			w = "reply first"
		}
		n, from, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatal(err)
		}
		if string(buf[:n]) != w || from != simAddr {
			t.Fatalf("client's datagram %d: %q from %v, want %q from %v", i+1, buf[:n], from, w, simAddr)
		}
	}
	if n := srv.stats.datagrams[dirRemoteToClient].Load(); n != burst+1 {
		t.Errorf("relayed remote->client %d, want %d", n, burst+1)
	}

	hooks.mu.Lock()
	defer hooks.mu.Unlock()
	if runtime.GOOS == "linux" && (slices.Max(hooks.clientSizes) < 2 || slices.Max(hooks.remoteSizes) < 2) {
		t.Errorf("batches of %v and %v: the bursts were read one datagram at a time", hooks.clientSizes, hooks.remoteSizes)
	}
	for _, sizes := range [][]int{hooks.clientSizes, hooks.remoteSizes} {
		if slices.Max(sizes) > relayBatch {
			t.Errorf("a batch of %d, more than %d", slices.Max(sizes), relayBatch)
		}
	}
}

// TestRelayAllocs: relaying a datagram each way allocates nothing in the
// relay (the test's own side allocates nothing either, so whatever
// testing.AllocsPerRun counts is the relay's).
func TestRelayAllocs(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("the race detector and coverage allocate on their own")
	}
	srv := startServer(t, Config{Hooks: nopHooks{}})
	sim := udpPeer(t)
	simAddr := addrPortOf(sim.LocalAddr())
	c := dialUDP(t, srv, nil)
	payload := make([]byte, 120)
	buf := make([]byte, 2048)
	var relayFrom netip.AddrPort
	roundTrip := func() {
		if _, err := c.WriteToUDPAddrPort(payload, simAddr); err != nil {
			t.Fatal(err)
		}
		_, from, err := sim.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatal(err)
		}
		relayFrom = from
		if _, err := sim.WriteToUDPAddrPort(payload, relayFrom); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.ReadFromUDPAddrPort(buf); err != nil {
			t.Fatal(err)
		}
	}
	roundTrip() // the association's first datagram learns the client's port
	c.SetDeadline(time.Now().Add(time.Minute))
	sim.SetDeadline(time.Now().Add(time.Minute))
	if n := testing.AllocsPerRun(200, roundTrip); n > 0 {
		t.Errorf("%.1f allocations per round trip, want none", n)
	}
}

// pollGateHooks holds up the relay in its first batch of one direction
// on a read of its own UDP socket, gate, so that the relay goroutine
// resumes only when Go's poller reports the gate's datagram. The poller
// reports readiness in the order it happened, so whatever the test sent
// to the relay before opening the gate has been reported too by then.
type pollGateHooks struct {
	client  bool // the client's direction waits, else the remote's
	entered chan struct{}
	gate    *net.UDPConn
	once    sync.Once
}

func (h *pollGateHooks) wait() {
	h.once.Do(func() {
		h.entered <- struct{}{}
		buf := make([]byte, 16)
		h.gate.ReadFromUDPAddrPort(buf)
	})
}

func (h *pollGateHooks) ClientDatagrams(*Association, []Datagram) {
	if h.client {
		h.wait()
	}
}

func (h *pollGateHooks) RemoteDatagrams(*Association, []Datagram) {
	if !h.client {
		h.wait()
	}
}

func (h *pollGateHooks) AssociationClosed(*Association) {}

// TestRelayWakesForDatagramDuringBatch: a datagram that arrives while the
// relay is handling the batch before it, and whose arrival the poller has
// already reported, is relayed at once, not when a later datagram wakes
// the relay. The relay skips the read that would only hear EAGAIN after a
// short batch, which is right only within one RawConn.Read: a new one
// forgets the readiness reported meanwhile, so this one would wait until
// ioDeadline (a lost wake-up; the datagram's latency is the gap to the
// next datagram).
func TestRelayWakesForDatagramDuringBatch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client bool
	}{
		{"client to remote", true},
		{"remote to client", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hooks := &pollGateHooks{client: tc.client, entered: make(chan struct{}, 1), gate: udpPeer(t)}
			srv := startServer(t, Config{Hooks: hooks})
			sim := udpPeer(t)
			simAddr := addrPortOf(sim.LocalAddr())
			c := dialUDP(t, srv, nil)
			buf := make([]byte, 64)

			// The association learns the client's port; the sim learns the
			// relay's.
			c.WriteToUDPAddrPort([]byte("hello"), simAddr)
			var relayFrom netip.AddrPort
			if !tc.client {
				var got []byte
				if got, relayFrom = readOne(t, sim); string(got) != "hello" {
					t.Fatalf("sim read %q, want hello", got)
				}
			}
			send := func(p string) {
				if tc.client {
					c.WriteToUDPAddrPort([]byte(p), simAddr)
				} else {
					sim.WriteToUDPAddrPort([]byte(p), relayFrom)
				}
			}
			entered := func() {
				select {
				case <-hooks.entered:
				case <-time.After(ioDeadline): // a bound on failure, not a wait
					t.Fatal("the relay never called the hook")
				}
			}
			recv := func() string {
				if tc.client {
					got, _ := readOne(t, sim)
					return string(got)
				}
				n, _, err := c.ReadFromUDPAddrPort(buf)
				if err != nil {
					t.Fatalf("client: %v", err)
				}
				return string(buf[:n])
			}
			if !tc.client {
				send("first")
			}
			// The direction's first batch ("hello" or "first") waits at the
			// gate.
			entered()
			send("second")
			hooks.gate.WriteToUDPAddrPort([]byte("open"), addrPortOf(hooks.gate.LocalAddr()))
			want := []string{"hello", "second"}
			if !tc.client {
				want = []string{"first", "second"}
			}
			for _, w := range want {
				if got := recv(); got != w {
					t.Fatalf("read %q, want %q", got, w)
				}
			}
		})
	}
}

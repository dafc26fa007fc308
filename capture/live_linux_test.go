package capture

// Live capture tests: AF_PACKET exists on Linux only (live_linux.go).

import (
	"net"
	"net/netip"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/capture/capturetest"
	"github.com/gopacket/gopacket/afpacket"
)

// TestLiveLoopback captures real datagrams sent over lo, each once.
func TestLiveLoopback(t *testing.T) {
	r, err := OpenLive("lo", Ports{{Lo: 19000, Hi: 19001}})
	if err != nil {
		t.Skipf("live capture on lo needs CAP_NET_RAW (run as root; CI does): %v", err)
	}
	defer r.Close()
	// A watchdog, not a wait: if the filter let nothing through, Next would
	// block forever; closing the socket makes it return an error instead.
	watchdog := time.AfterFunc(30*time.Second, func() { r.Close() })
	defer watchdog.Stop()
	rx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 19000})
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	tx, err := net.DialUDP("udp4", nil, rx.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	noise, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 19500})
	if err != nil {
		t.Fatal(err)
	}
	defer noise.Close()
	const n = 50
	for i := range n {
		noise.Write([]byte("not for us"))
		if _, err := tx.Write([]byte{byte(i), 'l', 'l', 'u', 'd', 'p'}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		d, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if d.Dst.Port() != 19000 || len(d.Payload) != 6 || d.Payload[0] != byte(i) {
			t.Fatalf("datagram %d: %v→%v %q (each should arrive once, in order)", i, d.Src, d.Dst, d.Payload)
		}
	}
	// A last marker: had the outgoing copies passed, one would come first.
	tx.Write([]byte{0xFF, 'e', 'n', 'd'})
	if d, err := r.Next(); err != nil || d.Payload[0] != 0xFF {
		t.Fatalf("after %d datagrams: %v %v, want the end marker", n, d.Payload, err)
	}
	st := r.Stats()
	if st.Datagrams != n+1 || st.KernelDrops != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestLiveInterfaceDownUp: when the interface goes down a blocked read
// returns an error instead of hanging (the daemon then reopens), and a
// capture reopened after it comes back up sees traffic again. It uses a
// veth pair and injects frames on the far end.
func TestLiveInterfaceDownUp(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("creating a veth pair and capturing on it needs root (CI runs as root)")
	}
	ipTool, err := exec.LookPath("ip")
	if err != nil {
		t.Skip("needs the ip tool (iproute2) to create a veth pair")
	}
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(ipTool, args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	exec.Command(ipTool, "link", "del", "fgcap0").Run() // a leftover of an interrupted run
	ip("link", "add", "fgcap0", "type", "veth", "peer", "name", "fgcap1")
	defer exec.Command(ipTool, "link", "del", "fgcap0").Run()
	ip("link", "set", "fgcap0", "up")
	ip("link", "set", "fgcap1", "up")

	inject, err := afpacket.NewTPacket(afpacket.OptInterface("fgcap1"))
	if err != nil {
		t.Fatal(err)
	}
	defer inject.Close()
	frame, err := capturetest.Frame(capturetest.Datagram{
		Src: netip.MustParseAddrPort("192.0.2.1:40000"), Dst: netip.MustParseAddrPort("192.0.2.2:9000"), Payload: []byte("lludp")})
	if err != nil {
		t.Fatal(err)
	}
	// receiveOne injects the frame every 50 ms (a veth carries nothing
	// until both ends have carrier) until r returns it.
	receiveOne := func(r *Reader) {
		t.Helper()
		watchdog := time.AfterFunc(10*time.Second, func() { r.Close() })
		defer watchdog.Stop()
		stop, stopped := make(chan struct{}), make(chan struct{})
		defer func() { close(stop); <-stopped }() // no write after inject closes
		go func() {
			defer close(stopped)
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				inject.WritePacketData(frame)
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		}()
		d, err := r.Next()
		if err != nil || string(d.Payload) != "lludp" {
			t.Fatalf("captured %q, %v; want the injected datagram", d.Payload, err)
		}
	}

	r, err := OpenLive("fgcap0", Ports{{Lo: 9000, Hi: 9000}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	receiveOne(r)
	for { // drain what else was injected, up to the one that blocks
		done := make(chan error, 1)
		go func() { _, err := r.Next(); done <- err }()
		ip("link", "set", "fgcap0", "down")
		select {
		case err = <-done:
		case <-time.After(10 * time.Second):
			r.Close()
			t.Fatal("a read still blocked 10 s after the interface went down")
		}
		if err != nil {
			break
		}
		ip("link", "set", "fgcap0", "up")
	}
	t.Logf("interface down: %v", err)
	r.Close()

	ip("link", "set", "fgcap0", "up")
	r2, err := OpenLive("fgcap0", Ports{{Lo: 9000, Hi: 9000}})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	receiveOne(r2)
}

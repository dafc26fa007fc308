package tcpflow

import (
	"context"
	"math"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
)

// udpEcho answers every datagram with itself until the test ends.
func udpEcho(t *testing.T) netip.AddrPort {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			c.WriteToUDPAddrPort(buf[:n], from)
		}
	}()
	return c.LocalAddr().(*net.UDPAddr).AddrPort()
}

// TestViewerBesideTCP: a viewer's datagrams through link.Relay and a CUBIC
// download share one bottleneck (2 Mbit/s down, 20 ms, 100 packets): alone
// (the first second), the viewer's echoes wait for their own serialisation
// only; beside the download (from 3 s after it starts), they wait in the
// queue it builds, 20 times longer or more, and on average as long as its
// own packets do within 30 % (one FIFO, sampled at the viewer's even pace
// and at the download's bursts). The harm the lab is about, measured by
// the bottleneck itself. How long exactly depends on where HyStart ended
// CUBIC's slow start (runs measured 20 to 280 ms at the median): CUBIC
// takes longer than this test to fill 100 packets, and the scenarios
// measure that.
func TestViewerBesideTCP(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: a long end-to-end run in real time")
	}
	skipUnderRace(t)
	down := link.PipeConfig{Rate: 2_000_000 / 8, Delay: 20 * time.Millisecond, Buffer: 100}
	up := link.PipeConfig{Rate: 512_000 / 8, Delay: 20 * time.Millisecond, Buffer: 100}
	r := newRig(t, up, down, FlowConfig{Name: "download", CC: CUBIC, Start: time.Second})
	relay, err := link.New(link.Config{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Upstream: udpEcho(t), Shared: r.b}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	relayDone := make(chan struct{})
	go func() { relay.Run(ctx); close(relayDone) }()
	defer func() { cancel(); <-relayDone }()
	viewer, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(relay.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer viewer.Close()
	go func() { // the viewer's echoes are only counted by the bottleneck
		buf := make([]byte, 2048)
		for {
			if _, err := viewer.Read(buf); err != nil {
				return
			}
		}
	}()
	// A datagram every 20 ms, as a viewer's agent updates come.
	ticker := time.NewTicker(20 * time.Millisecond)
	defer ticker.Stop()
	name := "lludp " + netip.MustParseAddrPort(viewer.LocalAddr().String()).String() + " down"
	var alone, beside link.FlowReport
	var before link.BottleneckStats
	for start := time.Now(); time.Since(start) < 5*time.Second; {
		<-ticker.C
		viewer.Write(make([]byte, 100))
		switch el := time.Since(start); {
		case before.Flows == nil && el >= 4*time.Second:
			before = r.b.Stats()
		case alone.Name == "" && el >= 950*time.Millisecond:
			alone, _ = r.b.Stats().Flow(name)
		}
	}
	st := r.b.Stats().Since(before)
	beside, _ = st.Flow(name)
	tcp, _ := st.Flow("download down")
	r.stop(t)
	t.Logf("viewer alone: %d datagrams, queue delay p50 %v p95 %v", alone.Delivered, alone.QueueDelay.Quantile(0.5), alone.QueueDelay.Quantile(0.95))
	t.Logf("beside the download (%.0f B/s, its queue delay mean %v): %d datagrams, queue delay mean %v p50 %v p95 %v, %d dropped", tcp.Throughput(), tcp.QueueDelay.Mean(), beside.Delivered, beside.QueueDelay.Mean(), beside.QueueDelay.Quantile(0.5), beside.QueueDelay.Quantile(0.95), beside.Dropped())
	// Alone: a 128-byte datagram takes 0.5 ms at 2 Mbit/s.
	if alone.Delivered < 40 || alone.QueueDelay.Quantile(0.95) > 2*time.Millisecond {
		t.Errorf("alone: %d datagrams, queue delay p95 %v; want about 47 at under 2 ms", alone.Delivered, alone.QueueDelay.Quantile(0.95))
	}
	vm, tm := beside.QueueDelay.Mean(), tcp.QueueDelay.Mean()
	if p50 := beside.QueueDelay.Quantile(0.5); p50 < 20*alone.QueueDelay.Quantile(0.5) || math.Abs(float64(vm-tm)) > 0.3*float64(tm) {
		r.errorf("beside the download: queue delay p50 %v, mean %v; the download's mean %v; want 20 times the %v alone and the means within 30 %%", p50, vm, tm, alone.QueueDelay.Quantile(0.5))
	}
	r.report(t)
}

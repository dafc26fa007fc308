package gateway_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/capture"
	"github.com/fairgrid/fairgrid/internal/benchrelay"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim"
	"github.com/fairgrid/fairgrid/opensim/gateway"
	"github.com/fairgrid/fairgrid/throttle"
)

// benchEnv makes the test binary a relay for BenchmarkGateway, so that
// the relay's own CPU time and memory are measured apart from the load
// generator and the echo: "gateway" is the gateway, "plain" a Go UDP relay
// of the same shape (a socket per viewer towards the target, a goroutine
// reading each) with nothing else, the baseline.
const benchEnv = "FAIRGRID_BENCH_GATEWAY"

func init() {
	kind := os.Getenv(benchEnv)
	if kind == "" {
		return
	}
	target, err := netip.ParseAddrPort(os.Getenv(benchEnv + "_TARGET"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer cancel()
	if dir := os.Getenv(benchEnv + "_PROFILE"); dir != "" {
		// A CPU profile of each child, for finding what the gateway spends
		// beside the plain relay's system calls.
		// Stopped before the exit below, which skips deferred calls.
		f, err := os.CreateTemp(dir, kind+"-*.pprof")
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s_PROFILE: %v\n", benchEnv, err)
			os.Exit(2)
		}
	}
	switch kind {
	case "gateway":
		// Rates high enough that the scheduler runs every datagram through
		// its buckets and fair queuing without holding any back: the
		// figure is its cost, not its pace.
		var rates [opensim.NumChannels]int64
		for ch := range rates {
			rates[ch] = 1 << 20
		}
		g, err := gateway.New(gateway.Config{Routes: []gateway.Route{{Listen: netip.MustParseAddrPort("127.0.0.1:0"), Region: target}},
			Scheduler: opensim.Config{SceneMax: 1 << 33, ClientMax: 1 << 30, DefaultRates: rates, ChannelMax: [opensim.NumChannels]int64{1 << 30, 1 << 30, 1 << 30, 1 << 30, 1 << 30}},
			// The fair rate (which applies from a circuit's first datagram)
			// and each viewer's upstream bound are held as high too: one
			// viewer of the round-trip run sends thousands a second.
			Control: throttle.Config{Min: 1 << 30, Max: 1 << 30}, UpMax: 1 << 30,
			MaxPending: 4096, MaxPerPrefix: 4096}, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("listen=%s\n", g.Addr(0))
		g.Run(ctx)
	case "plain":
		addr, stop, err := plainRelay(target)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("listen=%s\n", addr)
		<-ctx.Done()
		stop()
	}
	pprof.StopCPUProfile()
	os.Exit(0)
}

// plainRelay is the baseline: what the gateway does with its sockets and
// goroutines, without parsing, scheduling or measuring. One goroutine
// reads the public socket and writes each datagram on its client's own
// socket towards target (opened at the client's first datagram); one per
// client reads the answers and writes them back on the public socket.
func plainRelay(target netip.AddrPort) (netip.AddrPort, func(), error) {
	front, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return netip.AddrPort{}, nil, err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	back := map[netip.AddrPort]*net.UDPConn{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 65536)
		for {
			n, from, err := front.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			mu.Lock()
			c := back[from]
			if c == nil {
				if c, err = net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(target)); err != nil {
					mu.Unlock()
					continue
				}
				back[from] = c
				wg.Add(1)
				go func() {
					defer wg.Done()
					rbuf := make([]byte, 65536)
					for {
						n, err := c.Read(rbuf)
						if err != nil {
							if strings.Contains(err.Error(), "closed") {
								return
							}
							continue
						}
						front.WriteToUDPAddrPort(rbuf[:n], from)
					}
				}()
			}
			mu.Unlock()
			c.Write(buf[:n])
		}
	}()
	stop := func() {
		front.Close()
		mu.Lock()
		for _, c := range back {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}
	return front.LocalAddr().(*net.UDPAddr).AddrPort(), stop, nil
}

// benchChild is a relay in a child process.
type benchChild struct {
	*benchrelay.Child
	addr netip.AddrPort
}

func startChild(b *testing.B, kind string, target netip.AddrPort) *benchChild {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchEnv+"="+kind, benchEnv+"_TARGET="+target.String())
	cmd.Stderr = os.Stderr
	c := benchrelay.StartChild(b, kind, cmd, false, func(line string) (string, bool) { return strings.CutPrefix(line, "listen=") })
	return &benchChild{c, netip.MustParseAddrPort(c.Addr)}
}

// rss is the child's resident set now (VmRSS), bytes.
func (c *benchChild) rss(b *testing.B) float64 { return c.Memory(b, "VmRSS") }

func (c *benchChild) stop() {
	c.Cmd.Process.Signal(syscall.SIGTERM)
	c.Cmd.Wait()
}

// benchViewer is one viewer of the load: its socket, and what it sends —
// a UseCircuitCode, then datagrams the echo hands back as the region's,
// which the gateway schedules and measures: reliable ImagePackets of 600
// bytes (the Texture channel), or with mix set the real region's
// datagrams in turn, each eighth followed by a PacketAck of the last
// eight received.
type benchViewer struct {
	conn   *net.UDPConn
	seq    uint32
	offset uint32 // the echo's number less the viewer's own
	acks   []uint32
	mix    [][]byte
}

var benchImage = func() []byte {
	b, _ := lludp.AppendMessage(nil, lludp.Header{Flags: lludp.FlagReliable}, &lludp.ImagePacket{ID: lludp.UUID{3}, Packet: 1, Data: make([]byte, 560)}, nil)
	return b
}()

func (v *benchViewer) next(buf []byte) []byte {
	v.seq++
	if len(v.acks) >= 8 {
		b, _ := lludp.AppendMessage(buf[:0], lludp.Header{Sequence: v.seq}, &lludp.PacketAck{IDs: v.acks}, nil)
		v.acks = v.acks[:0]
		return b
	}
	next := benchImage
	if len(v.mix) > 0 {
		next = v.mix[int(v.seq)%len(v.mix)]
	}
	b := append(buf[:0], next...)
	b[1], b[2], b[3], b[4] = byte(v.seq>>24), byte(v.seq>>16), byte(v.seq>>8), byte(v.seq)
	return b
}

// realRegionMix is what the real OpenSim 0.9.2.2 region sent its viewers
// in the capture in ../shared (every datagram towards a viewer, in order:
// its message mix, sizes, zero coding and appended acks), less what would
// end or re-rate a circuit if a viewer sent it (CloseCircuit,
// LogoutRequest, AgentThrottle, UseCircuitCode). Skipped without the
// capture.
func realRegionMix(b *testing.B) [][]byte {
	p, err := filepath.Abs("../../../shared/testdata/real/opensim-0922-captures/testclient-2x-10min.pcap")
	if err != nil {
		b.Fatal(err)
	}
	ds, err := capture.ReadFile(p, nil)
	if err != nil {
		b.Skipf("the real capture (../shared beside the repository): %v", err)
	}
	var mix [][]byte
	for _, d := range ds {
		h, _, _, err := lludp.ParseHeader(d.Payload)
		if err != nil || d.Src.Port() != 9000 {
			continue
		}
		switch h.ID {
		case lludp.CloseCircuitID, lludp.LogoutRequestID, lludp.AgentThrottleID, lludp.UseCircuitCodeID:
			continue
		}
		mix = append(mix, d.Payload)
	}
	if len(mix) == 0 {
		b.Fatalf("no region datagrams in %s", p)
	}
	return mix
}

// runLoad logs n viewers in at relay and then keeps window datagrams of
// each in flight for d, counting the round trips. With lat set, the round
// trips' durations are kept.
func runLoad(b *testing.B, relay netip.AddrPort, n, window int, d time.Duration, mix [][]byte, lat *[]time.Duration) (trips uint64, settled func()) {
	viewers := make([]*benchViewer, n)
	for i := range viewers {
		c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(relay))
		if err != nil {
			b.Fatal(err)
		}
		viewers[i] = &benchViewer{conn: c, mix: mix}
		login, _ := lludp.AppendMessage(nil, lludp.Header{Flags: lludp.FlagReliable, Sequence: 1},
			&lludp.UseCircuitCode{Code: uint32(i + 1), AgentID: lludp.UUID{1, byte(i), byte(i >> 8)}, SessionID: lludp.UUID{2, byte(i), byte(i >> 8)}}, nil)
		c.Write(login)
		buf := make([]byte, 2048)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		k, err := c.Read(buf)
		if err != nil {
			b.Fatalf("viewer %d: no answer to its login: %v", i, err)
		}
		viewers[i].seq = 1
		if h, _, _, err := lludp.ParseHeader(buf[:k]); err == nil && h.ID == lludp.StartPingCheckID && h.Flags.Reliable() {
			// The gateway's probe of the viewer's address: acked, as a
			// viewer acks it, and then the echo of the login arrives.
			viewers[i].seq = 2
			ack, _ := lludp.AppendMessage(nil, lludp.Header{Sequence: 2}, &lludp.PacketAck{IDs: []uint32{h.Sequence}}, nil)
			c.Write(ack)
			if k, err = c.Read(buf); err != nil {
				b.Fatalf("viewer %d: no answer to its probe's ack: %v", i, err)
			}
		}
		// The echo's numbers as the viewer sees them are the viewer's own
		// plus an offset (the gateway's circuits start at a random one),
		// less one after a probe: its ack is the gateway's, never echoed.
		if h, _, _, err := lludp.ParseHeader(buf[:k]); err == nil {
			viewers[i].offset = h.Sequence - 1
			if viewers[i].seq == 2 {
				viewers[i].offset--
			}
		}
	}
	var count atomic.Uint64
	var latMu sync.Mutex
	var wg sync.WaitGroup
	deadline := time.Now().Add(d)
	for _, v := range viewers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, in := make([]byte, 2048), make([]byte, 2048)
			sent := map[uint32]time.Time{}
			send := func() {
				p := v.next(out)
				if lat != nil {
					sent[v.seq] = time.Now()
				}
				v.conn.Write(p)
			}
			for range window {
				send()
			}
			v.conn.SetReadDeadline(deadline)
			for {
				k, err := v.conn.Read(in)
				if err != nil {
					return
				}
				h, _, _, err := lludp.ParseHeader(in[:k])
				if err == nil && h.Flags.Reliable() {
					v.acks = append(v.acks, h.Sequence)
				}
				if lat != nil {
					if at, ok := sent[h.Sequence-v.offset]; ok {
						latMu.Lock()
						*lat = append(*lat, time.Since(at))
						latMu.Unlock()
						delete(sent, h.Sequence-v.offset)
					}
				}
				count.Add(1)
				send()
			}
		}()
	}
	wg.Wait()
	return count.Load(), func() {
		for _, v := range viewers {
			v.conn.Close()
		}
	}
}

// BenchmarkGateway measures the gateway relaying LLUDP between 1,000
// viewers and an echoing region, with the scheduler and the estimators on
// every datagram, against a plain Go UDP relay of the same shape in the
// same run; each relay runs in a child process, so datagrams per
// CPU-second count its own CPU time. It also measures, with one viewer
// and one datagram in flight, the median round trip through each (the
// gateway's added latency is the difference), and the gateway's memory
// per viewer: its resident set with the 1,000 viewers logged in, less
// before, over 1,000. The traffic is synthetic (ImagePackets and acks), or
// real: the real region's datagrams from the capture in ../shared.
// `make bench-gateway` runs it; docs/gateway.md has the figures.
func BenchmarkGateway(b *testing.B) {
	b.Run("synthetic", func(b *testing.B) { benchGateway(b, nil) })
	b.Run("real-capture", func(b *testing.B) { benchGateway(b, realRegionMix(b)) })
}

func benchGateway(b *testing.B, mix [][]byte) {
	const viewers, window = 1000, 2
	const run = 3 * time.Second
	echo, stopEcho, err := benchrelay.Echo(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer stopEcho()
	for b.Loop() {
		perCPU := map[string]float64{}
		median := map[string]time.Duration{}
		for _, kind := range []string{"gateway", "plain"} {
			// Latency first, on a quiet relay.
			c := startChild(b, kind, echo)
			var lat []time.Duration
			_, closeOne := runLoad(b, c.addr, 1, 1, time.Second, mix, &lat)
			closeOne()
			slices.Sort(lat)
			if len(lat) > 0 {
				median[kind] = lat[len(lat)/2]
			}
			c.stop()
			// Throughput with 1,000 viewers.
			c = startChild(b, kind, echo)
			rss0 := c.rss(b)
			cpu0 := c.CPU(b)
			trips, closeAll := runLoad(b, c.addr, viewers, window, run, mix, nil)
			cpu := c.CPU(b) - cpu0
			rss := c.rss(b)
			closeAll()
			c.stop()
			// Each round trip is two datagrams through the relay, one
			// each way.
			perCPU[kind] = float64(2*trips) / cpu.Seconds()
			b.ReportMetric(perCPU[kind], kind+"-dgrams/cpu-s")
			b.ReportMetric(float64(2*trips)/run.Seconds(), kind+"-dgrams/s")
			b.ReportMetric(float64(median[kind].Microseconds()), kind+"-median-µs")
			b.ReportMetric((rss-rss0)/viewers, kind+"-bytes/viewer")
		}
		b.ReportMetric(perCPU["gateway"]/perCPU["plain"], "gateway-vs-plain")
		b.ReportMetric(float64((median["gateway"] - median["plain"]).Microseconds()), "added-median-µs")
	}
}

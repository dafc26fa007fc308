//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
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
	"syscall"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/benchrelay"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/throttle/proxy/socks5"
)

// benchRelayEnv makes the test binary a relay for BenchmarkProxy, so that
// the relay's own CPU time and memory are measured apart from the load
// generator and the echo: "proxy" is `fairgrid proxy` itself, "plain" a
// UDP relay with nothing of SOCKS, the baseline. It is read in init,
// before the package's TestMain.
const benchRelayEnv = "FAIRGRID_BENCH_PROXY_RELAY"

func init() {
	switch os.Getenv(benchRelayEnv) {
	case "proxy":
		// The relay's own profile, for pprof: the benchmark's -cpuprofile
		// would profile the load generator.
		if path := os.Getenv(benchRelayEnv + "_CPUPROFILE"); path != "" {
			f, err := os.Create(path)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			pprof.StartCPUProfile(f)
		}
		// A second's interval: the benchmark waits for the first decision,
		// after which every AgentThrottle is rewritten. The echo simulator
		// listens on an ephemeral port: the relay may send to any port.
		conf, err := os.CreateTemp("", "fairgrid-bench-*.toml")
		if err == nil {
			_, err = conf.WriteString("[capture]\nports = [\"1-65535\"]\n")
			conf.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		code := run([]string{"proxy", "--config", conf.Name(), "--listen", "127.0.0.1:0", "--metrics", "", "--interval", "1s"}, stdio{os.Stdin, os.Stdout, os.Stderr})
		os.Remove(conf.Name())
		pprof.StopCPUProfile()
		os.Exit(code)
	case "plain":
		os.Exit(runPlainRelay(os.Getenv(benchRelayEnv + "_TARGET")))
	}
}

// runPlainRelay runs the baseline relay (benchrelay.Plain) until SIGTERM.
func runPlainRelay(target string) int {
	to, err := netip.ParseAddrPort(target)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	addr, stop, err := benchrelay.Plain(to)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer cancel()
	fmt.Printf("listen=%s\n", addr)
	<-ctx.Done()
	return 0
}

// benchChild is a relay in a child process.
type benchChild struct{ *benchrelay.Child }

func startBenchChild(b *testing.B, kind string, target netip.AddrPort) *benchChild {
	var cmd *exec.Cmd
	if kind == "socat" {
		// socat is the relay nobody here wrote, in C: one process, one
		// poll loop, a read and a write per datagram, the same two sockets.
		// Port 0 picks a free one, which it logs (-d -d).
		cmd = exec.Command("socat", "-d", "-d", "-b", "65536", "UDP4-LISTEN:0,bind=127.0.0.1", "UDP4:"+target.String())
	} else {
		cmd = exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), benchRelayEnv+"="+kind, benchRelayEnv+"_TARGET="+target.String())
	}
	// The plain relay prints its address on stdout, the proxy and socat in
	// their logs.
	return &benchChild{benchrelay.StartChild(b, kind, cmd, kind != "plain", func(line string) (string, bool) { return relayAddrIn(kind, line) })}
}

// relayAddrIn finds the address a relay listens on in a line it printed:
// "listen=ADDR" (fairgrid's log, the plain relay) or socat's "listening on
// UDP AF=2 ADDR".
func relayAddrIn(kind, line string) (string, bool) {
	if kind == "socat" {
		_, after, ok := strings.Cut(line, "listening on UDP AF=2 ")
		return strings.TrimSpace(after), ok
	}
	_, after, ok := strings.Cut(line, "listen=")
	addr, _, _ := strings.Cut(after, " ")
	return addr, ok
}

// peakRSS is the child's peak resident set (VmHWM).
func (c *benchChild) peakRSS(b *testing.B) float64 { return c.Memory(b, "VmHWM") }

// stop ends the child. socat ends on SIGTERM with its status, 143.
func (c *benchChild) stop(b *testing.B) {
	c.Cmd.Process.Signal(syscall.SIGTERM)
	err := c.Cmd.Wait()
	if filepath.Base(c.Cmd.Path) == "socat" && c.Cmd.ProcessState.ExitCode() == 128+int(syscall.SIGTERM) {
		err = nil
	}
	if err != nil {
		b.Fatalf("relay: %v", err)
	}
}

// benchEchoSim answers each datagram with itself, the simulator's side,
// but UseCircuitCode, which only a viewer sends, and the proxy's own
// AgentThrottles (unreliable, unlike the benchmark viewer's): answered,
// each would add a datagram to the window for good, one per interval,
// and the window=1 round trips would stop being ping-pong.
func benchEchoSim(b *testing.B) netip.AddrPort {
	addr, stop, err := benchrelay.Echo(func(d []byte) bool {
		h, _, _, err := lludp.ParseHeader(d)
		return err != nil || h.ID != lludp.UseCircuitCodeID && (h.ID != lludp.AgentThrottleID || h.Flags&lludp.FlagReliable != 0)
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(stop)
	return addr
}

// benchAgent is the benchmark viewer's identity: its UseCircuitCode and
// its AgentUpdates agree, so fairgrid takes the circuit for a viewer's.
var benchAgent = lludp.AgentData{AgentID: lludp.UUID{1}, SessionID: lludp.UUID{2}}

// benchDatagrams are what a viewer sends: AgentUpdates (10 Hz in life),
// and an AgentThrottle every 64th, which the proxy decodes and, once
// fairgrid has decided, rewrites. The echo hands each back as the
// simulator's traffic, so both directions are measured.
func benchDatagrams(b *testing.B) [][]byte {
	agent := benchAgent
	var out [][]byte
	for i := range 64 {
		var m lludp.Typed = &lludp.AgentUpdate{AgentData: agent, Far: 64}
		flags := lludp.Flags(0)
		if i == 63 {
			m = &lludp.AgentThrottle{AgentData: agent, CircuitCode: 1, Throttles: lludp.ViewerSplit(1_536_000)}
			flags = lludp.FlagReliable | lludp.FlagZeroCoded
		}
		d, err := lludp.AppendMessage(nil, lludp.Header{Flags: flags, Sequence: uint32(i + 1)}, m, nil)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// largeDatagrams are about a kilobyte each, the size of most of what a
// simulator sends a viewer at its rate: ImagePackets of a texture.
func largeDatagrams(b *testing.B) [][]byte {
	d, err := lludp.AppendMessage(nil, lludp.Header{}, &lludp.ImagePacket{ID: lludp.UUID{3}, Packet: 1, Data: make([]byte, 1000)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	return [][]byte{d}
}

// benchConn is the load generator's side: a plain socket to the plain
// relay, a SOCKS5 association with the proxy.
type benchConn struct {
	send  func([]byte) error
	recv  func([]byte) error
	recvN func([]byte) (int, error)
	conn  interface {
		SetReadDeadline(time.Time) error
		Close() error
	}
}

func dialBench(b *testing.B, kind string, child *benchChild, sim netip.AddrPort) benchConn {
	if kind != "proxy" {
		pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			b.Fatal(err)
		}
		relay := netip.MustParseAddrPort(child.Addr)
		return benchConn{
			send:  func(p []byte) error { _, err := pc.WriteToUDPAddrPort(p, relay); return err },
			recv:  func(buf []byte) error { _, _, err := pc.ReadFromUDPAddrPort(buf); return err },
			recvN: func(buf []byte) (int, error) { n, _, err := pc.ReadFromUDPAddrPort(buf); return n, err },
			conn:  pc,
		}
	}
	c, err := socks5.DialUDP(context.Background(), child.Addr, nil)
	if err != nil {
		b.Fatal(err)
	}
	return benchConn{
		send:  func(p []byte) error { _, err := c.WriteToUDPAddrPort(p, sim); return err },
		recv:  func(buf []byte) error { _, _, err := c.ReadFromUDPAddrPort(buf); return err },
		recvN: func(buf []byte) (int, error) { n, _, err := c.ReadFromUDPAddrPort(buf); return n, err },
		conn:  c,
	}
}

// BenchmarkProxy measures `fairgrid proxy` relaying LLUDP on loopback,
// both directions, with measurement and the AgentThrottle check, against
// a plain UDP relay of the same shape and socat in the same run. Each relay
// runs in a child process, so relay-datagrams/cpu-s counts its own CPU
// time (the per-core figure). The proxy runs as `fairgrid proxy` does, on
// one processor unless the benchmark's environment sets GOMAXPROCS
// (proxy.SetProcs); the plain relay on the runtime's default. Each op is two datagrams, one each way. window=8
// keeps eight in flight (throughput); window=1 is ping-pong and reports
// the round trip's median and p99 (the relay's added latency is the
// difference from the plain relay's). load=5Mbit paces 5 Mbit/s through
// the relay (2.5 each way, in 120-byte datagrams, more datagrams than a
// viewer's mostly large downstream ones, and in 1 KB ones) for 3 s and
// reports the relay's CPU % of one core and peak RSS.
//
// Each mode measures the relays in the same run, the proxy first, then
// the plain relay with as many datagrams, then socat's UDP relay (a
// relay in C, where socat is installed), and reports each figure for
// each (proxy-…, plain-…, socat-…) and the proxy's against the plain
// relay's (…-vs-plain): the machine's load moves them all, the
// comparison less.
func BenchmarkProxy(b *testing.B) {
	_, err := exec.LookPath("socat")
	withSocat := err == nil
	if !withSocat {
		b.Log("socat is not installed: no socat-… figures (make bench-proxy installs it)")
	}
	for _, mode := range []string{"window=8", "window=1", "load=5Mbit/120B", "load=5Mbit/1KB"} {
		b.Run(mode, func(b *testing.B) {
			var plain, proxy, socat map[string]float64
			if size, ok := strings.CutPrefix(mode, "load=5Mbit/"); ok {
				for b.Loop() {
					// One pass whatever b.N: the figures are rates over it.
					if proxy == nil {
						proxy = benchProxyLoad(b, "proxy", size == "1KB")
						plain = benchProxyLoad(b, "plain", size == "1KB")
						if withSocat {
							socat = benchProxyLoad(b, "socat", size == "1KB")
						}
					}
				}
			} else {
				window := int(mode[len(mode)-1] - '0')
				proxy = benchProxyWindow(b, "proxy", window, 0)
				plain = benchProxyWindow(b, "plain", window, b.N)
				if withSocat {
					socat = benchProxyWindow(b, "socat", window, b.N)
				}
			}
			for kind, m := range map[string]map[string]float64{"proxy": proxy, "plain": plain, "socat": socat} {
				for unit, v := range m {
					b.ReportMetric(v, kind+"-"+unit)
				}
			}
			reportVsPlain(b, proxy, plain)
		})
	}
}

// reportVsPlain reports the proxy's figures against the plain relay's of
// the same run: throughput as a ratio, latency and CPU as what the proxy
// adds.
func reportVsPlain(b *testing.B, proxy, plain map[string]float64) {
	if v, ok := proxy["relay-datagrams/cpu-s"]; ok && plain["relay-datagrams/cpu-s"] > 0 {
		b.ReportMetric(v/plain["relay-datagrams/cpu-s"], "dgrams-per-cpu-s-ratio-vs-plain")
	}
	for _, unit := range []string{"p50-rtt-us", "p99-rtt-us"} {
		if v, ok := proxy[unit]; ok {
			b.ReportMetric(v-plain[unit], strings.TrimSuffix(unit, "-us")+"-us-added-vs-plain")
		}
	}
	if v, ok := proxy["cpu-%"]; ok {
		b.ReportMetric(v-plain["cpu-%"], "cpu-%-added-vs-plain")
	}
}

// benchProxyWindow relays through one relay: for b.Loop's count of ops
// when ops is 0, else for ops.
func benchProxyWindow(b *testing.B, kind string, window, ops int) map[string]float64 {
	sim := benchEchoSim(b)
	child := startBenchChild(b, kind, sim)
	c := dialBench(b, kind, child, sim)
	datagrams := benchDatagrams(b)
	buf := make([]byte, 65536)
	next := sequencer(datagrams)
	if kind == "proxy" {
		warmUp(b, c, next)
	}
	// On loopback nothing is lost; the deadline turns a stall into a
	// failure instead of a hang.
	c.conn.SetReadDeadline(time.Now().Add(time.Minute))
	for range window {
		if err := c.send(next()); err != nil {
			b.Fatal(err)
		}
	}
	var trips []time.Duration
	cpu0 := child.CPU(b)
	start := time.Now()
	last := start
	done := 0
	more := func() bool {
		if ops == 0 {
			return b.Loop()
		}
		return done < ops
	}
	for ; more(); done++ {
		if err := c.recv(buf); err != nil {
			b.Fatalf("a datagram was lost or the relay stalled: %v", err)
		}
		if window == 1 {
			now := time.Now()
			trips = append(trips, now.Sub(last))
			last = now
		}
		if err := c.send(next()); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	cpu := child.CPU(b) - cpu0
	for range window {
		c.recv(buf)
	}
	c.conn.Close()
	child.stop(b)
	m := map[string]float64{
		"datagrams/s":           float64(2*done) / elapsed.Seconds(),
		"relay-datagrams/cpu-s": float64(2*done) / cpu.Seconds(),
	}
	if len(trips) > 0 {
		slices.Sort(trips)
		m["p50-rtt-us"] = float64(trips[len(trips)/2].Microseconds())
		m["p99-rtt-us"] = float64(trips[len(trips)*99/100].Microseconds())
	}
	return m
}

// sequencer returns the datagrams in turn, numbered upwards as a viewer's
// are, so the proxy measures a plausible circuit.
func sequencer(datagrams [][]byte) func() []byte {
	var seq uint32
	var scratch []byte
	return func() []byte {
		seq++
		scratch = append(scratch[:0], datagrams[seq%uint32(len(datagrams))]...)
		binary.BigEndian.PutUint32(scratch[1:5], seq)
		return scratch
	}
}

// warmUp logs the circuit in and relays until the proxy has decided and
// an AgentThrottle comes back rewritten, so what is measured after it
// includes the rewrite.
func warmUp(b *testing.B, c benchConn, next func() []byte) {
	login, err := lludp.AppendMessage(nil, lludp.Header{Flags: lludp.FlagReliable},
		&lludp.UseCircuitCode{Code: 1, SessionID: benchAgent.SessionID, AgentID: benchAgent.AgentID}, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := c.send(login); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 65536)
	deadline := time.Now().Add(15 * time.Second)
	c.conn.SetReadDeadline(deadline)
	// A viewer's pace, not a flood, while the loop decides.
	pace := time.NewTicker(time.Millisecond)
	defer pace.Stop()
	for range pace.C {
		if time.Now().After(deadline) {
			break
		}
		sent := next()
		if err := c.send(sent); err != nil {
			b.Fatal(err)
		}
		n, err := c.recvN(buf)
		if err != nil {
			b.Fatalf("warming up: %v", err)
		}
		if h, _, _, err := lludp.ParseHeader(buf[:n]); err == nil && h.ID == lludp.AgentThrottleID && !bytes.Equal(buf[:n], sent) {
			// Whatever else is in flight goes.
			c.conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			for c.recv(buf) == nil {
			}
			return
		}
	}
	b.Fatal("no AgentThrottle came back rewritten within 15 s: fairgrid did not decide")
}

// benchLoadFor is how long the 5 Mbit/s load runs: long enough for the
// CPU time to dwarf start-up, short enough for make bench-proxy.
const benchLoadFor = 3 * time.Second

func benchProxyLoad(b *testing.B, kind string, large bool) map[string]float64 {
	sim := benchEchoSim(b)
	child := startBenchChild(b, kind, sim)
	c := dialBench(b, kind, child, sim)
	next := sequencer(benchDatagrams(b))
	if kind == "proxy" {
		warmUp(b, c, next)
	}
	if large {
		next = sequencer(largeDatagrams(b))
	}
	const bitsPerSecond = 2_500_000 // each way
	perTick := bitsPerSecond / 8 / len(next()) / 100
	received := make(chan int, 1)
	go func() {
		buf := make([]byte, 65536)
		n := 0
		c.conn.SetReadDeadline(time.Now().Add(benchLoadFor + time.Second))
		for c.recv(buf) == nil {
			n++
		}
		received <- n
	}()
	sent := 0
	cpu0 := child.CPU(b)
	// Paced by the clock, not by counting ticks: a ticker drops the ticks
	// a busy machine misses, and the rate with them.
	tick := time.NewTicker(10 * time.Millisecond)
	start := time.Now()
	for now := range tick.C {
		if now.Sub(start) > benchLoadFor {
			break
		}
		// Catching up two ticks at most at once: a longer burst overflows
		// sockets on a loaded machine.
		due := min(int(now.Sub(start)/(10*time.Millisecond))*perTick, sent+2*perTick)
		for ; sent < due; sent++ {
			if err := c.send(next()); err != nil {
				b.Fatal(err)
			}
		}
	}
	tick.Stop()
	cpu := child.CPU(b) - cpu0
	got := <-received
	rss := child.peakRSS(b)
	c.conn.Close()
	child.stop(b)
	// A loaded machine loses a few datagrams from full socket buffers (the
	// figure shows it); a relay that loses more is broken.
	if got < sent*95/100 {
		b.Errorf("%s relay: %d of %d datagrams came back", kind, got, sent)
	}
	return map[string]float64{
		"cpu-%":       100 * cpu.Seconds() / benchLoadFor.Seconds(),
		"peak-rss-MB": rss / (1 << 20),
		"datagrams/s": float64(2*sent) / benchLoadFor.Seconds(),
		"lost-%":      100 * float64(max(sent-got, 0)) / float64(sent),
	}
}

// TestProxyProcs: `fairgrid proxy` runs on one processor unless
// $GOMAXPROCS names a number, which it keeps (proxy.SetProcs). The proxy runs
// as BenchmarkProxy's child does, and its log names the count.
func TestProxyProcs(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want string
	}{
		{"", "1"},
		{"2", "2"},
	} {
		t.Run("GOMAXPROCS="+tc.env, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "GOMAXPROCS=") {
					cmd.Env = append(cmd.Env, kv)
				}
			}
			cmd.Env = append(cmd.Env, benchRelayEnv+"=proxy")
			if tc.env != "" {
				cmd.Env = append(cmd.Env, "GOMAXPROCS="+tc.env)
			}
			logs, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				cmd.Process.Signal(syscall.SIGTERM)
				if err := cmd.Wait(); err != nil {
					t.Errorf("proxy: %v", err)
				}
			}()
			sc := bufio.NewScanner(logs)
			for sc.Scan() {
				if !strings.Contains(sc.Text(), "listen=") {
					continue
				}
				_, after, ok := strings.Cut(sc.Text(), " procs=")
				procs, _, _ := strings.Cut(after, " ")
				if !ok || procs != tc.want {
					t.Errorf("log %q: want procs=%s", sc.Text(), tc.want)
				}
				go func() {
					for sc.Scan() {
					}
				}()
				return
			}
			t.Fatal("the proxy logged no listen address")
		})
	}
}

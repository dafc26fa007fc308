//go:build unix

package socks5

import (
	"bufio"
	"context"
	"fmt"
	"github.com/fairgrid/fairgrid/lludp"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/benchrelay"
)

// benchChildEnv makes the test binary run a relay instead of the tests, so
// that the relay's own CPU time can be measured apart from the client and
// the echo server.
const benchChildEnv = "FAIRGRID_SOCKS5_BENCH_RELAY"

func TestMain(m *testing.M) {
	if kind := os.Getenv(benchChildEnv); kind != "" {
		if err := runBenchChild(kind, os.Getenv(benchChildEnv+"_TARGET")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runBenchChild serves one relay, prints its address, and stops when stdin
// closes.
func runBenchChild(kind, target string) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var addr string
	var wait func()
	switch kind {
	case "socks5":
		// As fairgrid proxy runs it (proxy.SetProcs): one
		// processor, so no second thread spins at each wake-up.
		if os.Getenv("GOMAXPROCS") == "" {
			runtime.GOMAXPROCS(1)
		}
		srv, err := New(Config{Hooks: nopHooks{}, UDPPorts: lludp.Ports{{Lo: 1, Hi: 65535}}}, slog.New(slog.DiscardHandler))
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ctx, ln) }()
		addr, wait = ln.Addr().String(), func() { cancel(); <-done }
	case "plain":
		to, err := netip.ParseAddrPort(target)
		if err != nil {
			return err
		}
		a, stop, err := benchrelay.Plain(to)
		if err != nil {
			return err
		}
		addr, wait = a.String(), stop
	default:
		return fmt.Errorf("unknown relay %q", kind)
	}
	fmt.Println(addr)
	io.Copy(io.Discard, os.Stdin)
	wait()
	return nil
}

// relayChild is a relay running in a child process.
type relayChild struct {
	cmd   *exec.Cmd
	stdin io.Closer
	addr  string
}

func startRelayChild(b *testing.B, kind string, target netip.AddrPort) *relayChild {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchChildEnv+"="+kind, benchChildEnv+"_TARGET="+target.String())
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stdin.Close()
		cmd.Wait()
		b.Fatalf("relay child: %v", err)
	}
	return &relayChild{cmd: cmd, stdin: stdin, addr: strings.TrimSpace(line)}
}

// stop ends the child and returns the CPU time it used.
func (c *relayChild) stop(b *testing.B) time.Duration {
	c.stdin.Close()
	if err := c.cmd.Wait(); err != nil {
		b.Fatalf("relay child: %v", err)
	}
	ru := c.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchWindow datagrams are kept in flight in the throughput runs so that
// the relay, not the round trip, is what the benchmark waits on.
const benchWindow = 8

// BenchmarkRelay measures datagrams client -> relay -> UDP echo -> relay ->
// client through the SOCKS5 proxy (with a no-op hook) and, as the baseline
// of the same run, through a plain UDP relay of the same shape (two
// sockets, two goroutines, no header, no hooks). Each relay runs in a child
// process so that relay-datagrams/cpu-s counts the relay's CPU time alone:
// the per-core figure; the SOCKS5 relay runs on one processor, as
// fairgrid proxy does, the plain one on the runtime's default. Each op
// relays two datagrams (one each way).
// window=1 is ping-pong and reports the round trip's median and p99.
func BenchmarkRelay(b *testing.B) {
	for _, window := range []int{benchWindow, 1} {
		for _, kind := range []string{"plain", "socks5"} {
			b.Run(fmt.Sprintf("%s/window=%d", kind, window), func(b *testing.B) {
				benchRelay(b, kind, window)
			})
		}
	}
}

func benchRelay(b *testing.B, kind string, window int) {
	payload := make([]byte, 120) // a typical LLUDP datagram (protocol.md §13.1: 223,621 B / 1,811)
	echoAddr := benchEcho(b)
	child := startRelayChild(b, kind, echoAddr)
	var send func() error
	var recv func([]byte) error
	var conn interface{ SetReadDeadline(time.Time) error }
	switch kind {
	case "plain":
		pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			b.Fatal(err)
		}
		defer pc.Close()
		relay := netip.MustParseAddrPort(child.addr)
		send = func() error { _, err := pc.WriteToUDPAddrPort(payload, relay); return err }
		recv = func(buf []byte) error { _, _, err := pc.ReadFromUDPAddrPort(buf); return err }
		conn = pc
	case "socks5":
		c, err := DialUDP(context.Background(), child.addr, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		send = func() error { _, err := c.WriteToUDPAddrPort(payload, echoAddr); return err }
		recv = func(buf []byte) error { _, _, err := c.ReadFromUDPAddrPort(buf); return err }
		conn = c
	}
	buf := make([]byte, 2048)
	// A lost datagram would stall the window; on loopback none is lost, and
	// the deadline turns a stall into a failure instead of a hang.
	conn.SetReadDeadline(time.Now().Add(time.Minute))
	for range window {
		if err := send(); err != nil {
			b.Fatal(err)
		}
	}
	var trips []time.Duration
	if window == 1 {
		trips = make([]time.Duration, 0, b.N)
	}
	last := time.Now()
	b.ResetTimer()
	for b.Loop() {
		if err := recv(buf); err != nil {
			b.Fatalf("a datagram was lost or the relay stalled: %v", err)
		}
		if window == 1 {
			now := time.Now()
			trips = append(trips, now.Sub(last))
			last = now
		}
		if err := send(); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := b.Elapsed()
	b.StopTimer()
	for range window {
		recv(buf)
	}
	conn.(io.Closer).Close()
	cpu := child.stop(b)
	b.ReportMetric(float64(2*b.N)/elapsed.Seconds(), "datagrams/s")
	b.ReportMetric(float64(2*b.N)/cpu.Seconds(), "relay-datagrams/cpu-s")
	if len(trips) > 0 {
		slices.Sort(trips)
		b.ReportMetric(float64(trips[len(trips)/2].Microseconds()), "p50-rtt-us")
		b.ReportMetric(float64(trips[len(trips)*99/100].Microseconds()), "p99-rtt-us")
	}
}

func benchEcho(b *testing.B) netip.AddrPort {
	addr, stop, err := benchrelay.Echo(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(stop)
	return addr
}

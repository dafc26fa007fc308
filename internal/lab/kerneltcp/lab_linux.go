//go:build linux

package kerneltcp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fairgrid/fairgrid/internal/lab/link"
)

// side indexes the two namespaces; link.Up starts at the client, link.Down
// at the server.
type side int

const (
	client side = iota
	server
)

// Lab is two network namespaces, client and server, each with a TUN
// device, and a forwarder that carries every IPv4 packet between the two
// devices through a shared link.Bottleneck. Linux's own TCP runs between
// them, so its congestion control meets the queue the viewer's traffic
// crosses.
type Lab struct {
	cfg      Config
	log      *slog.Logger
	nsNames  [2]string
	ns       [2]*os.File // /run/netns/<name>, what threads enter
	tunNames [2]string
	tun      [2]*os.File
	other    *flowState

	// mu guards the counters in every flowState and the fields up to
	// portsMu.
	mu      sync.Mutex
	flows   []*flowState // every flow ever added, other first
	notIPv4 [2]uint64
	pending int64           // packets the bottleneck accepted and has not delivered
	logged  map[string]bool // write errors already logged, by text
	drained chan struct{}   // signalled when pending reaches 0

	portsMu sync.RWMutex
	ports   map[uint16]*flowState // by the server's port, both ways

	running   atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// flowState is one TCP flow's (or the other packets') pair of bottleneck
// flows and the forwarder's counters.
type flowState struct {
	name   string
	labels [2]link.Flow // by link.Direction
	stats  [2]DirStats  // guarded by Lab.mu
}

// New creates the namespaces and TUN devices and configures them; Run
// starts forwarding. It first deletes namespaces that crashed runs left
// (SweepStale). Whatever it created is removed again if it fails; once it
// succeeds, Close removes it.
func New(ctx context.Context, cfg Config, log *slog.Logger) (*Lab, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kerneltcp: %w", err)
	}
	if err := Supported(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg.MTU = cmp.Or(cfg.MTU, DefaultMTU)
	cfg.Name = cmp.Or(cfg.Name, DefaultName)
	if _, err := SweepStale(ctx, log); err != nil {
		// A namespace we cannot delete has another name than ours.
		log.Warn("stale lab namespaces remain", "err", err)
	}
	id, err := newRunID()
	if err != nil {
		return nil, err
	}
	l := &Lab{cfg: cfg, log: log, ports: map[uint16]*flowState{}, drained: make(chan struct{}, 1), logged: map[string]bool{}}
	// Interface names are limited to 15 bytes (IFNAMSIZ); the random part
	// of the run id keeps them distinct from a crashed run's, should one
	// ever be moved out of its namespace.
	suffix := id[len(id)-6:]
	l.nsNames = [2]string{NamePrefix + id + "-c", NamePrefix + id + "-s"}
	l.tunNames = [2]string{"fg" + suffix + "c", "fg" + suffix + "s"}
	if err := l.create(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("kerneltcp: %w", err), l.Close())
	}
	// The devices exist before the flows that write into them.
	if l.other, err = l.addFlow(cfg.Name+" "+OtherName, false); err != nil {
		return nil, errors.Join(err, l.Close())
	}
	log.Debug("lab namespaces ready", "client", l.nsNames[client], "server", l.nsNames[server], "mtu", cfg.MTU)
	return l, nil
}

func (l *Lab) create(ctx context.Context) error {
	addrs := [2]netip.Addr{ClientAddr, ServerAddr}
	for s := range l.nsNames {
		if _, err := ip(ctx, "netns", "add", l.nsNames[s]); err != nil {
			return err
		}
		f, err := os.Open(filepath.Join(netnsDir, l.nsNames[s]))
		if err != nil {
			return err
		}
		l.ns[s] = f
		if l.tun[s], err = openTUN(l.ns[s], l.tunNames[s]); err != nil {
			return err
		}
		ns, dev := l.nsNames[s], l.tunNames[s]
		for _, args := range [][]string{
			// No IPv6 link-local address, hence no neighbour discovery
			// or MLD reports crossing the bottleneck beside the flows.
			{"-n", ns, "link", "set", "dev", dev, "addrgenmode", "none"},
			{"-n", ns, "link", "set", "dev", dev, "mtu", fmt.Sprint(l.cfg.MTU)},
			{"-n", ns, "addr", "add", addrs[s].String(), "peer", addrs[1-s].String(), "dev", dev},
			{"-n", ns, "link", "set", "dev", dev, "up"},
			{"-n", ns, "link", "set", "dev", "lo", "up"},
		} {
			if _, err := ip(ctx, args...); err != nil {
				return err
			}
		}
		// No qdisc on the device (the default would be pfifo_fast of
		// txqueuelen 500): the bottleneck must be the only queue. What the
		// forwarder has not read yet waits in the device's own ring, whose
		// overflow the kernel counts (DeviceCounters.TxDropped).
		if _, err := iproute2(ctx, "tc", "-n", ns, "qdisc", "replace", "dev", dev, "root", "noqueue"); err != nil {
			return err
		}
	}
	return nil
}

// Namespaces returns the names of the client and server namespaces, for
// `ip netns exec` (a viewer or a capture run beside the flows).
func (l *Lab) Namespaces() (clientNS, serverNS string) {
	return l.nsNames[client], l.nsNames[server]
}

// Devices returns the names of the client and server TUN devices, each
// inside its own namespace.
func (l *Lab) Devices() (clientDev, serverDev string) {
	return l.tunNames[client], l.tunNames[server]
}

// Run forwards packets from the devices into the bottleneck until ctx
// ends; the bottleneck's owner must run it (link.Bottleneck.Run) for them
// to come out. It returns nil when ctx ends, or the first error reading a
// device.
func (l *Lab) Run(ctx context.Context) error {
	if !l.running.CompareAndSwap(false, true) {
		return errors.New("kerneltcp: lab already running")
	}
	defer l.running.Store(false)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for dir, in := range l.tun {
		if err := in.SetReadDeadline(time.Time{}); err != nil {
			return fmt.Errorf("kerneltcp: %w", err)
		}
		wg.Go(func() {
			if errs[dir] = l.readLoop(link.Direction(dir), in); errs[dir] != nil {
				cancel()
			}
		})
	}
	<-ctx.Done()
	// A deadline in the past ends the blocked reads without closing the
	// devices, so the lab can run again.
	for _, f := range l.tun {
		f.SetReadDeadline(time.Unix(1, 0))
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kerneltcp: %w", err)
	}
	return nil
}

func (l *Lab) readLoop(dir link.Direction, in *os.File) error {
	// A TUN read returns one packet; 64 KiB holds the largest IPv4 one.
	buf := make([]byte, 1<<16)
	for {
		n, err := in.Read(buf)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, os.ErrClosed) {
				return nil
			}
			return fmt.Errorf("%s: read %s: %w", dir, in.Name(), err)
		}
		if n == 0 || buf[0]>>4 != 4 {
			l.mu.Lock()
			l.notIPv4[dir]++
			l.mu.Unlock()
			continue
		}
		// The bottleneck keeps the packet until it delivers it.
		pkt := append([]byte(nil), buf[:n]...)
		fs := l.classify(dir, pkt)
		s := &fs.stats[dir]
		// Pending before Send: the bottleneck may deliver before Send
		// returns, and Drain must never see a count below zero.
		l.mu.Lock()
		s.Read++
		s.ReadBytes += uint64(n)
		s.MaxPacket = max(s.MaxPacket, n)
		s.Pending++
		l.pending++
		l.mu.Unlock()
		cause, err := l.cfg.Bottleneck.Send(fs.labels[dir], pkt)
		if err == nil && cause == link.Forwarded {
			continue
		}
		l.mu.Lock()
		s.Pending--
		l.pending--
		s.Dropped++
		idle := l.pending == 0
		l.mu.Unlock()
		if err != nil {
			// Only an unknown label fails, and the lab made every label
			// it sends with: a bug, not a condition to count.
			return fmt.Errorf("%s: flow %q: %w", dir, fs.name, err)
		}
		if idle {
			l.signalDrained()
		}
	}
}

func (l *Lab) signalDrained() {
	select {
	case l.drained <- struct{}{}:
	default:
	}
}

// classify finds the flow a packet belongs to by the server's port: the
// destination port on the way to the server, the source port back.
func (l *Lab) classify(dir link.Direction, pkt []byte) *flowState {
	src, dst, ok := tcpPorts(pkt)
	if !ok {
		return l.other
	}
	port := dst
	if dir == link.Down {
		port = src
	}
	l.portsMu.RLock()
	fs, ok := l.ports[port]
	l.portsMu.RUnlock()
	if !ok {
		return l.other
	}
	return fs
}

// addFlow registers a flow's two directions with the bottleneck; each
// delivers into the far namespace's device. A TCP flow's directions are
// named by what they carry: " data" is the server-to-client direction of a
// download, so a caller reading the bottleneck's "NAME data" counts data,
// never the ACKs.
func (l *Lab) addFlow(name string, download bool) (*flowState, error) {
	fs := &flowState{name: name}
	suffixes := [2]string{" data", " acks"}
	switch {
	case name == l.cfg.Name+" "+OtherName:
		suffixes = [2]string{" up", " down"}
	case download:
		suffixes = [2]string{" acks", " data"}
	}
	for dir := range fs.labels {
		label, err := l.cfg.Bottleneck.AddFlow(link.FlowConfig{
			Name:    name + suffixes[dir],
			Dir:     link.Direction(dir),
			Deliver: l.deliverer(link.Direction(dir), fs),
		})
		if err != nil {
			return nil, fmt.Errorf("kerneltcp: %w", err)
		}
		fs.labels[dir] = label
	}
	l.mu.Lock()
	l.flows = append(l.flows, fs)
	l.mu.Unlock()
	return fs, nil
}

// deliverer writes a flow's packets into the far namespace's device. It
// runs on the bottleneck's goroutine; a TUN write hands the packet to the
// kernel's receive path and does not block.
func (l *Lab) deliverer(dir link.Direction, fs *flowState) func([]byte) {
	out := l.tun[1-int(dir)]
	return func(pkt []byte) {
		_, err := out.Write(pkt)
		l.mu.Lock()
		s := &fs.stats[dir]
		s.Pending--
		if err != nil {
			s.WriteErrors++
		} else {
			s.Delivered++
			s.DeliveredBytes += uint64(len(pkt))
		}
		l.pending--
		idle := l.pending == 0
		logIt := err != nil && !l.logged[err.Error()]
		if logIt {
			l.logged[err.Error()] = true
		}
		l.mu.Unlock()
		if logIt {
			// Once per cause: a closed lab refuses every late packet.
			l.log.Warn("tun write failed; counting the rest", "dir", dir.String(), "dev", out.Name(), "err", err)
		}
		if idle {
			l.signalDrained()
		}
	}
}

// Drain waits until the bottleneck has delivered every packet the lab
// sent it (stop the flows and Run first, and keep the bottleneck
// running), or ctx ends. Then the forwarder's, the bottleneck's and the
// kernel's counters agree.
func (l *Lab) Drain(ctx context.Context) error {
	for {
		l.mu.Lock()
		n := l.pending
		l.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-l.drained:
		case <-ctx.Done():
			return fmt.Errorf("kerneltcp: drain: %d packets still in the bottleneck: %w", n, ctx.Err())
		}
	}
}

// Stats returns the forwarder's counters, consistent with each other.
func (l *Lab) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := Stats{Flows: map[string][2]DirStats{}, NotIPv4: l.notIPv4}
	for _, fs := range l.flows {
		st.Flows[fs.name] = fs.stats
	}
	return st
}

// DeviceCounters reads both TUN devices' counters inside their namespaces
// (RTM_GETLINK through ip -s -j): the kernel's own account, to check the
// forwarder's against.
func (l *Lab) DeviceCounters(ctx context.Context) (clientDev, serverDev DeviceCounters, err error) {
	var out [2]DeviceCounters
	for s := range l.nsNames {
		if out[s], err = readDeviceCounters(ctx, l.nsNames[s], l.tunNames[s]); err != nil {
			return DeviceCounters{}, DeviceCounters{}, fmt.Errorf("kerneltcp: %w", err)
		}
	}
	return out[client], out[server], nil
}

// Close stops nothing that runs (end Run's context first) but removes the
// devices and namespaces; it is safe to call more than once and after a
// failed New.
func (l *Lab) Close() error {
	l.closeOnce.Do(func() {
		var errs []error
		for _, f := range l.tun {
			if f != nil {
				errs = append(errs, f.Close())
			}
		}
		for _, f := range l.ns {
			if f != nil {
				errs = append(errs, f.Close())
			}
		}
		// Not the caller's context: cleanup must run even when it has
		// ended.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, name := range l.nsNames {
			if name == "" {
				continue
			}
			if _, err := os.Stat(filepath.Join(netnsDir, name)); errors.Is(err, os.ErrNotExist) {
				continue
			}
			if _, err := ip(ctx, "netns", "delete", name); err != nil {
				errs = append(errs, err)
			}
		}
		if err := errors.Join(errs...); err != nil {
			l.closeErr = fmt.Errorf("kerneltcp: close: %w", err)
		}
	})
	return l.closeErr
}

// Flow runs one bulk TCP flow between the namespaces through the
// forwarder and the bottleneck, both of which must be running, for cfg.Warmup+cfg.Duration, and measures
// it. The connection is reset at the end (SO_LINGER 0), so no data keeps
// flowing after Flow returns. Several flows may run at once.
func (l *Lab) Flow(ctx context.Context, cfg FlowConfig) (FlowResult, error) {
	if err := cfg.Validate(); err != nil {
		return FlowResult{}, fmt.Errorf("kerneltcp: flow: %w", err)
	}
	if cfg.Name == "" {
		way := "upload"
		if cfg.Download {
			way = "download"
		}
		l.mu.Lock()
		cfg.Name = fmt.Sprintf("%s %s %s %d", l.cfg.Name, cfg.Congestion, way, len(l.flows))
		l.mu.Unlock()
	}
	fs, err := l.addFlow(cfg.Name, cfg.Download)
	if err != nil {
		return FlowResult{}, err
	}
	control := func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, cfg.Congestion)
		}); err != nil {
			return err
		}
		if serr != nil {
			return fmt.Errorf("TCP_CONGESTION %s: %w", cfg.Congestion, serr)
		}
		return nil
	}
	var ln net.Listener
	err = inNamespace(l.ns[server], func() error {
		var err error
		ln, err = (&net.ListenConfig{Control: control}).Listen(ctx, "tcp4", netip.AddrPortFrom(ServerAddr, 0).String())
		return err
	})
	if err != nil {
		return FlowResult{}, fmt.Errorf("kerneltcp: flow %q: listen: %w", cfg.Name, err)
	}
	defer ln.Close()
	// The port is the kernel's choice in the server's namespace, so it
	// tells the lab's flows apart however many run.
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	l.portsMu.Lock()
	l.ports[port] = fs
	l.portsMu.Unlock()
	defer func() {
		l.portsMu.Lock()
		delete(l.ports, port)
		l.portsMu.Unlock()
	}()

	type accepted struct {
		c   net.Conn
		err error
	}
	acceptc := make(chan accepted, 1)
	go func() {
		c, err := ln.Accept()
		acceptc <- accepted{c, err}
	}()
	var dialed net.Conn
	err = inNamespace(l.ns[client], func() error {
		d := net.Dialer{Control: control, LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(ClientAddr, 0))}
		var err error
		dialed, err = d.DialContext(ctx, "tcp4", netip.AddrPortFrom(ServerAddr, port).String())
		return err
	})
	if err != nil {
		ln.Close()
		if a := <-acceptc; a.c != nil {
			a.c.Close()
		}
		return FlowResult{}, fmt.Errorf("kerneltcp: flow %q: connect: %w", cfg.Name, err)
	}
	a := <-acceptc
	if a.err != nil {
		dialed.Close()
		return FlowResult{}, fmt.Errorf("kerneltcp: flow %q: accept: %w", cfg.Name, a.err)
	}
	sender, receiver := dialed.(*net.TCPConn), a.c.(*net.TCPConn)
	if cfg.Download {
		sender, receiver = receiver, sender
	}
	return l.runFlow(ctx, cfg, fs, sender, receiver)
}

// bulkChunk is what the sender writes and the receiver reads at a time:
// large enough that system calls are not what limits a flow.
const bulkChunk = 256 << 10

func (l *Lab) runFlow(ctx context.Context, cfg FlowConfig, fs *flowState, sender, receiver *net.TCPConn) (FlowResult, error) {
	res := FlowResult{Config: cfg}
	var stopping atomic.Bool
	var received atomic.Int64
	var wg sync.WaitGroup
	var sendErr, recvErr error
	wg.Go(func() {
		buf := make([]byte, bulkChunk)
		for {
			if _, err := sender.Write(buf); err != nil {
				if !stopping.Load() {
					sendErr = fmt.Errorf("send: %w", err)
				}
				return
			}
		}
	})
	wg.Go(func() {
		buf := make([]byte, bulkChunk)
		for {
			n, err := receiver.Read(buf)
			received.Add(int64(n))
			if err != nil {
				if !stopping.Load() {
					recvErr = fmt.Errorf("receive: %w", err)
				}
				return
			}
		}
	})
	stop := func() {
		stopping.Store(true)
		// Reset rather than finish: closing with data in flight would
		// leave the kernel sending it after the flow is over.
		sender.SetLinger(0)
		receiver.SetLinger(0)
		sender.Close()
		receiver.Close()
		wg.Wait()
	}

	// Which bottleneck direction carries the data.
	data, acks := link.Up, link.Down
	if cfg.Download {
		data, acks = acks, data
	}
	flowStats := func() (d, a link.FlowStats) {
		st := l.cfg.Bottleneck.Stats()
		return st.Flows[fs.labels[data]].FlowStats, st.Flows[fs.labels[acks]].FlowStats
	}
	start := time.Now()
	warmData, warmAcks := flowStats()
	second := time.NewTicker(time.Second)
	defer second.Stop()
	warm := time.NewTimer(cfg.Warmup)
	defer warm.Stop()
	end := time.NewTimer(cfg.Warmup + cfg.Duration)
	defer end.Stop()
	var lastSecond, warmBytes int64
	warmAt := start
	for done := false; !done; {
		select {
		case <-ctx.Done():
			stop()
			return res, fmt.Errorf("kerneltcp: flow %q: %w", cfg.Name, ctx.Err())
		case <-second.C:
			b := received.Load()
			res.PerSecond = append(res.PerSecond, b-lastSecond)
			lastSecond = b
		case now := <-warm.C:
			warmBytes, warmAt = received.Load(), now
			warmData, warmAcks = flowStats()
		case now := <-end.C:
			res.Bytes = received.Load() - warmBytes
			res.Elapsed = now.Sub(warmAt)
			d, a := flowStats()
			res.Data, res.Acks = d.Since(warmData), a.Since(warmAcks)
			done = true
		}
	}
	res.Goodput = float64(res.Bytes) / res.Elapsed.Seconds()
	infoErr := readSenderInfo(sender, &res)
	stop()
	l.mu.Lock()
	res.Forwarded = [2]DirStats{fs.stats[data], fs.stats[acks]}
	l.mu.Unlock()
	if err := errors.Join(sendErr, recvErr, infoErr); err != nil {
		return res, fmt.Errorf("kerneltcp: flow %q (%s): %w", cfg.Name, cfg.Congestion, err)
	}
	return res, nil
}

func readSenderInfo(c *net.TCPConn, res *FlowResult) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cc string
	var info *unix.TCPInfo
	var serr error
	err = raw.Control(func(fd uintptr) {
		if cc, serr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION); serr != nil {
			return
		}
		info, serr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	})
	if err = cmp.Or(err, serr); err != nil {
		return fmt.Errorf("sender socket info: %w", err)
	}
	res.Congestion = cc
	res.Retransmits = info.Total_retrans
	res.SmoothedRTT = time.Duration(info.Rtt) * time.Microsecond
	res.CongestionWindow = info.Snd_cwnd
	return nil
}

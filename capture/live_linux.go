//go:build linux

package capture

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/afpacket"
	"golang.org/x/net/bpf"
)

// The ring the kernel fills: TPACKET_V3 hands over whole blocks, so the
// reader wakes once per block instead of once per datagram (packet(7),
// Documentation/networking/packet_mmap.rst). A block is handed over when it
// is full or ringBlockTimeout after it was opened. The timestamps come from
// the kernel, so holding a block back never changes a measurement; it only
// delays what the daemon does about it, by at most ringBlockTimeout, a
// quarter of the 100 ms in which a viewer's own AgentThrottle must be
// overridden. A shorter timeout costs CPU, a longer one holds overrides
// back; make bench-daemon measures the trade (docs/speed.md).
const (
	ringBlockSize    = 256 << 10 // bytes; a multiple of the page size
	ringBlocks       = 16        // 4 MiB: about 3 s of a 10 Mbit/s viewer
	ringBlockTimeout = 25 * time.Millisecond
	// ringPollTimeout bounds how long Close waits for a blocked read.
	ringPollTimeout = 100 * time.Millisecond
)

// OpenLive captures on a network interface through a TPACKET_V3 AF_PACKET
// ring (gopacket's afpacket: no cgo, no libpcap), with an in-kernel BPF
// filter that passes only UDP over IPv4 or IPv6 on the given ports (nil:
// every UDP port). It needs CAP_NET_RAW.
//
// On a loopback interface every datagram passes the packet socket twice,
// once going out and once coming in; the filter drops the outgoing copy, so
// each datagram is counted once.
func OpenLive(iface string, ports Ports) (*Reader, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, explainOpenError(iface, err)
	}
	tp, err := afpacket.NewTPacket(
		afpacket.OptInterface(iface),
		afpacket.OptTPacketVersion(afpacket.TPacketVersion3),
		afpacket.OptBlockSize(ringBlockSize),
		afpacket.OptNumBlocks(ringBlocks),
		afpacket.OptBlockTimeout(ringBlockTimeout),
		afpacket.OptPollTimeout(ringPollTimeout),
	)
	if err != nil {
		return nil, explainOpenError(iface, err)
	}
	filter, err := udpFilter(ports, ifi.Flags&net.FlagLoopback != 0)
	var prog []bpf.RawInstruction
	if err == nil {
		prog, err = bpf.Assemble(filter)
	}
	if err == nil {
		err = tp.SetBPF(prog)
	}
	if err != nil {
		tp.Close()
		return nil, fmt.Errorf("capture on %s: install BPF filter: %w", iface, err)
	}
	ring := &liveRing{tp: tp, buf: make([]byte, 0, 64<<10)}
	r := &Reader{src: ring, linkType: LinkEthernet, ports: ports, closer: ring}
	r.kernel = ring.drops
	return r, nil
}

// errClosed is what a read on a closed live capture returns.
var errClosed = errors.New("live capture closed")

// liveRing makes the ring safe to close from another goroutine: the ring
// is unmapped only while no read is in it, and each frame is copied out, so
// a payload the caller still holds never points into unmapped memory.
type liveRing struct {
	mu        sync.Mutex // held for a read and for Close
	statsMu   sync.Mutex // held for a counter query and for Close
	closed    atomic.Bool
	tp        *afpacket.TPacket
	buf       []byte
	lastDrops uint64
}

func (l *liveRing) ZeroCopyReadPacketData() ([]byte, gopacket.CaptureInfo, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for !l.closed.Load() {
		data, ci, err := l.tp.ZeroCopyReadPacketData()
		if errors.Is(err, afpacket.ErrTimeout) {
			continue
		}
		if err != nil {
			return nil, ci, err
		}
		l.buf = append(l.buf[:0], data...)
		return l.buf, ci, nil
	}
	return nil, gopacket.CaptureInfo{}, errClosed
}

func (l *liveRing) Close() error {
	if l.closed.Swap(true) {
		return nil
	}
	l.mu.Lock() // a blocked read gives up within ringPollTimeout
	defer l.mu.Unlock()
	l.statsMu.Lock()
	defer l.statsMu.Unlock()
	l.tp.Close()
	return nil
}

// drops returns what the kernel dropped since the last call. It does not
// wait for a blocked read.
func (l *liveRing) drops() (uint64, error) {
	l.statsMu.Lock()
	defer l.statsMu.Unlock()
	if l.closed.Load() {
		return 0, errClosed
	}
	_, v3, err := l.tp.SocketStats()
	if err != nil {
		return 0, err
	}
	total := uint64(v3.Drops())
	d := total - l.lastDrops
	l.lastDrops = total
	return d, nil
}

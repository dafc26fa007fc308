package viewer

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/fairgrid/fairgrid/lludp"
	"golang.org/x/sys/unix"
)

// runFleet runs stress viewers, each on its own socket, a few event loops
// for all, not two goroutines and a ticker each: with thousands of
// viewers, the goroutine hand-off per datagram, the wake-up per ticker and
// the scheduler's queue of runnable goroutines cost more than the
// datagrams (issue #15's profile). Each loop, one per CPU, waits on one
// epoll set for its viewers' sockets and reads each ready socket once per
// wake-up (level triggered: a socket with more is reported again). The
// shared fleet (sharedfleet_linux.go) runs the same loops over one socket
// each.
func runFleet(ctx context.Context, vs []*Viewer) error {
	return runShards(ctx, vs, fleetShards(len(vs)), func(_ int, mine []*Viewer) (fleetIO, error) {
		return newEpollIO(mine)
	})
}

// fleetShards is how many event loops serve n viewers: one per CPU.
func fleetShards(n int) int { return max(min(runtime.GOMAXPROCS(0), n), 1) }

// fleetIO is how a shard's loop reaches its viewers' datagrams.
type fleetIO interface {
	// wait hands the viewers what has arrived, waiting until deadline at
	// most for something to.
	wait(deadline time.Time) error
	// flush sends what the viewers wrote since the last flush (nothing
	// where each write is its own system call).
	flush()
	close()
}

// runShards runs viewer i on shard i mod shards, each shard one loop over
// the fleetIO open gives it.
func runShards(ctx context.Context, vs []*Viewer, shards int, open func(shard int, mine []*Viewer) (fleetIO, error)) error {
	var wg sync.WaitGroup
	errs := make([]error, shards)
	for s := range shards {
		var mine []*Viewer
		for i := s; i < len(vs); i += shards {
			mine = append(mine, vs[i])
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			io, err := open(s, mine)
			if err != nil {
				errs[s] = err
				return
			}
			defer io.close()
			errs[s] = runShard(ctx, mine, io)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

const (
	fleetTick = 10 * time.Millisecond
	// housekeepSlots: each viewer's pings, acks and resends are looked at
	// every fifth tick, 50 ms, as Run's stress ticker does.
	housekeepSlots = 5
	// epollEvents is how many ready sockets one wake-up takes.
	epollEvents = 256
)

// runShard logs the viewers in and serves them until ctx ends, then logs
// them out. Every fleetTick it does the housekeeping of a fifth of them,
// so each viewer's is done every 50 ms as in Run, and sends the movements
// due: viewer i moves in slot i mod 100 of each second, so the movements
// arrive evenly, as independent clients' would, rather than in whatever
// bursts the login storm left.
func runShard(ctx context.Context, vs []*Viewer, io fleetIO) error {
	start := time.Now()
	for _, v := range vs {
		v.login(start)
	}
	io.flush()
	moveSlots := max(int(vs[0].cfg.AgentUpdateInterval/fleetTick), 1)
	next := start.Add(fleetTick)
	var ticks int
	var loggingOut bool
	var logoutBy time.Time
	for {
		if !loggingOut && ctx.Err() != nil {
			loggingOut, logoutBy = true, time.Now().Add(logoutWait)
			for _, v := range vs {
				v.mu.Lock()
				if v.moved {
					v.sendReliable(&lludp.LogoutRequest{AgentData: v.agent()}, 0, time.Now())
				}
				v.mu.Unlock()
			}
			io.flush()
		}
		if err := io.wait(next); err != nil {
			return err
		}
		now := time.Now()
		// Every tick due is done, late ones too: the viewers keep
		// offering a movement a second each however late the loop runs
		// (an open loop, as independent clients are), up to a second of
		// ticks at once.
		for late := 0; !now.Before(next) && late < moveSlots; late++ {
			ticks++
			next = next.Add(fleetTick)
			if loggingOut && (now.After(logoutBy) || allLoggedOut(vs)) {
				return nil
			}
			tick(vs, now, ticks, moveSlots, !loggingOut)
		}
		if !now.Before(next) {
			next = now.Add(fleetTick)
		}
		io.flush()
	}
}

// tick does the housekeeping of the viewers in this tick's slot, and sends
// the movements due in it.
func tick(vs []*Viewer, now time.Time, ticks, moveSlots int, move bool) {
	for i := ticks % housekeepSlots; i < len(vs); i += housekeepSlots {
		v := vs[i]
		v.mu.Lock()
		v.housekeep(now)
		v.mu.Unlock()
	}
	if !move {
		return
	}
	for i := ticks % moveSlots; i < len(vs); i += moveSlots {
		v := vs[i]
		v.mu.Lock()
		if v.moved {
			v.sendUpdate(now)
			v.lastUpdate = now
		}
		v.mu.Unlock()
	}
}

func allLoggedOut(vs []*Viewer) bool {
	for _, v := range vs {
		v.mu.Lock()
		done := !v.moved || v.loggedOut
		v.mu.Unlock()
		if !done {
			return false
		}
	}
	return true
}

// epollIO serves viewers that each have their own socket: an epoll set of
// the sockets, one datagram read from each ready one per wake-up.
type epollIO struct {
	members []fleetMember
	buf     []byte
	events  []unix.EpollEvent
	ep      *epoll
}

type fleetMember struct {
	v  *Viewer
	rc syscall.RawConn
}

func newEpollIO(vs []*Viewer) (_ *epollIO, err error) {
	ep, err := newEpoll()
	if err != nil {
		closeConns(vs)
		return nil, err
	}
	defer func() {
		if err != nil {
			ep.file.Close()
			closeConns(vs)
		}
	}()
	members := make([]fleetMember, len(vs))
	for i, v := range vs {
		uc, ok := v.conn.(*net.UDPConn)
		if !ok {
			return nil, errors.New("fleet: a viewer's socket is not plain UDP")
		}
		rc, err := uc.SyscallConn()
		if err != nil {
			return nil, fmt.Errorf("fleet: %w", err)
		}
		var addErr error
		err = rc.Control(func(fd uintptr) {
			ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)}
			addErr = unix.EpollCtl(ep.fd, unix.EPOLL_CTL_ADD, int(fd), &ev)
		})
		if err = errors.Join(err, addErr); err != nil {
			return nil, fmt.Errorf("fleet: epoll add: %w", err)
		}
		members[i] = fleetMember{v: v, rc: rc}
	}
	return &epollIO{members: members, buf: make([]byte, 65536), events: make([]unix.EpollEvent, epollEvents), ep: ep}, nil
}

func (e *epollIO) close() {
	e.ep.file.Close()
	for _, m := range e.members {
		m.v.Close()
	}
}

// flush: each viewer's write was its own sendto.
func (e *epollIO) flush() {}

// epoll is an epoll set that Go's own poller watches: a goroutine waiting
// on it parks like one waiting on a socket, where a blocking epoll_wait
// would hold an OS thread and hand its P off at every wait.
type epoll struct {
	fd   int
	file *os.File
	rc   syscall.RawConn
}

func newEpoll() (*epoll, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("epoll: %w", err)
	}
	f := os.NewFile(uintptr(fd), "epoll")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("epoll: %w", err)
	}
	return &epoll{fd: fd, file: f, rc: rc}, nil
}

// wait waits until deadline at most for sockets to become readable and
// hands each one datagram to its viewer.
func (e *epollIO) wait(deadline time.Time) error {
	if err := e.ep.file.SetReadDeadline(deadline); err != nil {
		return fmt.Errorf("epoll: %w", err)
	}
	var n int
	var werr error
	err := e.ep.rc.Read(func(fd uintptr) bool {
		n, werr = unix.EpollWait(int(fd), e.events, 0)
		if werr == unix.EINTR {
			n, werr = 0, nil
		}
		return n > 0 || werr != nil // nothing ready: park until the set is
	})
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil
	}
	if err = errors.Join(err, werr); err != nil {
		return fmt.Errorf("epoll wait: %w", err)
	}
	for _, ev := range e.events[:n] {
		m := &e.members[ev.Fd]
		var got int
		var ok bool
		// Read through the RawConn: the descriptor stays valid while the
		// function runs, and it does not block (true: done either way).
		m.rc.Read(func(fd uintptr) bool {
			got, ok = e.recv(fd, m.v.cfg.Sim)
			return true
		})
		if !ok {
			continue // a refused send reports here, as in read
		}
		at := time.Now()
		m.v.mu.Lock()
		m.v.handle(inbound{data: e.buf[:got], at: at})
		m.v.mu.Unlock()
	}
	return nil
}

// recv reads one datagram without waiting, and says whether it came from
// sim, as read checks. It calls recvfrom itself: x/sys's Recvfrom builds a
// Sockaddr for every datagram (with a getsockopt in it), a tenth of the
// fleet's CPU in the profile.
func (e *epollIO) recv(fd uintptr, sim netip.AddrPort) (int, bool) {
	var from unix.RawSockaddrAny
	fromLen := uint32(unix.SizeofSockaddrAny)
	n, _, errno := unix.Syscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&e.buf[0])), uintptr(len(e.buf)),
		unix.MSG_DONTWAIT, uintptr(unsafe.Pointer(&from)), uintptr(unsafe.Pointer(&fromLen)))
	if errno != 0 {
		return 0, false
	}
	var addr netip.AddrPort
	switch from.Addr.Family {
	case unix.AF_INET:
		a := (*unix.RawSockaddrInet4)(unsafe.Pointer(&from))
		addr = netip.AddrPortFrom(netip.AddrFrom4(a.Addr), binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&a.Port))[:]))
	case unix.AF_INET6:
		a := (*unix.RawSockaddrInet6)(unsafe.Pointer(&from))
		addr = netip.AddrPortFrom(netip.AddrFrom16(a.Addr), binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&a.Port))[:]))
	}
	return int(n), addr == sim
}

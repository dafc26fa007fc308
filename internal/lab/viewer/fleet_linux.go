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

// runFleet runs stress viewers a few event loops for all, not two
// goroutines and a ticker each: with thousands of viewers, the goroutine
// hand-off per datagram, the wake-up per ticker and the scheduler's queue
// of runnable goroutines cost more than the datagrams (issue #15's
// profile). Each loop, one per CPU, waits on one epoll set for its
// viewers' sockets, reads each ready socket once per wake-up (level
// triggered: a socket with more is reported again), and every fleetTick
// does the housekeeping of a fifth of its viewers, so each viewer's is
// done every 50 ms as in Run, and sends the movements due: viewer i moves
// in slot i mod 100 of each second, so the movements arrive evenly, as
// independent clients' would, rather than in whatever bursts the login
// storm left.
func runFleet(ctx context.Context, vs []*Viewer) error {
	shards := min(runtime.GOMAXPROCS(0), len(vs))
	var wg sync.WaitGroup
	errs := make([]error, shards)
	for s := range shards {
		var mine []*Viewer
		for i := s; i < len(vs); i += shards {
			mine = append(mine, vs[i])
		}
		wg.Add(1)
		go func() { defer wg.Done(); errs[s] = runShard(ctx, mine) }()
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

type fleetMember struct {
	v  *Viewer
	rc syscall.RawConn
}

func runShard(ctx context.Context, vs []*Viewer) error {
	defer func() {
		for _, v := range vs {
			v.conn.Close()
		}
	}()
	ep, err := newEpoll()
	if err != nil {
		return err
	}
	defer ep.file.Close()
	members := make([]fleetMember, len(vs))
	for i, v := range vs {
		uc, ok := v.conn.(*net.UDPConn)
		if !ok {
			return errors.New("fleet: a viewer's socket is not plain UDP")
		}
		rc, err := uc.SyscallConn()
		if err != nil {
			return fmt.Errorf("fleet: %w", err)
		}
		var addErr error
		err = rc.Control(func(fd uintptr) {
			ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)}
			addErr = unix.EpollCtl(ep.fd, unix.EPOLL_CTL_ADD, int(fd), &ev)
		})
		if err = errors.Join(err, addErr); err != nil {
			return fmt.Errorf("fleet: epoll add: %w", err)
		}
		members[i] = fleetMember{v: v, rc: rc}
	}
	start := time.Now()
	for _, v := range vs {
		v.login(start)
	}
	sh := &shard{members: members, buf: make([]byte, 65536), events: make([]unix.EpollEvent, epollEvents), ep: ep}
	moveSlots := max(int(vs[0].cfg.AgentUpdateInterval/fleetTick), 1)
	next := start.Add(fleetTick)
	var ticks int
	var loggingOut bool
	var logoutBy time.Time
	for {
		if !loggingOut && ctx.Err() != nil {
			loggingOut, logoutBy = true, time.Now().Add(logoutWait)
			for _, m := range members {
				m.v.mu.Lock()
				if m.v.moved {
					m.v.sendReliable(&lludp.LogoutRequest{AgentData: m.v.agent()}, 0, time.Now())
				}
				m.v.mu.Unlock()
			}
		}
		if err := sh.wait(next); err != nil {
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
			if loggingOut && (now.After(logoutBy) || sh.allLoggedOut()) {
				return nil
			}
			sh.tick(now, ticks, moveSlots, !loggingOut)
		}
		if !now.Before(next) {
			next = now.Add(fleetTick)
		}
	}
}

// tick does the housekeeping of the viewers in this tick's slot, and sends
// the movements due in it.
func (sh *shard) tick(now time.Time, ticks, moveSlots int, move bool) {
	for i := ticks % housekeepSlots; i < len(sh.members); i += housekeepSlots {
		v := sh.members[i].v
		v.mu.Lock()
		v.housekeep(now)
		v.mu.Unlock()
	}
	if !move {
		return
	}
	for i := ticks % moveSlots; i < len(sh.members); i += moveSlots {
		v := sh.members[i].v
		v.mu.Lock()
		if v.moved {
			v.sendUpdate(now)
			v.lastUpdate = now
		}
		v.mu.Unlock()
	}
}

type shard struct {
	members []fleetMember
	buf     []byte
	events  []unix.EpollEvent
	ep      *epoll
}

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
func (sh *shard) wait(deadline time.Time) error {
	if err := sh.ep.file.SetReadDeadline(deadline); err != nil {
		return fmt.Errorf("epoll: %w", err)
	}
	var n int
	var werr error
	err := sh.ep.rc.Read(func(fd uintptr) bool {
		n, werr = unix.EpollWait(int(fd), sh.events, 0)
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
	for _, ev := range sh.events[:n] {
		m := &sh.members[ev.Fd]
		var got int
		var ok bool
		// Read through the RawConn: the descriptor stays valid while the
		// function runs, and it does not block (true: done either way).
		m.rc.Read(func(fd uintptr) bool {
			got, ok = sh.recv(fd, m.v.cfg.Sim)
			return true
		})
		if !ok {
			continue // a refused send reports here, as in read
		}
		at := time.Now()
		m.v.mu.Lock()
		m.v.handle(inbound{data: sh.buf[:got], at: at})
		m.v.mu.Unlock()
	}
	return nil
}

func (sh *shard) allLoggedOut() bool {
	for _, m := range sh.members {
		m.v.mu.Lock()
		done := !m.v.moved || m.v.loggedOut
		m.v.mu.Unlock()
		if !done {
			return false
		}
	}
	return true
}

// recv reads one datagram without waiting, and says whether it came from
// sim, as read checks. It calls recvfrom itself: x/sys's Recvfrom builds a
// Sockaddr for every datagram (with a getsockopt in it), a tenth of the
// fleet's CPU in the profile.
func (sh *shard) recv(fd uintptr, sim netip.AddrPort) (int, bool) {
	var from unix.RawSockaddrAny
	fromLen := uint32(unix.SizeofSockaddrAny)
	n, _, errno := unix.Syscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&sh.buf[0])), uintptr(len(sh.buf)),
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

package socks5

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// connect serves a CONNECT request (RFC 1928 §4, §6): dial, reply with the
// outgoing socket's address, then copy both ways until either side ends,
// the session has relayed nothing for IdleTimeout, or the client has
// finished sending and the remote stays silent for HalfCloseTimeout.
func (s *Server) connect(ctx context.Context, conn net.Conn, br *bufio.Reader, client netip.AddrPort, dst Addr) {
	clientStr := client.String()
	if !s.portAllowed(dst.Port) {
		s.stats.refusePort(s.log, clientStr, dst)
		conn.Write(appendReply(nil, repNotAllowed, Addr{}))
		return
	}
	var target net.Conn
	var targetMu sync.Mutex
	stopBoth := func() {
		conn.Close()
		targetMu.Lock()
		if target != nil {
			target.Close()
		}
		targetMu.Unlock()
	}
	sess, ok := s.sessions.admit(kindConnect, client.Addr().Unmap(), time.Now(), s.limits, stopBoth)
	if ok != admitted {
		cause, err := RefusedConnectLimit, fmt.Errorf("%d connects open, none idle %v", s.cfg.MaxConnectsPerClient, s.cfg.EvictIdle)
		if ok == refusedGlobal {
			cause, err = RefusedSessionLimit, fmt.Errorf("%d sessions open in all, none idle %v", s.cfg.MaxSessions, s.cfg.EvictIdle)
		}
		s.stats.refuse(s.log, cause, clientStr, err)
		conn.Write(appendReply(nil, repNotAllowed, Addr{}))
		return
	}
	defer s.endSession(sess)

	dctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
	d := net.Dialer{ControlContext: s.control}
	t, err := d.DialContext(dctx, "tcp", dst.String())
	cancel()
	if err != nil {
		if errors.Is(err, errDestination) {
			// RFC 1928 §6: X'02', connection not allowed by ruleset; the
			// log names the rule.
			s.stats.refuse(s.log, RefusedDestination, clientStr, err)
			conn.Write(appendReply(nil, repNotAllowed, Addr{}))
			return
		}
		s.stats.refuse(s.log, RefusedDialFailed, clientStr, err)
		conn.Write(appendReply(nil, dialReply(err), Addr{}))
		return
	}
	targetMu.Lock()
	target = t
	targetMu.Unlock()
	defer target.Close()
	s.log.Info("CONNECT", "client", clientStr, "to", dst.String())
	if sess.evicted.Load() {
		return // evicted while dialing
	}
	stop := context.AfterFunc(ctx, func() { target.Close() })
	defer stop()

	s.stats.connects.Add(1)
	s.stats.connectsAll.Add(1)
	defer s.stats.connects.Add(-1)
	local := addrPortOf(target.LocalAddr())
	if _, err := conn.Write(appendReply(nil, repSucceeded, Addr{IP: local.Addr().Unmap(), Port: local.Port()})); err != nil {
		return
	}
	conn.SetDeadline(time.Time{})

	sess.touch(time.Now())
	var ended atomic.Int32 // EndCause+1 when the watchdog ended it
	wd := newWatchdog(sess, s.cfg.IdleTimeout, s.cfg.HalfCloseTimeout, func(half bool) {
		c := EndedIdle
		if half {
			c = EndedHalfClose
		}
		ended.Store(int32(c) + 1)
		stopBoth()
	})
	defer wd.end()
	var wg sync.WaitGroup
	wg.Go(func() {
		_, err := io.Copy(counter{target, &s.stats.connectBytes[dirClientToRemote], sess}, br)
		if err != nil {
			target.Close()
			return
		}
		// The client finished sending: pass the half-close on so that the
		// server sees the end of the request and can finish its answer,
		// within HalfCloseTimeout of silence.
		wd.halfClosed(time.Now())
		if tc, ok := target.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
	})
	io.Copy(counter{conn, &s.stats.connectBytes[dirRemoteToClient], sess}, target)
	// The remote side is done; nothing more can be relayed to the client,
	// so ending both connections also frees the goroutine above.
	conn.Close()
	target.Close()
	wg.Wait()
	switch {
	case sess.evicted.Load():
		s.stats.ended[EndedEvicted].Add(1)
	case ended.Load() > 0:
		s.stats.ended[ended.Load()-1].Add(1)
	}
}

// dialReply maps a dial error to the RFC 1928 §6 reply code.
func dialReply(err error) byte {
	var dnsErr *net.DNSError
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return repConnectionRefused
	case errors.Is(err, syscall.ENETUNREACH):
		return repNetworkUnreachable
	case errors.Is(err, syscall.EHOSTUNREACH), errors.As(err, &dnsErr):
		return repHostUnreachable
	case errors.As(err, &ne) && ne.Timeout():
		return repHostUnreachable
	}
	return repGeneralFailure
}

// counter is a writer that adds what it wrote to a counter, and marks the
// session active.
type counter struct {
	w    io.Writer
	n    *atomic.Uint64
	sess *session
}

func (c counter) Write(b []byte) (int, error) {
	c.sess.touch(time.Now())
	n, err := c.w.Write(b)
	c.n.Add(uint64(n))
	return n, err
}

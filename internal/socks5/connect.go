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
// outgoing socket's address, then copy both ways until either side ends.
func (s *Server) connect(ctx context.Context, conn net.Conn, br *bufio.Reader, client netip.AddrPort, dst Addr) {
	clientStr := client.String()
	if !s.portAllowed(dst.Port) {
		s.stats.refuse(s.log, RefusedPort, clientStr, fmt.Errorf("connect to %s", dst))
		conn.Write(appendReply(nil, repNotAllowed, Addr{}))
		return
	}
	if !s.acquire(s.perClientTCP, client.Addr().Unmap(), s.cfg.MaxConnectsPerClient) {
		s.stats.refuse(s.log, RefusedConnectLimit, clientStr, fmt.Errorf("%d connects open", s.cfg.MaxConnectsPerClient))
		conn.Write(appendReply(nil, repNotAllowed, Addr{}))
		return
	}
	defer s.release(s.perClientTCP, client.Addr().Unmap())

	dctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
	var d net.Dialer
	target, err := d.DialContext(dctx, "tcp", dst.String())
	cancel()
	if err != nil {
		s.stats.refuse(s.log, RefusedDialFailed, clientStr, err)
		conn.Write(appendReply(nil, dialReply(err), Addr{}))
		return
	}
	defer target.Close()
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

	var wg sync.WaitGroup
	wg.Go(func() {
		_, err := io.Copy(counter{target, &s.stats.connectBytes[dirClientToRemote]}, br)
		if err != nil {
			target.Close()
			return
		}
		// The client finished sending: pass the half-close on so that the
		// server sees the end of the request and can finish its answer.
		if tc, ok := target.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
	})
	io.Copy(counter{conn, &s.stats.connectBytes[dirRemoteToClient]}, target)
	// The remote side is done; nothing more can be relayed to the client,
	// so ending both connections also frees the goroutine above.
	conn.Close()
	target.Close()
	wg.Wait()
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

// counter is a writer that adds what it wrote to a counter.
type counter struct {
	w io.Writer
	n *atomic.Uint64
}

func (c counter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n.Add(uint64(n))
	return n, err
}

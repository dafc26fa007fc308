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
	"time"
)

// Association is one UDP ASSOCIATE (RFC 1928 §7). It owns two sockets: the
// client-facing one the client sends its wrapped datagrams to, and the relay
// socket every remote host sees, so a simulator meets one stable endpoint
// per viewer circuit set.
type Association struct {
	id         uint64
	srv        *Server
	clientIP   netip.Addr
	clientPort atomic.Uint32 // 0 until declared or learned from the first datagram
	clientSide *net.UDPConn
	// relay is opened at the client's first datagram, bound to the local
	// address the host routes its destination from (or Config.RelayAddr).
	relay atomic.Pointer[relaySocket]
	sess  *session
	done  chan struct{}

	// relayMu orders opening the relay socket against closing it.
	relayMu     sync.Mutex
	relayClosed bool

	// resolved caches domain destinations; only the client loop uses it.
	resolved map[string]netip.Addr
}

// ID numbers associations in the order they were made, from 1.
func (a *Association) ID() uint64 { return a.id }

// ClientAddr is the address the client sends its datagrams from; its port is
// 0 until the client declared it or sent its first datagram.
func (a *Association) ClientAddr() netip.AddrPort {
	return netip.AddrPortFrom(a.clientIP, uint16(a.clientPort.Load()))
}

// relaySocket is an association's remote-facing socket and its address.
type relaySocket struct {
	conn *net.UDPConn
	addr netip.AddrPort
}

// RelayAddr is the local address of the relay socket: the endpoint remote
// hosts see. The socket is opened at the client's first datagram, bound to
// the address the host sends that datagram's destination from (or
// Config.RelayAddr); before, RelayAddr is the zero AddrPort.
func (a *Association) RelayAddr() netip.AddrPort {
	if r := a.relay.Load(); r != nil {
		return r.addr
	}
	return netip.AddrPort{}
}

// errNoRelay: the proxy's own datagram before the client's first.
var errNoRelay = errors.New("no relay socket yet: the client has sent nothing")

// WriteTo sends a datagram of the proxy's own to remote from the relay
// socket, as if the client had sent it. It is safe to call concurrently with
// the relay, and fails before the client's first datagram and once the
// association has ended.
func (a *Association) WriteTo(payload []byte, remote netip.AddrPort) error {
	r := a.relay.Load()
	if r == nil {
		return fmt.Errorf("socks5: association %d: %w", a.id, errNoRelay)
	}
	st := &a.srv.stats
	st.datagrams[dirInjected].Add(1)
	st.datagramBytes[dirInjected].Add(uint64(len(payload)))
	if _, err := r.conn.WriteToUDPAddrPort(payload, remote); err != nil {
		st.datagrams[dirInjected].Add(^uint64(0))
		st.datagramBytes[dirInjected].Add(^uint64(len(payload) - 1))
		return fmt.Errorf("socks5: association %d: %w", a.id, err)
	}
	return nil
}

// Done is closed when the association has ended.
func (a *Association) Done() <-chan struct{} { return a.done }

// resolveTimeout bounds the lookup of a domain destination, which stalls
// the client's direction of this association while it runs.
const resolveTimeout = 2 * time.Second

// maxResolved bounds the per-association name cache.
const maxResolved = 64

// associate serves a UDP ASSOCIATE request. The association lasts as long
// as the TCP control connection (RFC 1928 §7), or until it has relayed
// nothing for IdleTimeout.
func (s *Server) associate(ctx context.Context, conn net.Conn, br *bufio.Reader, client netip.AddrPort, declared Addr) {
	clientStr := client.String()
	clientIP := client.Addr().Unmap()
	sess, ok := s.sessions.admit(kindAssociation, clientIP, time.Now(), s.limits, func() { conn.Close() })
	if ok != admitted {
		cause, err := RefusedAssociationLimit, fmt.Errorf("%d associations open, none idle %v", s.cfg.MaxAssociationsPerClient, s.cfg.EvictIdle)
		if ok == refusedGlobal {
			cause, err = RefusedSessionLimit, fmt.Errorf("%d sessions open in all, none idle %v", s.cfg.MaxSessions, s.cfg.EvictIdle)
		}
		s.stats.refuse(s.log, cause, clientStr, err)
		conn.Write(appendReply(nil, repNotAllowed, Addr{}))
		return
	}
	defer s.endSession(sess)

	a, err := s.newAssociation(conn, clientIP, sess)
	var fromClient *batchReader
	var toClient *batchWriter
	if err == nil {
		if fromClient, err = newBatchReader(a.clientSide, 0); err == nil {
			toClient, err = newBatchWriter(a.clientSide)
		}
		if err != nil {
			a.clientSide.Close()
		}
	}
	if err != nil {
		s.stats.refuse(s.log, RefusedUDPSetup, clientStr, err)
		conn.Write(appendReply(nil, repGeneralFailure, Addr{}))
		return
	}
	s.log.Info("UDP association", "client", clientStr)
	// RFC 1928 §7: DST.ADDR/DST.PORT name where the client will send from.
	// Only the port is taken: the address may be unspecified or, behind a
	// NAT, not the one the proxy sees, and the control connection's address
	// is the one the RFC asks the server to hold the client to.
	if declared.Port != 0 {
		a.clientPort.Store(uint32(declared.Port))
	}
	s.stats.associations.Add(1)
	s.stats.associationsAll.Add(1)
	bnd := addrPortOf(a.clientSide.LocalAddr())
	if _, err := conn.Write(appendReply(nil, repSucceeded, Addr{IP: bnd.Addr().Unmap(), Port: bnd.Port()})); err != nil {
		s.stats.associations.Add(-1)
		a.clientSide.Close()
		return
	}
	conn.SetDeadline(time.Time{})

	sess.touch(time.Now())
	var idle atomic.Bool
	wd := newWatchdog(sess, s.cfg.IdleTimeout, s.cfg.IdleTimeout, func(bool) { idle.Store(true); conn.Close() })
	var wg sync.WaitGroup
	// The remote direction starts with the relay socket, at the client's
	// first datagram.
	wg.Go(func() { a.relayFromClient(fromClient, toClient, &wg) })
	// Nothing is expected on the control connection; it is read only to
	// learn when it ends (EOF, reset, serveConn closing it at shutdown, or
	// the watchdog or an eviction closing it).
	io.Copy(io.Discard, br)
	wd.end()
	// Both at once: closing a socket waits for its reader to leave the
	// read, and a reader may be waiting to write into the other socket.
	// The client socket's reader opens the relay socket: once it has
	// returned, a.relay is final.
	a.clientSide.Close()
	a.closeRelay()
	wg.Wait()
	s.stats.associations.Add(-1)
	switch {
	case sess.evicted.Load():
		s.stats.ended[EndedEvicted].Add(1)
	case idle.Load():
		s.stats.ended[EndedIdle].Add(1)
	}
	close(a.done)
	if s.cfg.Hooks != nil {
		s.cfg.Hooks.AssociationClosed(a)
	}
}

// closeRelay closes the relay socket if it was opened, and marks it so
// that none is opened after.
func (a *Association) closeRelay() {
	a.relayMu.Lock()
	defer a.relayMu.Unlock()
	a.relayClosed = true
	if r := a.relay.Load(); r != nil {
		r.conn.Close()
	}
}

func (s *Server) newAssociation(conn net.Conn, clientIP netip.Addr, sess *session) (*Association, error) {
	// The client-facing socket listens on the address the client reached
	// the proxy at, so a loopback proxy never opens a port elsewhere.
	local := addrPortOf(conn.LocalAddr()).Addr().Unmap()
	clientSide, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(local, 0)))
	if err != nil {
		return nil, fmt.Errorf("opening client socket: %w", err)
	}
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	s.mu.Unlock()
	return &Association{
		id:         id,
		srv:        s,
		clientIP:   clientIP,
		clientSide: clientSide,
		sess:       sess,
		done:       make(chan struct{}),
		resolved:   make(map[string]netip.Addr),
	}, nil
}

// openRelay opens the relay socket, bound to Config.RelayAddr or else to
// the local address the host sends to first from (the kernel's choice of
// source address, asked by connecting a UDP socket, which sends nothing),
// so that the socket is reachable only where the simulators are, and
// starts the remote direction in wg. It returns the writer towards the
// remotes, or nil if the association is ending.
func (a *Association) openRelay(first netip.AddrPort, toClient *batchWriter, wg *sync.WaitGroup) (*batchWriter, error) {
	bind := a.srv.cfg.RelayAddr
	if !bind.IsValid() {
		probe, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(first))
		if err != nil {
			return nil, fmt.Errorf("no route to %v: %w", first, err)
		}
		bind = probe.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap()
		probe.Close()
	}
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(bind, 0)))
	if err != nil {
		return nil, fmt.Errorf("opening relay socket: %w", err)
	}
	// The remote direction reads each payload behind room for the longest
	// SOCKS header, so wrapping it needs no copy.
	fromRemote, err := newBatchReader(conn, udpHeaderIPv6)
	var toRemote *batchWriter
	if err == nil {
		toRemote, err = newBatchWriter(conn)
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	a.relayMu.Lock()
	defer a.relayMu.Unlock()
	if a.relayClosed {
		conn.Close()
		return nil, nil
	}
	a.relay.Store(&relaySocket{conn: conn, addr: addrPortOf(conn.LocalAddr())})
	wg.Go(func() { a.relayFromRemote(fromRemote, toClient) })
	return toRemote, nil
}

// maxDatagram is the largest UDP payload IPv4 or IPv6 (without jumbograms)
// can carry.
const maxDatagram = 65535

// relayFromClient unwraps the client's datagrams and sends them on from the
// relay socket, a batch at a time, to the ports Config.UDPPorts allows; it
// opens the relay socket at the first, and starts the remote direction in
// wg. It ends when the client socket is closed.
func (a *Association) relayFromClient(in *batchReader, toClient *batchWriter, wg *sync.WaitGroup) {
	s := a.srv
	var out *batchWriter
	batch := make([]Datagram, 0, len(in.slots))
	send := make([]outgoing, 0, len(in.slots))
	in.relay(func(n int) {
		at := s.cfg.Now()
		batch = batch[:0]
		for _, sl := range in.slots[:n] {
			from := sl.from
			port := uint16(a.clientPort.Load())
			if from.Addr() != a.clientIP || port != 0 && from.Port() != port {
				s.stats.drop(s.log, DroppedForeignSource, from, netip.AddrPort{})
				continue
			}
			if port == 0 {
				a.clientPort.Store(uint32(from.Port()))
			}
			wrapped := sl.buf[:sl.n]
			dst, off, err := parseUDPHeader(wrapped)
			if err != nil {
				s.stats.drop(s.log, dropCauseOf(err), from, netip.AddrPort{})
				continue
			}
			remote, ok := a.resolve(dst)
			if !ok {
				s.stats.drop(s.log, DroppedUnresolved, from, netip.AddrPort{})
				continue
			}
			if !s.cfg.UDPPorts.Contains(remote.Port()) {
				s.stats.dropPort(s.log, from, remote)
				continue
			}
			batch = append(batch, Datagram{Remote: remote, Payload: wrapped[off:], At: at})
		}
		if len(batch) == 0 {
			return
		}
		a.sess.touch(at)
		if out == nil {
			var err error
			if out, err = a.openRelay(batch[0].Remote, toClient, wg); out == nil {
				for _, d := range batch {
					s.stats.drop(s.log, DroppedSendFailed, a.ClientAddr(), d.Remote)
				}
				if err != nil {
					s.log.Warn("socks5 association: no relay socket", "association", a.id, "err", err)
				}
				return
			}
		}
		if s.cfg.Hooks != nil {
			s.cfg.Hooks.ClientDatagrams(a, batch)
		}
		send = send[:0]
		var bytes uint64
		for _, d := range batch {
			if d.Payload == nil {
				s.stats.drop(s.log, DroppedByHook, a.ClientAddr(), d.Remote)
				continue
			}
			send = append(send, outgoing{payload: d.Payload, to: d.Remote, counted: len(d.Payload)})
			bytes += uint64(len(d.Payload))
		}
		a.relayBatch(out, send, bytes, dirClientToRemote)
	})
}

// relayBatch sends a batch and counts it. It is counted before sending,
// so that whoever receives a datagram finds it counted; what the kernel
// refuses is taken back and counted as dropped.
func (a *Association) relayBatch(w *batchWriter, send []outgoing, bytes uint64, dir int) {
	if len(send) == 0 {
		return
	}
	st := &a.srv.stats
	st.datagrams[dir].Add(uint64(len(send)))
	st.datagramBytes[dir].Add(bytes)
	if w.write(send) == 0 {
		return
	}
	for _, o := range send {
		if o.failed {
			st.datagrams[dir].Add(^uint64(0))
			st.datagramBytes[dir].Add(-uint64(o.counted))
			st.drop(a.srv.log, DroppedSendFailed, netip.AddrPort{}, o.to)
		}
	}
}

func dropCauseOf(err error) DropCause {
	switch {
	case errors.Is(err, errFragment):
		return DroppedFragment
	case errors.Is(err, errShort):
		return DroppedShortHeader
	}
	return DroppedAddressType
}

func (a *Association) resolve(dst Addr) (netip.AddrPort, bool) {
	if dst.Name == "" {
		return netip.AddrPortFrom(dst.IP.Unmap(), dst.Port), true
	}
	ip, ok := a.resolved[dst.Name]
	if !ok {
		ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", dst.Name)
		cancel()
		if err != nil || len(ips) == 0 {
			return netip.AddrPort{}, false
		}
		if len(a.resolved) >= maxResolved {
			clear(a.resolved)
		}
		// LLUDP simulators are IPv4 (OpenSim binds an IPv4 InternalAddress,
		// Second Life's hosts have no AAAA records), and "localhost" often
		// lists ::1 first: prefer an IPv4 address when there is one.
		ip = ips[0].Unmap()
		for _, cand := range ips {
			if cand.Unmap().Is4() {
				ip = cand.Unmap()
				break
			}
		}
		a.resolved[dst.Name] = ip
	}
	return netip.AddrPortFrom(ip, dst.Port), true
}

// relayFromRemote wraps every datagram arriving at the relay socket in a
// header naming its source and sends it to the client, a batch at a time.
// Each payload was read behind room for the longest header, so wrapping
// needs no copy.
func (a *Association) relayFromRemote(in *batchReader, out *batchWriter) {
	s := a.srv
	batch := make([]Datagram, 0, len(in.slots))
	send := make([]outgoing, 0, len(in.slots))
	room := in.headroom
	in.relay(func(n int) {
		at := s.cfg.Now()
		client := a.ClientAddr()
		if client.Port() == 0 {
			for _, sl := range in.slots[:n] {
				s.stats.drop(s.log, DroppedClientUnknown, sl.from, netip.AddrPort{})
			}
			return
		}
		a.sess.touch(at)
		batch = batch[:0]
		for _, sl := range in.slots[:n] {
			// Capped: the hook may read the payload, not grow it into the
			// next slot.
			batch = append(batch, Datagram{Remote: sl.from, Payload: sl.buf[room : room+sl.n : room+sl.n], At: at})
		}
		if s.cfg.Hooks != nil {
			s.cfg.Hooks.RemoteDatagrams(a, batch)
		}
		send = send[:0]
		var bytes uint64
		for _, sl := range in.slots[:n] {
			start := room - udpHeaderLen(sl.from)
			putUDPHeader(sl.buf[start:room], sl.from)
			send = append(send, outgoing{payload: sl.buf[start : room+sl.n], to: client, counted: sl.n})
			bytes += uint64(sl.n)
		}
		a.relayBatch(out, send, bytes, dirRemoteToClient)
	})
}

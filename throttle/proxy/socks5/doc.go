// Package socks5 is the SOCKS5 server (RFC 1928, with RFC 1929
// username/password) behind `fairgrid proxy`, and the small client the
// synthetic viewer uses for `fairgrid viewer --socks5`.
//
// # Why a proxy
//
// Every Second Life–derived viewer can send its UDP through a SOCKS 5
// proxy (llproxy.cpp, "Use SOCKS 5 proxy for UDP traffic"). A proxy in that
// path sees every LLUDP datagram from the endpoint the simulator already
// knows, so fairgrid can measure a circuit and replace the viewer's
// AgentThrottle in flight without raw sockets or spoofing.
//
// # Model
//
// A Server accepts TCP sessions. Each session negotiates a method (RFC 1928
// §3: no authentication, or username/password when Config.Auth is set),
// then sends one request (§4):
//
//   - CONNECT: the server dials the destination, if its port is allowed,
//     replies with the outgoing socket's address (§6) and copies bytes both
//     ways. The viewer's login (XML-RPC), capabilities and event queue are
//     HTTP(S) and use this.
//
//   - UDP ASSOCIATE (§7): the server opens two UDP sockets and replies with
//     the client-facing one's address. The client wraps each datagram in a
//     header naming the destination:
//
//     +-----+------+------+----------+----------+----------+
//     | RSV | FRAG | ATYP | DST.ADDR | DST.PORT |   DATA   |
//     +-----+------+------+----------+----------+----------+
//     |  2  |  1   |  1   | Variable |    2     | Variable |
//     +-----+------+------+----------+----------+----------+
//
//     The server unwraps it and sends DATA from the relay socket, the one
//     socket every remote host of the association sees: a simulator meets
//     one stable endpoint per viewer. Datagrams arriving at the relay socket
//     are wrapped in a header naming their source and sent to the client.
//     The association lasts as long as the TCP control connection.
//
//   - BIND and anything else: reply X'07' (command not supported), close.
//
// Hooks see each relayed datagram with the time it was received and may
// replace a client datagram's payload; an Association can send datagrams of
// the proxy's own from its relay socket. The package does not parse LLUDP:
// whatever a remote host sends is relayed unchanged, so the proxy never
// breaks a circuit it does not understand; understanding is the hooks' job.
//
// # Speed
//
// Each direction of an association is one goroutine that reads whatever
// datagrams are queued at its socket, up to 16, and sends them on together:
// on Linux one recvmmsg(2) and one sendmmsg(2) per batch (batch_linux.go),
// elsewhere one datagram per read. The clock is read once per batch, the
// hooks are called once per batch, and the relay allocates nothing per
// datagram (TestRelayAllocs). A simulator's burst of ImagePackets thus costs
// one goroutine wake-up, and a wake-up two system calls: a batch shorter
// than 16 means the kernel found the queue empty, so the relay goes back
// to Go's poller without the read that would only hear EAGAIN
// (TestRelayWakesForDatagramDuringBatch keeps that from losing a
// wake-up). Against a plain two-goroutine UDP relay in the same
// run (`make bench-proxy`), the proxy with fairgrid's measurement and
// rewrite relays more datagrams per CPU-second; at a viewer's 5 Mbit/s both
// spend most of their CPU in wake-ups and the kernel's loopback path.
//
// # Security
//
// An open SOCKS5 proxy relays anything for anyone, so:
//
//   - CheckListen refuses a non-loopback listen address unless a username
//     and password are configured.
//   - A client-facing UDP socket accepts datagrams only from the client
//     that made the association (RFC 1928 §7: the IP address of the TCP
//     control connection, and the port the client declared in its request,
//     or else the port of its first datagram). Others are dropped.
//   - Fragmented datagrams (FRAG != 0) are dropped: §7 makes reassembly
//     optional, and no viewer fragments.
//   - Associations and CONNECT sessions open at once are limited per client
//     IP address (Config.MaxAssociationsPerClient, MaxConnectsPerClient)
//     and in all (MaxSessions), and so are connections still in the
//     handshake (MaxHandshakesPerClient, MaxHandshakes). Past a cap a new
//     session takes the place of the oldest silent handshake or of the
//     session idle longest (at least EvictIdle), taken from the address
//     holding the most when a global cap is full (limits.go); otherwise it
//     is refused.
//   - A session that relays nothing for IdleTimeout ends; so does a
//     CONNECT whose client half-closed and whose remote stays silent for
//     HalfCloseTimeout.
//   - CONNECT never reaches the proxy's own listener or Config.OwnAddrs
//     and, when the proxy listens beyond loopback, nothing loopback,
//     unspecified or link-local, checked on the address dialed (dest.go).
//   - UDP goes only to Config.UDPPorts (the simulator ports), from a relay
//     socket bound at the client's first datagram to the source address
//     the host routes that destination from.
//   - Past two failed logins in a row, an address's logins are refused
//     unchecked for a time that doubles at each failure; failures are
//     logged per address at a bounded rate (backoff.go).
//   - CONNECT reaches only the ports in Config.AllowedPorts, by default
//     DefaultAllowedPorts:
//     80 and 443: HTTP and HTTPS (Second Life's login at
//     login.agni.lindenlab.com:443, web profiles, map tiles);
//     8002: an OpenSim grid's ROBUST login and grid services;
//     9000–13100: OpenSim region HTTP servers, which serve a region's
//     capabilities and event queue on the region's own port (9000 by
//     default, one port per region upwards);
//     12043 and 12046: Second Life simulators' capabilities (HTTPS, 12043)
//     and capabilities/event queue (12046).
//   - Every handshake has a deadline (Config.HandshakeTimeout), so a client
//     that stops mid-handshake holds no goroutine; a CONNECT's dial gives
//     up before it (DialTimeout), so the client gets the RFC's reply.
//
// docs/proxy.md states each defence, its reason, its limit and its test.
//
// Everything refused or dropped is counted by cause (RefusalCause,
// DropCause) and logged once per cause, never per packet. Server.Collector
// exports the counters as fairgrid_proxy_* metrics.
//
// # Bad input
//
// A greeting with a wrong version, garbage or a truncated message is closed
// without a reply, since RFC 1928 defines none before a method is chosen (and
// a SOCKS4 client would misread one). No acceptable method (or an empty
// method list) gets X'FF' (§3); a failed login or a malformed
// username/password message status 1 (RFC 1929 §2); a request with a wrong
// version, a set reserved octet or an invalid domain name (empty, longer than
// 253 octets, or holding bytes no host name has) X'01'; an unknown address
// type X'08'; BIND or an unknown command X'07' (§6). Each is followed by
// close. A handshake that stalls ends at its deadline.
//
// # Lifecycle
//
// New starts nothing. Serve runs until its context ends, then closes the
// listener and every session and waits for all goroutines it started.
package socks5

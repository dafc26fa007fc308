// Package proxy is `fairgrid proxy`: the SOCKS 5 server of
// throttle/proxy/socks5 (RFC 1928, RFC 1929) with fairgrid's sidecar behind it,
// for viewers on any OS and without root.
//
// # Model
//
// Every Second Life–derived viewer can send its UDP through a SOCKS 5
// proxy (llproxy.cpp, "Use SOCKS 5 proxy for UDP traffic"). Each UDP
// association gets one relay socket, the endpoint the simulator sees; a
// circuit is keyed by that endpoint (the relay's port, from the local
// address the host routes the simulator from), as a capture on the host
// would key it. The server's hooks hand every relayed datagram, with the
// time the relay read it, to a sidecar.PushSource the sidecar measures;
// the viewer's own AgentThrottles get fairgrid's current request in their
// body (same sequence number, flags and acks: lludp.AppendReplacedThrottles),
// and the loop's periodic requests leave from the association's relay
// socket (Proxy.Send). An association that ends takes its circuits out of
// the loop at once.
//
// # Lifecycle
//
// New builds the server and the sidecar and starts nothing; AddTo adds
// the server and the sidecar's members to the front-end's group.Group,
// whose first error the command returns.
//
// # Security
//
// What the proxy refuses, and why, is the server's (throttle/proxy/socks5, and
// docs/proxy.md): a listen address beyond loopback needs credentials
// (Config.CheckListen resolves a name before it decides), CONNECT and UDP
// destinations are limited, sessions are capped per address and in all,
// every session has deadlines.
package proxy

package socks5_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"time"

	"github.com/fairgrid/fairgrid/throttle/proxy/socks5"
	"github.com/prometheus/client_golang/prometheus"
)

// rewriter is a Hooks that sees every datagram, a batch at a time; a real
// proxy measures here and replaces the body of each AgentThrottle.
type rewriter struct{}

func (rewriter) ClientDatagrams(a *socks5.Association, batch []socks5.Datagram) {
	for i := range batch {
		if len(batch[i].Payload) == 0 {
			batch[i].Payload = nil // nothing to relay: drop it
		}
	}
}
func (rewriter) RemoteDatagrams(a *socks5.Association, batch []socks5.Datagram) {}
func (rewriter) AssociationClosed(a *socks5.Association)                        {}

// The proxy command: check the listen address, build the server, register
// its metrics, serve until the context ends.
func ExampleServer() {
	listen, auth := "127.0.0.1:1080", (*socks5.Auth)(nil)
	listen, err := socks5.CheckListen(listen, auth)
	if err != nil {
		panic(err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	srv, err := socks5.New(socks5.Config{Auth: auth, Hooks: rewriter{}}, logger)
	if err != nil {
		panic(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(srv.Collector())
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if err := srv.Serve(ctx, ln); err != nil {
		panic(err)
	}
}

// The synthetic viewer: UDP through the proxy, as the Second Life viewer
// does with "Use SOCKS 5 proxy for UDP traffic", and HTTP through CONNECT.
func ExampleDialUDP() {
	ctx := context.Background()
	auth := &socks5.Auth{Username: "viewer", Password: "secret"}
	conn, err := socks5.DialUDP(ctx, "127.0.0.1:1080", auth)
	if err != nil {
		return
	}
	defer conn.Close()
	sim := netip.MustParseAddrPort("127.0.0.1:9000")
	conn.WriteToUDPAddrPort([]byte{0x40, 0, 0, 0, 1, 0}, sim)
	buf := make([]byte, 2048)
	n, from, err := conn.ReadFromUDPAddrPort(buf)
	_, _, _ = n, from, err

	d := &socks5.Dialer{ProxyAddr: "127.0.0.1:1080", Auth: auth}
	web := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	web.Get("http://127.0.0.1:9000/get_grid_info")
}

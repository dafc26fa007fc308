package socks5

import (
	"bufio"
	"context"
	"fmt"
	"github.com/fairgrid/fairgrid/lludp"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestCollector relays one datagram each way, injects one, refuses one
// CONNECT and drops one fragment, then compares the exposition.
func TestCollector(t *testing.T) {
	srv := startServer(t, Config{})
	sim := udpPeer(t)
	simAddr := addrPortOf(sim.LocalAddr())
	c := dialUDP(t, srv, nil)
	c.WriteToUDPAddrPort([]byte("12345"), simAddr)
	_, relayFrom := readOne(t, sim)
	sim.WriteToUDPAddrPort([]byte("123"), relayFrom)
	if _, _, err := c.ReadFromUDPAddrPort(make([]byte, 16)); err != nil {
		t.Fatal(err)
	}
	frag := []byte{0, 0, 1, 1, 127, 0, 0, 1, 0, 80}
	c.pc.WriteToUDPAddrPort(frag, c.relay)
	c.WriteToUDPAddrPort([]byte("x"), simAddr)
	readOne(t, sim)
	ctx, cancel := context.WithTimeout(context.Background(), ioDeadline)
	defer cancel()
	d := Dialer{ProxyAddr: srv.addr}
	if _, err := d.DialContext(ctx, "tcp", "127.0.0.1:22"); err == nil {
		t.Fatal("connect to port 22 allowed")
	}

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(srv.Collector())
	var want strings.Builder
	want.WriteString("# HELP fairgrid_proxy_refused_total SOCKS5 sessions refused, by cause.\n# TYPE fairgrid_proxy_refused_total counter\n")
	for cause := range numRefusalCauses {
		fmt.Fprintf(&want, "fairgrid_proxy_refused_total{cause=%q} %d\n", cause, map[bool]int{true: 1}[cause == RefusedPort])
	}
	want.WriteString("# HELP fairgrid_proxy_dropped_datagrams_total UDP datagrams dropped by the relay, by cause.\n# TYPE fairgrid_proxy_dropped_datagrams_total counter\n")
	for cause := range numDropCauses {
		fmt.Fprintf(&want, "fairgrid_proxy_dropped_datagrams_total{cause=%q} %d\n", cause, map[bool]int{true: 1}[cause == DroppedFragment])
	}
	want.WriteString(`# HELP fairgrid_proxy_relayed_datagrams_total UDP datagrams relayed, by direction (injected: the proxy's own).
# TYPE fairgrid_proxy_relayed_datagrams_total counter
fairgrid_proxy_relayed_datagrams_total{direction="client_to_remote"} 2
fairgrid_proxy_relayed_datagrams_total{direction="injected"} 0
fairgrid_proxy_relayed_datagrams_total{direction="remote_to_client"} 1
# HELP fairgrid_proxy_relayed_bytes_total UDP payload bytes relayed (SOCKS header excluded), by direction.
# TYPE fairgrid_proxy_relayed_bytes_total counter
fairgrid_proxy_relayed_bytes_total{direction="client_to_remote"} 6
fairgrid_proxy_relayed_bytes_total{direction="injected"} 0
fairgrid_proxy_relayed_bytes_total{direction="remote_to_client"} 3
# HELP fairgrid_proxy_associations UDP associations open.
# TYPE fairgrid_proxy_associations gauge
fairgrid_proxy_associations 1
# HELP fairgrid_proxy_associations_total UDP associations opened.
# TYPE fairgrid_proxy_associations_total counter
fairgrid_proxy_associations_total 1
# HELP fairgrid_proxy_connects CONNECT sessions open.
# TYPE fairgrid_proxy_connects gauge
fairgrid_proxy_connects 0
# HELP fairgrid_proxy_connects_total CONNECT sessions opened.
# TYPE fairgrid_proxy_connects_total counter
fairgrid_proxy_connects_total 0
`)
	names := []string{"fairgrid_proxy_refused_total", "fairgrid_proxy_dropped_datagrams_total", "fairgrid_proxy_relayed_datagrams_total",
		"fairgrid_proxy_relayed_bytes_total", "fairgrid_proxy_associations", "fairgrid_proxy_associations_total",
		"fairgrid_proxy_connects", "fairgrid_proxy_connects_total"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want.String()), names...); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(reg, "fairgrid_proxy_connect_bytes_total"); err != nil || n != 2 {
		t.Errorf("connect bytes series %d (%v), want 2", n, err)
	}
}

// TestConnectOptimisticData sends greeting, request and an HTTP request in
// one write, before any reply, as clients with optimistic data do; the
// proxy must pass the early bytes on.
func TestConnectOptimisticData(t *testing.T) {
	_, port := httpTarget(t)
	srv := startServer(t, Config{AllowedPorts: lludp.Ports{{Lo: port, Hi: port}}})
	conn, err := net.Dial("tcp", srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(ioDeadline))
	msg := append([]byte{5, 1, 0}, reqBytes(cmdConnect, atypIPv4, []byte{127, 0, 0, 1}, port)...)
	msg = append(msg, "GET /early HTTP/1.0\r\nHost: grid\r\n\r\n"...)
	if _, err := conn.Write(msg); err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 2+10)
	if _, err := io.ReadFull(conn, head); err != nil {
		t.Fatal(err)
	}
	if head[1] != methodNoAuth || head[3] != repSucceeded {
		t.Fatalf("handshake replies %x", head)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if string(body) != "hello /early via grid" {
		t.Errorf("body %q", body)
	}
}

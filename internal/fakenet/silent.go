package fakenet

import (
	"io"
	"net"
	"net/netip"
	"sync"
	"testing"
)

// SilentRemote listens on a loopback port until the test ends, accepts
// connections and reads them to the end, never writing and never
// closing: a remote that keeps a CONNECT open. It is a real socket, for
// tests outside synctest's bubble.
func SilentRemote(t testing.TB) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
			go io.Copy(io.Discard, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().(*net.TCPAddr).AddrPort()
}

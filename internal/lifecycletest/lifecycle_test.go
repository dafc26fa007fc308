package lifecycletest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// recorder is a testing.TB that records whether a check failed.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true; panic(r) }

// check runs Released on a recorder and reports whether it failed.
func check(t *testing.T, least int, open func() io.Closer) (failed bool) {
	r := &recorder{TB: t}
	defer func() {
		if v := recover(); v != nil && v != r {
			panic(v)
		}
		failed = r.failed
	}()
	Released(r, least, open)
	return r.failed
}

// closer closes its sockets once, as the lifecycle rule asks; a leaky
// one leaves its last socket open.
type closer struct {
	conns []net.PacketConn
	leaky bool
	once  sync.Once
}

func (c *closer) Close() error {
	c.once.Do(func() {
		n := len(c.conns)
		if c.leaky {
			n--
		}
		for _, conn := range c.conns[:n] {
			conn.Close()
		}
	})
	return nil
}

func listen(t *testing.T) net.PacketConn {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestReleased: a closer that releases passes; one that leaks a socket,
// or acquires less than it claims, fails.
func TestReleased(t *testing.T) {
	Open(t)
	if check(t, 2, func() io.Closer { return &closer{conns: []net.PacketConn{listen(t), listen(t)}} }) {
		t.Error("two sockets closed by their Close failed the check")
	}
	var leaked []net.PacketConn
	if !check(t, 1, func() io.Closer {
		c := &closer{conns: []net.PacketConn{listen(t), listen(t)}, leaky: true}
		leaked = append(leaked, c.conns[1])
		return c
	}) {
		t.Error("a closer that leaks a socket passed")
	}
	for _, c := range leaked {
		c.Close()
	}
	if !check(t, 2, func() io.Closer { return &closer{conns: []net.PacketConn{listen(t)}} }) {
		t.Error("one socket passed as two")
	}
}

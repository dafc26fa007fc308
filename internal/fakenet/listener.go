// Package fakenet has stand-ins for the sockets a front-end's lifecycle
// tests give its group: a member serving a fake runs inside synctest's
// bubble, where one blocked on a real socket would stop the clock. Beside
// them, SilentRemote is a real peer that never answers.
package fakenet

import (
	"net"
	"sync"
)

// Listener is a net.Listener that accepts nothing: Accept fails with err
// at once, or, when err is nil, blocks until Close and then returns
// net.ErrClosed (a server with no clients).
type Listener struct {
	err       error
	closed    chan struct{}
	closeOnce sync.Once
}

// NewListener returns a Listener whose Accept fails with err, or blocks
// until Close when err is nil.
func NewListener(err error) *Listener { return &Listener{err: err, closed: make(chan struct{})} }

// Accept returns the listener's error, or waits for Close.
func (l *Listener) Accept() (net.Conn, error) {
	if l.err != nil {
		return nil, l.err
	}
	<-l.closed
	return nil, net.ErrClosed
}

// Close ends a blocked Accept; it may be called more than once.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

// Addr is a loopback TCP address, for logs.
func (l *Listener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// Closed reports whether Close has been called: a test's check that its
// owner let go of it.
func (l *Listener) Closed() bool {
	select {
	case <-l.closed:
		return true
	default:
		return false
	}
}

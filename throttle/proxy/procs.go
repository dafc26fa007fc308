package proxy

import "runtime"

// SetProcs runs the proxy's Go code on one core unless env (the
// GOMAXPROCS environment variable) sets a number. A viewer's traffic is
// far below what one core relays (over 100,000 datagrams a second), and
// the relay's work per wake-up is a few microseconds; with a second
// processor idle, the runtime wakes another thread at each datagram's
// wake-up to look for work that is not there (a futex call, and a
// thread on a second core that finds nothing). At 5 Mbit/s that was
// most of the proxy's system calls beside the relay's own
// (make bench-proxy; docs/speed.md).
func SetProcs(env string) {
	if env == "" {
		runtime.GOMAXPROCS(1)
	}
}

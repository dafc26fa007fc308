package status

import (
	"fmt"
	"sync"
	"time"

	"github.com/fairgrid/fairgrid/opensim/gateway"
)

// CaptureQuiet is how long run's capture may see no simulator datagram
// before /healthz says so: a logged-in viewer's simulator pings it every
// 5 s.
const CaptureQuiet = 30 * time.Second

// CaptureHealth is run's Config.Health: the capture on iface open, and a
// simulator datagram (of captured, the capture's count so far) seen
// within CaptureQuiet.
func CaptureHealth(iface, ports string, captured func() uint64) func(time.Time) (bool, []string) {
	var mu sync.Mutex
	var last uint64
	var at time.Time
	return func(now time.Time) (bool, []string) {
		mu.Lock()
		defer mu.Unlock()
		n := captured()
		if at.IsZero() || n != last {
			last, at = n, now
		}
		quiet := now.Sub(at).Round(time.Second)
		if n == 0 || quiet > CaptureQuiet {
			return false, []string{fmt.Sprintf("capture on %s: no simulator datagram (capture.ports %s) for %v; is a viewer logged in, on this interface?", iface, ports, quiet)}
		}
		return true, []string{fmt.Sprintf("capture on %s: %d datagrams, the last %v ago", iface, n, quiet)}
	}
}

// ListenHealth is the proxy's: listening. The page is served by the
// proxy's group, which ends when the listener fails, so it is healthy
// whenever it answers.
func ListenHealth(what string) func(time.Time) (bool, []string) {
	return func(time.Time) (bool, []string) { return true, []string{what + " is listening"} }
}

// GatewayHealth is the gateway's: 200 when every route's region answers
// (or has not been sent anything yet), 503 naming those that do not, so a
// load balancer or a monitor sees a region that is down behind a gateway
// that is up.
func GatewayHealth(gw *gateway.Gateway) func(time.Time) (bool, []string) {
	return func(time.Time) (bool, []string) {
		ok := true
		var lines []string
		for _, h := range gw.Health() {
			ok = ok && h.Answers
			lines = append(lines, h.String())
		}
		return ok, lines
	}
}

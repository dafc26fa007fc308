package status

import (
	"strings"
	"testing"
	"time"
)

// TestParseAddr: fairgrid status's ADDR is HOST:PORT, or a URL of the
// page as a browser shows it; anything else is refused saying what is
// wanted.
func TestParseAddr(t *testing.T) {
	for _, tc := range []struct {
		arg, want, err string
	}{
		{"127.0.0.1:9102", "127.0.0.1:9102", ""},
		{"http://127.0.0.1:9102/", "127.0.0.1:9102", ""},
		{"http://[::1]:9101/metrics", "[::1]:9101", ""},
		{"127.0.0.1", "", `ADDR "127.0.0.1": want HOST:PORT`},
		{"127.0.0.1:99999", "", `port "99999": want 1 to 65535`},
		{"127.0.0.1:0", "", `port "0": want 1 to 65535`},
		{"127.0.0.1:http", "", `port "http": want 1 to 65535`},
	} {
		got, err := ParseAddr(tc.arg)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseAddr(%q) = %q, %v; want %q, an error with %q", tc.arg, got, err, tc.want, tc.err)
		}
	}
}

// TestCaptureHealth: run's /healthz is unhealthy until a simulator
// datagram is captured, healthy while they keep coming, and unhealthy
// again once none has come for more than CaptureQuiet.
func TestCaptureHealth(t *testing.T) {
	var n uint64
	health := CaptureHealth("lo", "9000-9050", func() uint64 { return n })
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		at   time.Duration
		n    uint64
		ok   bool
		line string
	}{
		{0, 0, false, "capture on lo: no simulator datagram (capture.ports 9000-9050) for 0s"},
		{time.Second, 5, true, "capture on lo: 5 datagrams, the last 0s ago"},
		{time.Second + CaptureQuiet, 5, true, "capture on lo: 5 datagrams, the last 30s ago"},
		{2*time.Second + CaptureQuiet, 5, false, "no simulator datagram (capture.ports 9000-9050) for 31s"},
		{3*time.Second + CaptureQuiet, 6, true, "6 datagrams, the last 0s ago"},
	} {
		n = tc.n
		ok, lines := health(t0.Add(tc.at))
		if ok != tc.ok || len(lines) != 1 || !strings.Contains(lines[0], tc.line) {
			t.Errorf("at %v with %d captured: %v %q; want %v with %q", tc.at, tc.n, ok, lines, tc.ok, tc.line)
		}
	}
}

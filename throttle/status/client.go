package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultAddrs are the front-ends' default metrics addresses
// (configs/fairgrid.toml), the proxy's first: the one a viewer's user
// runs.
var DefaultAddrs = []string{"127.0.0.1:9102", "127.0.0.1:9101", "127.0.0.1:9103"}

// ParseAddr is the host:port of arg, which may be given as a URL of the
// page (http://127.0.0.1:9102/ or its /metrics, as a browser shows it).
func ParseAddr(arg string) (string, error) {
	hostPort := strings.TrimPrefix(arg, "http://")
	if i := strings.IndexByte(hostPort, '/'); i >= 0 {
		hostPort = hostPort[:i]
	}
	_, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return "", fmt.Errorf("ADDR %q: want HOST:PORT, such as 127.0.0.1:9102", arg)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("ADDR %q: port %q: want 1 to 65535", arg, port)
	}
	return hostPort, nil
}

// Retry is how often Wait asks again.
const Retry = 250 * time.Millisecond

// Wait asks addrs in turn (First), every Retry, until a circuit receives
// or wait has passed; then it returns the last answer, or why none of
// addrs answered.
func Wait(addrs []string, timeout, wait time.Duration) (Snapshot, string, []string) {
	deadline := time.Now().Add(wait)
	tick := time.NewTicker(Retry)
	defer tick.Stop()
	for {
		snap, addr, errs := First(addrs, timeout)
		if !time.Now().Before(deadline) || len(errs) == 0 && snap.Flowing() {
			return snap, addr, errs
		}
		<-tick.C
	}
}

// First is the state at the first of addrs that answers, or why none
// did.
func First(addrs []string, timeout time.Duration) (Snapshot, string, []string) {
	var errs []string
	for _, addr := range addrs {
		snap, err := Fetch(addr, timeout)
		if err == nil {
			return snap, addr, nil
		}
		errs = append(errs, err.Error())
	}
	return Snapshot{}, "", errs
}

// Fetch reads addr's /status.json.
func Fetch(addr string, timeout time.Duration) (Snapshot, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/status.json", nil)
	if err != nil {
		return Snapshot{}, fmt.Errorf("%s: %w", addr, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		var op interface{ Timeout() bool }
		if errors.As(err, &op) && op.Timeout() {
			return Snapshot{}, fmt.Errorf("nothing answered at %s within %v", addr, timeout)
		}
		return Snapshot{}, fmt.Errorf("nothing answers at %s (%v)", addr, errors.Unwrap(errors.Unwrap(err)))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Snapshot{}, fmt.Errorf("%s answers %s to /status.json: not a fairgrid of this version", addr, resp.Status)
	}
	var snap Snapshot
	if err := json.NewDecoder(resp.Body).Decode(&snap); err != nil || snap.Front == "" {
		return Snapshot{}, fmt.Errorf("%s: /status.json is not fairgrid's (%v)", addr, err)
	}
	return snap, nil
}

package socks5

import (
	"log/slog"
	"net/netip"
	"sync"
	"time"
)

// Authentication back-off: past authFreeFailures failed logins in a row
// (a typo, a viewer's saved old password), each failure from an address
// doubles the time during which that address's next logins are answered
// with failure unchecked, so guessing is slowed to a few attempts a minute whatever the
// attacker's rate; a success clears it. Failures are logged per address,
// at most once per authLogEvery (with the count since the last line), and
// at most authLogBurst lines per authLogEvery in all, so a guesser from
// many addresses cannot flood the log either.
const (
	authFreeFailures = 2
	authBackoffFirst = 100 * time.Millisecond
	authBackoffMax   = time.Minute
	authLogEvery     = time.Minute
	authLogBurst     = 20
	// maxBackoffAddrs bounds the table; past it the entries whose
	// back-off ended are dropped, then the oldest.
	maxBackoffAddrs = 4096
)

type backoffEntry struct {
	failures   int       // in a row
	until      time.Time // logins are refused unchecked until then
	last       time.Time // the last failure
	lastLogged time.Time
	unlogged   int // failures since the last line
}

type backoffTable struct {
	mu         sync.Mutex
	byAddr     map[netip.Addr]*backoffEntry
	logWindow  time.Time // the start of the current authLogEvery window
	logLines   int       // lines written in it
	suppressed int       // lines not written in it
}

func (t *backoffTable) init() { t.byAddr = map[netip.Addr]*backoffEntry{} }

// blocked reports whether addr is in back-off at now; such a login is
// refused without its credentials being compared.
func (t *backoffTable) blocked(addr netip.Addr, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.byAddr[addr]
	return e != nil && now.Before(e.until)
}

// fail records a failed (or refused) login from addr at now, extends its
// back-off, and logs it if addr's and the table's log rates allow.
func (t *backoffTable) fail(log *slog.Logger, addr netip.Addr, client string, refusedUnchecked bool, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.byAddr[addr]
	if e == nil {
		if len(t.byAddr) >= maxBackoffAddrs {
			t.pruneLocked(now)
		}
		e = &backoffEntry{}
		t.byAddr[addr] = e
	}
	if !refusedUnchecked {
		e.failures++
		if n := e.failures - authFreeFailures; n > 0 {
			e.until = now.Add(min(authBackoffFirst<<min(n-1, 20), authBackoffMax))
		}
	}
	e.last = now
	e.unlogged++
	if now.Sub(e.lastLogged) < authLogEvery {
		return
	}
	if now.Sub(t.logWindow) >= authLogEvery {
		if t.suppressed > 0 {
			log.Warn("socks5 authentication failures not logged: the log's rate for them was reached", "lines", t.suppressed)
		}
		t.logWindow, t.logLines, t.suppressed = now, 0, 0
	}
	if t.logLines >= authLogBurst {
		t.suppressed++
		return
	}
	t.logLines++
	log.Warn("socks5 authentication failed", "client", client, "failures", e.unlogged, "in_a_row", e.failures,
		"backoff_until", e.until.Format(time.RFC3339Nano))
	e.lastLogged, e.unlogged = now, 0
}

// succeed clears addr's back-off.
func (t *backoffTable) succeed(addr netip.Addr) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.byAddr, addr)
}

// pruneLocked drops the entries whose back-off has ended and that have
// nothing left to log, or else the one that failed longest ago.
func (t *backoffTable) pruneLocked(now time.Time) {
	var oldest netip.Addr
	for a, e := range t.byAddr {
		if now.After(e.until) && now.Sub(e.last) > authBackoffMax {
			delete(t.byAddr, a)
			continue
		}
		if !oldest.IsValid() || e.last.Before(t.byAddr[oldest].last) {
			oldest = a
		}
	}
	if len(t.byAddr) >= maxBackoffAddrs && oldest.IsValid() {
		delete(t.byAddr, oldest)
	}
}

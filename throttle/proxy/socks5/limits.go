package socks5

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// A session's kind: what it holds and which caps count it.
type sessionKind int

const (
	kindHandshake   sessionKind = iota // accepted, not yet through the handshake
	kindConnect                        // a CONNECT relaying
	kindAssociation                    // a UDP association relaying
	numKinds
)

// session is one connection the caps count. last is when it last relayed
// anything (unix nanoseconds; 0: never), start when it was admitted;
// stop ends it (closes its connections) when it is evicted.
type session struct {
	kind  sessionKind
	addr  netip.Addr
	start int64
	last  atomic.Int64
	stop  func()
	// evicted is set before stop is called, so that the session's
	// goroutine counts how it ended.
	evicted atomic.Bool
	index   int // in its address's list; table.mu
}

// touch records activity at now.
func (s *session) touch(now time.Time) { s.last.Store(now.UnixNano()) }

// idleSince is when the session last relayed, or when it started if it
// never has.
func (s *session) idleSince() int64 {
	if l := s.last.Load(); l != 0 {
		return l
	}
	return s.start
}

// sessionTable holds every open session by client address, and decides
// admissions: the per-address caps, the global caps, and which session
// makes room when one is full (docs/proxy.md, "Caps").
type sessionTable struct {
	mu     sync.Mutex
	byAddr map[netip.Addr]*addrSessions
	total  [numKinds]int
}

type addrSessions struct {
	n    [numKinds]int
	list []*session
}

// limits are the caps a table applies; see Config.
type limits struct {
	perClient   [numKinds]int // per address
	handshakes, // in all, kindHandshake
	sessions int // in all, kindConnect and kindAssociation together
	evictIdle time.Duration
}

// admission is the outcome of admit.
type admission int

const (
	admitted         admission = iota
	refusedPerClient           // the address's cap is full of sessions in use
	refusedGlobal              // the global cap is full of sessions in use
)

// admit adds a session of kind for addr, at now, making room if a cap is
// full: a handshake evicts the oldest handshake that has not sent its
// greeting, else the oldest (of addr when addr's cap is full, else of the
// address holding the most), since a viewer greets at once and completes
// its handshake in a round trip, and one that lingers is the one to lose; a CONNECT
// or an association evicts the session idle longest (of addr, else of the
// address holding the most sessions) if it has been idle at least
// evictIdle, and is refused otherwise. The evicted session is stopped
// outside the lock.
func (t *sessionTable) admit(kind sessionKind, addr netip.Addr, now time.Time, lim limits, stop func()) (*session, admission) {
	t.mu.Lock()
	if t.byAddr == nil {
		t.byAddr = map[netip.Addr]*addrSessions{}
	}
	as := t.byAddr[addr]
	if as == nil {
		as = &addrSessions{}
		t.byAddr[addr] = as
	}
	var victims []*session
	outcome := admitted
	if as.n[kind] >= lim.perClient[kind] {
		v := t.victimLocked(as, kind, now, lim)
		if v == nil {
			outcome = refusedPerClient
		} else {
			victims = append(victims, v)
		}
	}
	if outcome == admitted && t.globalFullLocked(kind, lim, len(victims)) {
		var v *session
		if heavy := t.heaviestLocked(kind); heavy != nil {
			v = t.victimLocked(heavy, kind, now, lim)
		}
		if v == nil {
			outcome = refusedGlobal
		} else {
			victims = append(victims, v)
		}
	}
	if outcome != admitted {
		if len(as.list) == 0 {
			delete(t.byAddr, addr)
		}
		t.mu.Unlock()
		return nil, outcome
	}
	for _, v := range victims {
		t.removeLocked(v)
		v.evicted.Store(true)
	}
	s := &session{kind: kind, addr: addr, start: now.UnixNano(), stop: stop}
	s.index = len(as.list)
	as.list = append(as.list, s)
	as.n[kind]++
	t.total[kind]++
	t.mu.Unlock()
	for _, v := range victims {
		v.stop()
	}
	return s, admitted
}

// globalFullLocked reports whether admitting one more of kind would pass
// its global cap, freed counting the sessions already chosen to go.
func (t *sessionTable) globalFullLocked(kind sessionKind, lim limits, freed int) bool {
	if kind == kindHandshake {
		return t.total[kindHandshake]-freed >= lim.handshakes
	}
	return t.total[kindConnect]+t.total[kindAssociation]-freed >= lim.sessions
}

// heaviestLocked is the address holding the most sessions counted against
// kind's global cap: fair sharing takes from it first.
func (t *sessionTable) heaviestLocked(kind sessionKind) *addrSessions {
	var heavy *addrSessions
	best := 0
	for _, as := range t.byAddr {
		n := as.n[kind]
		if kind != kindHandshake {
			n = as.n[kindConnect] + as.n[kindAssociation]
		}
		if n > best {
			heavy, best = as, n
		}
	}
	return heavy
}

// victimLocked chooses the session of as to make room for one of kind:
// the oldest handshake, or the session (CONNECT or association; of kind
// when as's own cap is the full one) idle longest, if at least evictIdle.
func (t *sessionTable) victimLocked(as *addrSessions, kind sessionKind, now time.Time, lim limits) *session {
	var v *session
	for _, s := range as.list {
		if s.evicted.Load() {
			continue
		}
		if kind == kindHandshake {
			// Those that have sent nothing go first (a viewer sends its
			// greeting at once), the oldest first.
			if s.kind == kindHandshake && (v == nil || handshakeBefore(s, v)) {
				v = s
			}
			continue
		}
		if s.kind == kindHandshake || (as.n[kind] >= lim.perClient[kind] && s.kind != kind) {
			continue
		}
		if v == nil || s.idleSince() < v.idleSince() {
			v = s
		}
	}
	if v != nil && kind != kindHandshake && now.UnixNano()-v.idleSince() < int64(lim.evictIdle) {
		return nil
	}
	return v
}

// handshakeBefore orders handshakes for eviction: one that has sent
// nothing before one that has, then the older.
func handshakeBefore(a, b *session) bool {
	if pa, pb := a.last.Load() != 0, b.last.Load() != 0; pa != pb {
		return !pa
	}
	return a.start < b.start
}

// release removes a session that ended (or was evicted: then it is gone
// already).
func (t *sessionTable) release(s *session) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !s.evicted.Load() {
		t.removeLocked(s)
	}
}

func (t *sessionTable) removeLocked(s *session) {
	as := t.byAddr[s.addr]
	if as == nil || s.index >= len(as.list) || as.list[s.index] != s {
		return
	}
	last := len(as.list) - 1
	as.list[s.index] = as.list[last]
	as.list[s.index].index = s.index
	as.list[last] = nil
	as.list = as.list[:last]
	as.n[s.kind]--
	t.total[s.kind]--
	if len(as.list) == 0 {
		delete(t.byAddr, s.addr)
	}
}

// watchdog ends a session that relays nothing for idle, or, once its
// client has half-closed, for halfClose: a slot always comes back, even
// from a remote that stays silent.
type watchdog struct {
	mu        sync.Mutex
	timer     *time.Timer
	s         *session
	idle      time.Duration
	halfClose time.Duration
	half      bool
	stop      func(halfClosed bool)
	fired     bool
}

// newWatchdog starts watching s; stop is called (once, from the timer's
// goroutine) when it has been idle too long.
func newWatchdog(s *session, idle, halfClose time.Duration, stop func(halfClosed bool)) *watchdog {
	w := &watchdog{s: s, idle: idle, halfClose: halfClose, stop: stop}
	w.mu.Lock()
	w.timer = time.AfterFunc(idle, w.check)
	w.mu.Unlock()
	return w
}

func (w *watchdog) check() {
	w.mu.Lock()
	limit := w.idle
	if w.half {
		limit = min(w.halfClose, w.idle)
	}
	quiet := time.Duration(time.Now().UnixNano() - w.s.idleSince())
	if quiet < limit {
		w.timer.Reset(limit - quiet)
		w.mu.Unlock()
		return
	}
	w.fired = true
	half := w.half
	w.mu.Unlock()
	w.stop(half)
}

// halfClosed shortens the silence allowed to halfClose, counted from now
// (the client's end of data is the session's last activity).
func (w *watchdog) halfClosed(now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.s.touch(now)
	w.half = true
	if !w.fired {
		w.timer.Reset(min(w.halfClose, w.idle))
	}
}

// end stops watching.
func (w *watchdog) end() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer.Stop()
	w.fired = true
}

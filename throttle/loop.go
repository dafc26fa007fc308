package throttle

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle/circuit"
)

// Request is one AgentThrottle to send for a circuit.
type Request struct {
	Circuit     circuit.Key
	Agent       lludp.AgentData
	CircuitCode uint32
	// Sequence is the viewer's latest sequence number on the circuit: an
	// injected packet reuses it (protocol.md §10.2).
	Sequence  uint32
	Total     ratecalc.Rate
	Throttles [lludp.NumCategories]float32 // bits/s, split as configured (Config.FixedSplit)
	Reason    Reason
	// Decided is the controller's rate, clamped, for the circuit's part of
	// its viewer's one share; Total is the lesser of it and ViewerAsked,
	// the viewer's latest request (0 when the viewer has sent none),
	// unless Config.AboveViewer.
	Decided     ratecalc.Rate
	ViewerAsked ratecalc.Rate
}

// LimitedByViewer reports whether the viewer's own request, not one
// share, set the total.
func (r Request) LimitedByViewer() bool { return r.ViewerAsked > 0 && r.Total < r.Decided }

// Reason says why a request was sent.
type Reason uint8

// The reasons.
const (
	Changed  Reason = iota + 1 // the decision moved by MinChange or more
	Refresh                    // unchanged, re-sent after ResendEvery intervals
	Reassert                   // the viewer overrode the last request
)

var reasonNames = [...]string{Changed: "changed", Refresh: "refresh", Reassert: "reassert"}

func (r Reason) String() string {
	if int(r) < len(reasonNames) && reasonNames[r] != "" {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// MarshalText writes the name, so logs and JSON read "changed", not 1.
func (r Reason) MarshalText() ([]byte, error) {
	if int(r) < len(reasonNames) && reasonNames[r] != "" {
		return []byte(reasonNames[r]), nil
	}
	return nil, fmt.Errorf("reason %d: not a reason", uint8(r))
}

// UnmarshalText accepts exactly the names String gives.
func (r *Reason) UnmarshalText(b []byte) error {
	for i, name := range reasonNames {
		if name != "" && name == string(b) {
			*r = Reason(i)
			return nil
		}
	}
	return fmt.Errorf("reason %q: want changed, refresh or reassert", b)
}

// Encode returns the request as an unreliable, zero-coded AgentThrottle
// datagram carrying the viewer's sequence number.
func (r Request) Encode() ([]byte, error) {
	return lludp.AppendMessage(nil, lludp.Header{Flags: lludp.FlagZeroCoded, Sequence: r.Sequence},
		&lludp.AgentThrottle{AgentData: r.Agent, CircuitCode: r.CircuitCode, Throttles: r.Throttles}, nil)
}

// Sender delivers requests to simulators: a raw socket with the viewer's
// source address, or the link emulator in the demo.
type Sender interface {
	Send(ctx context.Context, r Request) error
}

// state is what the loop keeps per circuit.
type state struct {
	last       Request // the last request sent
	sent       bool
	intervals  int       // decisions since the last send
	seenViewer time.Time // the viewer's AgentThrottle last handled
	reassert   bool
	decided    ratecalc.Rate
	requests   uint64
	// down and downAt are the circuit's downstream counters at the
	// previous decision: what each category used since is the split's
	// demand.
	down   circuit.DirStats
	downAt time.Time
}

// used returns what each category used since the previous decision, in
// bits/s, and keeps the counters for the next.
func (st *state) used(c *circuit.Circuit, now time.Time) [lludp.NumCategories]float64 {
	down := c.Stats(circuit.Down)
	var u [lludp.NumCategories]float64
	if !st.downAt.IsZero() {
		u = usedPerCategory(down, st.down, now.Sub(st.downAt))
	}
	st.down, st.downAt = down, now
	return u
}

// viewerAsked is the total of the viewer's latest own AgentThrottle, 0 if
// it has sent none.
func viewerAsked(c *circuit.Circuit) ratecalc.Rate {
	if c.ViewerThrottleAt.IsZero() {
		return 0
	}
	var bits float64
	for _, v := range c.ViewerThrottle {
		if v > 0 && !math.IsInf(float64(v), 0) {
			bits += float64(v)
		}
	}
	return ratecalc.RateFromBits(bits)
}

// Loop is the per-circuit control loop: it measures every circuit from the
// captured datagrams (Observe), decides each circuit's request every
// interval (Tick), and re-asserts at once when the viewer overrides it.
type Loop struct {
	cfg     Config
	log     *slog.Logger
	poke    chan struct{} // Observe saw the viewer override a request
	mu      sync.Mutex    // guards the tracker and the states
	tracker *circuit.Tracker
	states  map[circuit.Key]*state
	stats   Stats
	// lastStats is stats at the previous Tick: the interval's summary
	// line reports the difference.
	lastStats Stats
	// gone holds the viewer endpoints whose circuits were forgotten (the
	// viewer logged out, or its proxy association closed), each until the
	// time its stragglers stop being ignored: datagrams still queued
	// for measurement, the ack of the LogoutReply, the region's resends.
	// Left to the tracker they would make a circuit again, one without
	// IDs, reported as waiting until it idled out. A UseCircuitCode from
	// the endpoint (a new login on the same socket) ends its hold.
	gone map[netip.AddrPort]time.Time
}

// goneHold is how long a departed viewer's stragglers are ignored: the
// region resends its LogoutReply for a few seconds at most.
const goneHold = 10 * time.Second

// maxGone bounds Loop.gone: past it the holds are dropped, so a flood of
// logouts cannot grow it.
const maxGone = 4096

// Stats counts the loop's work.
type Stats struct {
	Requests  uint64 // requests decided
	Reasserts uint64 // of which re-assertions after the viewer's own
	Waiting   uint64 // decisions skipped: the circuit's IDs are not known yet
	// Implausible counts decisions skipped because fewer than
	// IdentityDatagrams datagrams have carried the circuit's IDs.
	Implausible uint64
	// Evicted counts circuits dropped to stay within MaxCircuits, and
	// Forgotten those dropped after IdleTimeout of silence.
	Evicted   uint64
	Forgotten uint64
	// Folded counts endpoints the tracker dropped before they held a
	// conversation (see circuit.Tracker.Folded): a flood's spoofed sources.
	Folded uint64
}

// New validates cfg and returns a loop with no circuits.
func New(cfg Config, log *slog.Logger) (*Loop, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := &Loop{cfg: c, log: log, states: map[circuit.Key]*state{}, poke: make(chan struct{}, 1)}
	l.tracker = circuit.NewTracker(circuit.Config{Sims: c.Sims, SimPorts: c.SimPorts, NewController: l.newController, MaxCircuits: c.MaxCircuits, OnEvict: l.evict})
	return l, nil
}

// newController makes each new circuit's controller. New and Reconfigure
// built one from the same configuration already, so an error here is a
// bug; the circuit is then measured without a controller, and so gets no
// requests, rather than the loop dying.
func (l *Loop) newController(k circuit.Key) ratecalc.Controller {
	c, err := l.cfg.NewController(l.cfg.Controller)
	if err != nil {
		l.log.Error("BUG: a validated controller configuration failed", "circuit", k, "err", err)
		return nil
	}
	return c
}

// evict drops the loop's state of a circuit the tracker evicted; the
// tracker calls it from Observe, under l.mu.
func (l *Loop) evict(k circuit.Key) {
	delete(l.states, k)
	l.stats.Evicted++
}

// Observe measures one captured datagram. It reports whether the viewer
// just sent an AgentThrottle of its own that the loop must re-assert over
// (see Reassert).
func (l *Loop) Observe(d lludp.Datagram) (reassert bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.gone) > 0 && l.heldLocked(d) {
		return false
	}
	c, dir, err := l.tracker.Observe(d)
	if err == nil && dir == circuit.Down && c != nil && !c.Candidate() && !c.LogoutAt.IsZero() {
		// The region confirmed the viewer's logout: its session, and so
		// every circuit from its endpoint, has ended.
		n := l.forgetViewerLocked(c.Key.Viewer, d.At)
		l.log.Info("viewer logged out: its circuits are forgotten", "viewer", c.Key.Viewer, "circuits", n)
		return false
	}
	if err != nil || dir != circuit.Up || c == nil || c.ViewerThrottleAt.IsZero() {
		return false
	}
	// Before the loop's first request there is nothing to re-assert, and
	// no state is made: a flood of spoofed AgentThrottles must not grow it.
	st := l.states[c.Key]
	if st == nil || !st.sent || !c.ViewerThrottleAt.After(st.seenViewer) {
		return false
	}
	st.seenViewer = c.ViewerThrottleAt
	// The capture sees the loop's own injections too: they carry exactly
	// the values it sent.
	if st.sent && c.ViewerThrottle == st.last.Throttles {
		return false
	}
	if st.sent {
		st.reassert = true
		select {
		case l.poke <- struct{}{}:
		default:
		}
		return true
	}
	return false
}

// reassertCopies: a re-assertion goes out twice. It is unreliable, and if
// it were lost the viewer's own value would hold until the next interval;
// two copies make that p² instead of p.
const reassertCopies = 2

// Run decides every Interval and sends the requests, and re-asserts at
// once when Observe sees the viewer override one. after, if not nil, is
// called after each decision with what was sent. It returns when ctx ends.
// Sending errors are logged, not fatal: the next interval tries again.
func (l *Loop) Run(ctx context.Context, sender Sender, after func(now time.Time, sent []Request)) error {
	ticker := time.NewTicker(l.Interval())
	defer ticker.Stop()
	send := func(rs []Request, copies int) {
		for _, r := range rs {
			for range copies {
				if err := sender.Send(ctx, r); err != nil {
					l.log.Warn("send AgentThrottle", "circuit", r.Circuit, "err", err)
				}
			}
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-ticker.C:
			rs := l.Tick(now)
			send(rs, 1)
			if after != nil {
				after(now, rs)
			}
		case <-l.poke:
			send(l.Reassert(), reassertCopies)
		}
	}
}

// Poked is signalled when Observe sees the viewer override a request; a
// caller that drives Tick itself calls Reassert then.
func (l *Loop) Poked() <-chan struct{} { return l.poke }

// Interval is the decision interval.
func (l *Loop) Interval() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cfg.Interval
}

func (l *Loop) state(k circuit.Key) *state {
	st := l.states[k]
	if st == nil {
		st = &state{}
		l.states[k] = st
	}
	return st
}

// Reassert returns the last request of every circuit whose viewer has
// overridden it since, to be sent again at once.
func (l *Loop) Reassert() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Request
	for k, st := range l.states {
		if !st.reassert {
			continue
		}
		st.reassert = false
		c := l.tracker.Circuit(k)
		if c == nil {
			continue
		}
		r := st.last
		r.Sequence, r.Reason = c.UpSequence, Reassert
		st.requests++
		l.stats.Requests++
		l.stats.Reasserts++
		out = append(out, r)
	}
	return out
}

// Tick decides, for every circuit, what to request now: the controller's
// rate, clamped to [Min, Max]; nothing if it moved less than MinChange
// since the last request, unless ResendEvery intervals have passed. Call
// it every Interval.
func (l *Loop) Tick(now time.Time) []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.forget(now.Add(-l.cfg.IdleTimeout))
	for ep, until := range l.gone {
		if !now.Before(until) {
			delete(l.gone, ep)
		}
	}
	vouched := l.vouched()
	ds := l.decide(now, vouched)
	var out []Request
	for i := range ds {
		d := &ds[i]
		c, st, share, asked, target := d.c, d.st, d.share, d.asked, d.target
		st.decided = target
		st.intervals++
		if !c.Known() {
			l.stats.Waiting++
			continue
		}
		if !d.believed {
			l.stats.Implausible++
			continue
		}
		if l.cfg.RootOnly && !l.isRoot(c) {
			continue
		}
		throttles := l.cfg.split(target, d.used)
		// With MinChange 0 any change is one; an unchanged rate waits
		// for the refresh all the same. A split that moved as much of the
		// total between categories is a change too.
		moved := max(math.Abs(float64(target/st.last.Total)-1), SplitMoved(throttles, st.last.Throttles))
		changed := !st.sent || moved > 0 && moved >= *l.cfg.MinChange
		if !changed && st.intervals < l.cfg.ResendEvery {
			continue
		}
		reason := Changed
		if !changed {
			reason = Refresh
		}
		r := Request{Circuit: c.Key, Agent: lludp.AgentData{AgentID: c.AgentID, SessionID: c.SessionID},
			CircuitCode: c.CircuitCode, Sequence: c.UpSequence, Total: target, Throttles: throttles, Reason: reason,
			Decided: share, ViewerAsked: asked}
		// What the capture sees of it is fairgrid's, not the viewer's.
		c.NoteInjected(throttles)
		if !st.sent {
			// The viewer's own requests so far are overridden by this one.
			st.seenViewer = c.ViewerThrottleAt
		}
		st.last, st.sent, st.intervals = r, true, 0
		st.requests++
		l.stats.Requests++
		s := c.Controller.Stats()
		// Rates read "235.0 kbit/s" for people, with whole bits/s beside
		// them for machines; no figure carries more digits than it means.
		l.log.Info("throttle decision", "circuit", c.Key, "rate", target, "rate_bps", int64(math.Round(target.BitsPerSecond())), "reason", reason,
			"share_bps", int64(math.Round(OneShare(s).BitsPerSecond())), "controller_bps", int64(math.Round(share.BitsPerSecond())),
			"viewer_asked_bps", int64(math.Round(asked.BitsPerSecond())),
			"loss_event_rate", roundSignificant(s.LossEventRate, 3), "rtt_ms", math.Round(float64(s.SRTT)/1e5)/10,
			"received", s.ReceiveRate, "receive_bps", int64(math.Round(s.ReceiveRate.BitsPerSecond())))
		out = append(out, r)
	}
	l.summarize(len(out))
	return out
}

// decision is one circuit's part of a Tick.
type decision struct {
	c        *circuit.Circuit
	st       *state
	believed bool // its IDs are known and vouched for
	share    ratecalc.Rate
	asked    ratecalc.Rate
	used     [lludp.NumCategories]float64
	received float64 // bits/s, what its categories used together
	target   ratecalc.Rate
}

// decide takes every circuit's share and sets its target: the lesser of
// one share and the viewer's own request, and, where one viewer holds
// several circuits (its region and the neighbours in view), one share for
// them all, divided by what each receives. A viewer uses one UDP socket
// for all its circuits, so they cross the same bottleneck: each circuit's
// own share would give the host K + 1 shares beside one download, where
// TCP's application would hold one. The viewer's circuits share the
// largest of their estimates (the root's, which carries most and measures
// best, as a rule) and the limit of the viewer's own request, which it
// sends to its root region only (protocol.md §7.5). The division is
// DemandSplit's: a tenth equally, each circuit twice what it received as
// far as the rest goes, what is left equally.
func (l *Loop) decide(now time.Time, vouched map[identity]bool) []decision {
	var ds []decision
	groups := map[netip.AddrPort][]int{}
	for _, c := range l.tracker.Circuits() {
		if c.Controller == nil {
			continue
		}
		st := l.state(c.Key)
		d := decision{c: c, st: st, share: l.cfg.Clamp(c.Controller.Rate(now)), asked: viewerAsked(c), used: st.used(c, now)}
		d.believed = c.Known() && vouched[identityOf(c)]
		for _, u := range d.used {
			d.received += u
		}
		if d.believed {
			groups[c.Key.Viewer] = append(groups[c.Key.Viewer], len(ds))
		}
		ds = append(ds, d)
	}
	for i := range ds {
		if !ds[i].believed {
			ds[i].target = l.limit(ds[i].share, ds[i].asked)
		}
	}
	var base, used, parts []float64
	for _, idx := range groups {
		var share, asked ratecalc.Rate
		for _, i := range idx {
			share, asked = max(share, ds[i].share), max(asked, ds[i].asked)
		}
		total := l.limit(share, asked)
		if len(idx) == 1 {
			ds[idx[0]].target = total
			continue
		}
		base, used, parts = base[:0], used[:0], parts[:0]
		for _, i := range idx {
			base, used, parts = append(base, float64(total)/float64(len(idx))), append(used, ds[i].received/8), append(parts, 0)
		}
		if !apportion(base, used, parts) {
			copy(parts, base)
		}
		for j, i := range idx {
			ds[i].target = l.cfg.Clamp(ratecalc.Rate(parts[j]))
		}
	}
	return ds
}

// limit is what one share comes to under the viewer's own request.
func (l *Loop) limit(share, asked ratecalc.Rate) ratecalc.Rate {
	if asked > 0 && !l.cfg.AboveViewer {
		// The clamps still apply: Min is what OpenSim floors a client at
		// anyway, Floor a minimum the user configured.
		return l.cfg.Clamp(min(share, asked))
	}
	return share
}

// identity is who a circuit speaks for, from where: a viewer uses one UDP
// socket for all its circuits.
type identity struct {
	viewer             netip.AddrPort
	agentID, sessionID lludp.UUID
}

func identityOf(c *circuit.Circuit) identity {
	return identity{c.Key.Viewer, c.AgentID, c.SessionID}
}

// vouched returns the identities that IdentityDatagrams datagrams of one
// circuit have carried, a circuit the simulator has answered. A neighbour region's circuit carries its IDs only
// in UseCircuitCode, and is vouched for by the agent's root circuit from
// the same viewer endpoint.
func (l *Loop) vouched() map[identity]bool {
	out := map[identity]bool{}
	for _, c := range l.tracker.Circuits() {
		if c.Known() && c.IdentityDatagrams >= IdentityDatagrams && c.Stats(circuit.Down).Packets > 0 {
			out[identityOf(c)] = true
		}
	}
	return out
}

// summarize logs the interval in one line, whatever the number of
// circuits: a flood of fake ones must not become a flood of log lines. It
// is at info level when circuits were skipped or dropped — what an
// operator looks into — and at debug level otherwise.
func (l *Loop) summarize(requests int) {
	s, p := l.stats, l.lastStats
	l.lastStats = s
	level := slog.LevelDebug
	if s.Waiting != p.Waiting || s.Implausible != p.Implausible || s.Evicted != p.Evicted || s.Forgotten != p.Forgotten {
		level = slog.LevelInfo
	}
	candidates, _ := l.tracker.Candidates()
	l.log.Log(context.Background(), level, "interval",
		"circuits", len(l.tracker.Circuits()), "requests", requests,
		"unidentified", s.Waiting-p.Waiting, "implausible", s.Implausible-p.Implausible,
		"evicted", s.Evicted-p.Evicted, "forgotten", s.Forgotten-p.Forgotten,
		"candidates", candidates, "folded_total", l.tracker.Folded())
}

// isRoot: no circuit of the same agent has a later arrival.
func (l *Loop) isRoot(c *circuit.Circuit) bool {
	if c.ArrivedAt.IsZero() {
		return false
	}
	for _, o := range l.tracker.Circuits() {
		if o != c && o.AgentID == c.AgentID && o.ArrivedAt.After(c.ArrivedAt) {
			return false
		}
	}
	return true
}

// Stats returns the loop's counters.
func (l *Loop) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stats
	s.Folded = l.tracker.Folded()
	return s
}

// Circuit returns a snapshot of a circuit's measurements and its
// controller's state (the zero values if unknown).
func (l *Loop) Circuit(k circuit.Key) (circuit.Summary, ratecalc.Stats, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.tracker.Circuit(k)
	if c == nil || c.Controller == nil {
		return circuit.Summary{}, ratecalc.Stats{}, false
	}
	return c.Summary(), c.Controller.Stats(), true
}

// Request returns the request the loop currently wants for circuit k: the
// last one it decided and sent (or re-asserted), with its split, and false
// before the first. A proxy in the viewer's path writes its Throttles into
// each AgentThrottle the viewer sends; the loop, seeing those values come
// through, takes them as its own and does not re-assert.
func (l *Loop) Request(k circuit.Key) (Request, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.states[k]
	if st == nil || !st.sent {
		return Request{}, false
	}
	return st.last, true
}

// ViewerAsked records the viewer's own AgentThrottle on circuit k, seen
// at at, when a proxy in its path rewrote it to fairgrid's request before
// it was measured: the viewer's request stays its limit (Config.
// AboveViewer), and since the rewrite already carried fairgrid's, it
// calls for no re-assertion. Unknown circuits are ignored.
func (l *Loop) ViewerAsked(k circuit.Key, throttles [lludp.NumCategories]float32, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.tracker.Circuit(k)
	if c == nil || !at.After(c.ViewerThrottleAt) {
		return
	}
	c.ViewerThrottle, c.ViewerThrottleAt = throttles, at
	if st := l.states[k]; st != nil {
		st.seenViewer = at
	}
}

// Reconfigure applies the settings that can change while running — the
// clamps, the floor, the segment size, the hysteresis, the split, the
// viewer's limit,
// RootOnly, IdleTimeout — and returns the names of those that differ but
// need a restart (controller, interval, sims, sim ports, max circuits).
// New clamps or a new segment size restart every circuit's controller: a
// controller bounds its own state by the clamps (window tracking caps its
// window at Max), so clamping only its output would leave a raised Max
// unreachable, and the segment size is part of its every decision.
func (l *Loop) Reconfigure(cfg Config) (needRestart []string, err error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.Controller != l.cfg.Controller {
		needRestart = append(needRestart, "controller")
	}
	if c.Interval != l.cfg.Interval {
		needRestart = append(needRestart, "interval")
	}
	if fmt.Sprint(c.Sims) != fmt.Sprint(l.cfg.Sims) {
		needRestart = append(needRestart, "sims")
	}
	if fmt.Sprint(c.SimPorts) != fmt.Sprint(l.cfg.SimPorts) {
		needRestart = append(needRestart, "sim ports")
	}
	if c.MaxCircuits != l.cfg.MaxCircuits {
		needRestart = append(needRestart, "max circuits")
	}
	rebuild := c.Min != l.cfg.Min || c.Max != l.cfg.Max || c.Segment != l.cfg.Segment
	live := l.cfg
	live.Min, live.Max, live.Floor, live.MinChange, live.ResendEvery = c.Min, c.Max, c.Floor, c.MinChange, c.ResendEvery
	live.Segment = c.Segment
	live.Weights, live.RootOnly, live.IdleTimeout = c.Weights, c.RootOnly, c.IdleTimeout
	live.FixedSplit, live.AboveViewer = c.FixedSplit, c.AboveViewer
	l.cfg = live
	if rebuild {
		for _, circ := range l.tracker.Circuits() {
			if circ.Controller != nil {
				circ.Controller = l.newController(circ.Key)
			}
		}
	}
	return needRestart, nil
}

// Config returns the configuration in force, defaults filled in.
func (l *Loop) Config() Config {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.cfg
	c.Weights = slices.Clone(c.Weights)
	c.Sims = slices.Clone(c.Sims)
	return c
}

// CircuitState is a snapshot of one circuit for metrics.
type CircuitState struct {
	Key      circuit.Key
	Summary  circuit.Summary
	Control  ratecalc.Stats
	Target   ratecalc.Rate // the latest decision
	Requests uint64        // requests sent for it
}

// Snapshot returns every circuit's state.
func (l *Loop) Snapshot() []CircuitState {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []CircuitState
	for _, c := range l.tracker.Circuits() {
		cs := CircuitState{Key: c.Key, Summary: c.Summary()}
		if c.Controller != nil {
			cs.Control = c.Controller.Stats()
		}
		if st := l.states[c.Key]; st != nil {
			cs.Target, cs.Requests = st.decided, st.requests
		}
		out = append(out, cs)
	}
	return out
}

// Invalid returns the datagrams on simulator ports that were not LLUDP,
// by reason.
func (l *Loop) Invalid() map[string]uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]uint64{}
	for r := circuit.InvalidReason(0); r.String() != "unknown"; r++ {
		out[r.String()] = l.tracker.Invalid(r)
	}
	return out
}

// Keys lists the circuits.
func (l *Loop) Keys() []circuit.Key {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ks []circuit.Key
	for _, c := range l.tracker.Circuits() {
		ks = append(ks, c.Key)
	}
	return ks
}

// Forget drops circuits idle since before the given time. Tick does so
// itself after IdleTimeout.
func (l *Loop) Forget(before time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.forget(before)
}

// ForgetViewer drops the circuits of a viewer endpoint that has gone (a
// proxy's association closed) and returns how many went; nothing more is
// sent in their name, and its datagrams still on their way are ignored.
func (l *Loop) ForgetViewer(viewer netip.AddrPort) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.forgetViewerLocked(viewer, time.Now())
}

// forgetViewerLocked drops viewer's circuits and ignores its datagrams
// stamped before at + goneHold, but for a new login. l.mu is held.
func (l *Loop) forgetViewerLocked(viewer netip.AddrPort, at time.Time) int {
	for k := range l.states {
		if k.Viewer == viewer {
			delete(l.states, k)
		}
	}
	if l.gone == nil || len(l.gone) >= maxGone {
		l.gone = map[netip.AddrPort]time.Time{}
	}
	l.gone[viewer] = at.Add(goneHold)
	n := l.tracker.ForgetViewer(viewer)
	l.stats.Forgotten += uint64(n)
	return n
}

// heldLocked reports whether d is a straggler of a departed viewer (see
// Loop.gone), and ends holds that have run out or that a new login
// ends. l.mu is held.
func (l *Loop) heldLocked(d lludp.Datagram) bool {
	for _, ep := range [2]netip.AddrPort{d.Src, d.Dst} {
		until, ok := l.gone[ep]
		switch {
		case !ok:
			continue
		case !d.At.Before(until):
			delete(l.gone, ep)
		case ep == d.Src && isMessage(d.Payload, lludp.UseCircuitCodeID):
			delete(l.gone, ep)
		default:
			return true
		}
	}
	return false
}

func isMessage(p []byte, id lludp.MessageID) bool {
	h, _, _, err := lludp.ParseHeader(p)
	return err == nil && h.ID == id
}

func (l *Loop) forget(before time.Time) int {
	for k := range l.states {
		if c := l.tracker.Circuit(k); c == nil || c.Last().Before(before) {
			delete(l.states, k)
		}
	}
	n := l.tracker.Forget(before)
	l.stats.Forgotten += uint64(n)
	return n
}

// roundSignificant rounds x to n significant digits, for logs.
func roundSignificant(x float64, n int) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	scale := math.Pow(10, float64(n)-math.Ceil(math.Log10(math.Abs(x))))
	return math.Round(x*scale) / scale
}

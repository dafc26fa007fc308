package gateway

import (
	"fmt"
	"log/slog"
	"time"
)

// DefaultRegionTimeout is how long a region may leave the gateway's
// datagrams unanswered before it counts as not answering: OpenSim acks a
// viewer's reliable datagrams within its ack interval and pings every
// 5 s, so a region that sends nothing for longer while it is sent to is
// down or unreachable.
const DefaultRegionTimeout = 10 * time.Second

// regionHealth is one route's region as the gateway sees it.
type regionHealth struct {
	// waiting is when the gateway first sent the region something it
	// has not answered since (zero: nothing waits).
	waiting time.Time
	down    bool // logged as not answering
}

func (h *regionHealth) heard(time.Time) { h.waiting = time.Time{} }

func (h *regionHealth) silent(now time.Time, timeout time.Duration) bool {
	return !h.waiting.IsZero() && now.Sub(h.waiting) > timeout
}

// RouteHealth is whether one route's region answers.
type RouteHealth struct {
	Route    int
	Region   string
	Answers  bool
	Waiting  time.Duration // how long the region has left the gateway unanswered
	Circuits int
}

// Health reports each route's region: it answers unless the gateway has
// sent it datagrams for Config.RegionTimeout and heard nothing back. A route
// nobody uses answers (there is nothing to judge it by).
func (g *Gateway) Health() []RouteHealth {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	out := make([]RouteHealth, len(g.regions))
	for i := range g.regions {
		h := &g.regions[i]
		out[i] = RouteHealth{Route: i, Region: g.core.cfg.Routes[i].Region.String(), Answers: !h.silent(now, g.core.cfg.RegionTimeout)}
		if !h.waiting.IsZero() {
			out[i].Waiting = now.Sub(h.waiting)
		}
	}
	for _, v := range g.core.viewers {
		out[v.Route].Circuits++
	}
	return out
}

// The log's bounds: at most logBurst circuit lines every logEvery, then
// one summary line for the rest, so a flood costs a line a minute.
const (
	logEvery = time.Minute
	logBurst = 20
)

// eventLog rate-limits the lines about circuits.
type eventLog struct {
	every      time.Duration
	burst      int
	start      time.Time
	n          int
	suppressed [2]uint64 // opened, closed not logged this period
	events     []Event
}

// watch logs what changed since the last tick: circuits opened and
// closed (rate-limited), regions that stopped or started answering, and
// a summary of the period's suppressed lines. g.mu is held.
func (g *Gateway) watch(now time.Time) {
	l := &g.logs
	if now.Sub(l.start) >= l.every {
		if l.suppressed != [2]uint64{} {
			k := g.core.Counters()
			g.log.Info("gateway: circuits", "opened_unlogged", l.suppressed[EventOpened], "closed_unlogged", l.suppressed[EventClosed],
				"circuits", k.Viewers, "pending", k.Pending, "probes", k.Probes, "refused", k.Drops[Refused], "mismatch", k.Drops[Mismatch])
		}
		l.start, l.n, l.suppressed = now, 0, [2]uint64{}
	}
	l.events = g.core.Events(l.events[:0])
	for _, e := range l.events {
		if l.n >= l.burst {
			l.suppressed[e.Kind]++
			continue
		}
		l.n++
		what := "gateway: circuit opened"
		if e.Kind == EventClosed {
			what = "gateway: circuit closed"
		}
		g.log.Info(what, "route", e.Route, "circuit", e.ID, "viewer", g.viewerName(e), "never_answered", e.Kind == EventClosed && e.Pending)
	}
	for i := range g.regions {
		h := &g.regions[i]
		switch silent := h.silent(now, g.core.cfg.RegionTimeout); {
		case silent && !h.down:
			h.down = true
			g.log.Warn("gateway: region not answering", "route", i, "region", g.core.cfg.Routes[i].Region, "waiting", now.Sub(h.waiting).Round(time.Second))
		case !silent && h.down:
			h.down = false
			g.log.Info("gateway: region answers again", "route", i, "region", g.core.cfg.Routes[i].Region)
		}
	}
}

// IdentifiesViewers reports whether the operator asked for viewers'
// endpoints and AgentIDs to be shown (Config.IdentifyViewers): in the
// metrics, the log and anything else that shows circuits.
func (g *Gateway) IdentifiesViewers() bool { return g.identify }

// viewerName is how the log names a circuit's viewer: its endpoint when
// the operator asked for it (IdentifyViewers), else nothing beyond the
// circuit's ordinal.
func (g *Gateway) viewerName(e Event) slog.Value {
	if g.identify {
		return slog.StringValue(e.Addr.String())
	}
	return slog.StringValue("-")
}

// Summary is a line's worth of the gateway's totals, for the log at exit.
func (k Counters) Summary() []any {
	return []any{"circuits", k.Viewers, "opened", k.Opened, "closed", k.Closed, "probes_sent", k.ProbesSent,
		"passed", k.Drops[Passed], "refused", k.Drops[Refused], "mismatch", k.Drops[Mismatch], "up_limited", k.Drops[UpLimited],
		"bad_proof", k.Drops[BadProof], "malformed", k.Drops[Malformed], "orphan", k.Drops[Orphan], "inbound_dropped", k.InboundDropped,
		"send_errors", k.SendErrors, "asserts", k.Asserts, "rewrites", k.Rewrites, "scheduled_bytes", k.Scheduler.SentBytes}
}

// String names a route's health for /healthz.
func (h RouteHealth) String() string {
	state := "answers"
	if !h.Answers {
		state = fmt.Sprintf("not answering for %v", h.Waiting.Round(time.Second))
	}
	return fmt.Sprintf("route %d region %s: %s, %d circuits", h.Route, h.Region, state, h.Circuits)
}

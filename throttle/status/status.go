package status

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Snapshot is a front-end's state at one instant. Rates are bits/s.
type Snapshot struct {
	// Front is the front-end: "run", "proxy" or "gateway".
	Front   string    `json:"front_end"`
	Version string    `json:"version,omitempty"`
	Started time.Time `json:"started"`
	At      time.Time `json:"at"`
	// Healthy and Health are /healthz's answer: each line one thing
	// checked.
	Healthy bool     `json:"healthy"`
	Health  []string `json:"health"`
	// Circuits are sorted by ID.
	Circuits []Circuit `json:"circuits"`
	// The gateway's: its routes, the circuits established and pending,
	// and the datagrams refused, by cause.
	Routes      []Route `json:"routes,omitempty"`
	Established int     `json:"established,omitempty"`
	Pending     int     `json:"pending,omitempty"`
	Refusals    []Count `json:"refusals,omitempty"`
	// Totals are the front-end's counters since start, by name (requests
	// sent, overrides re-asserted, …), in a stable order.
	Totals []Count `json:"totals,omitempty"`
}

// Flowing reports whether any circuit receives anything.
func (s Snapshot) Flowing() bool {
	for _, c := range s.Circuits {
		if c.ReceivedBPS > 0 {
			return true
		}
	}
	return false
}

// Circuit is one circuit (the gateway: one viewer's circuit to a route's
// region). Rates are bits/s; 0 means "none yet" where the field says so.
type Circuit struct {
	ID     string `json:"id"` // stable while the circuit lives
	Viewer string `json:"viewer"`
	Region string `json:"region"`
	Agent  string `json:"agent,omitempty"`
	// Pending: the gateway has not proven the viewer's address yet.
	Pending     bool    `json:"pending,omitempty"`
	ReceivedBPS float64 `json:"received_bps"`
	// ShareBPS is one TCP share at the circuit's loss and RTT; 0 before
	// the first loss event.
	ShareBPS float64 `json:"share_bps"`
	// ViewerAskedBPS is the viewer's own latest request; 0: none seen.
	ViewerAskedBPS float64 `json:"viewer_asked_bps"`
	// AskedBPS is fairgrid's request in force; 0: none sent yet.
	AskedBPS float64 `json:"asked_bps"`
	// DecidedBPS is the controller's rate before the viewer's limit.
	DecidedBPS float64 `json:"decided_bps"`
	Loss       float64 `json:"loss_event_rate"`
	RTTms      float64 `json:"rtt_ms"` // 0: no sample yet
	// QueueMs is the queueing delay: the gateway's scheduler's, or the
	// RTT above its least over the page's window.
	QueueMs  float64 `json:"queue_delay_ms"`
	Requests uint64  `json:"requests"`
	// Waiting says why no request is sent yet ("" once one is).
	Waiting string `json:"waiting,omitempty"`
	// Why is the state in plain words.
	Why string `json:"why"`
}

// Route is one gateway route.
type Route struct {
	Listen   string `json:"listen"`
	Region   string `json:"region"`
	Answers  bool   `json:"answers"`
	Waiting  string `json:"waiting,omitempty"` // how long it has not answered
	Circuits int    `json:"circuits"`
}

// Count is a named counter.
type Count struct {
	Name string `json:"name"`
	N    uint64 `json:"n"`
}

// explain fills c.Why: what fairgrid asks the region for and why, in the
// words a viewer's user reads.
func (c *Circuit) explain() {
	var b strings.Builder
	switch {
	case c.Pending:
		b.WriteString("waiting for the viewer to prove its address")
	case c.AskedBPS <= 0:
		b.WriteString("measuring; no request sent yet")
		if c.Waiting != "" {
			b.WriteString(" (" + c.Waiting + ")")
		}
	default:
		fmt.Fprintf(&b, "asking the region for %s", Kbit(c.AskedBPS))
		switch {
		case c.limitedByViewer():
			fmt.Fprintf(&b, ": your viewer's own request, below what fairgrid would allow (%s)", Kbit(c.DecidedBPS))
		case c.ShareBPS > 0:
			if r := c.AskedBPS / c.ShareBPS; r >= 0.8 && r <= 1.25 {
				fmt.Fprintf(&b, ": one TCP share at %s loss and %s", Percent(c.Loss), Millis(c.RTTms))
			} else {
				// The controller's TCP flow and the equation's differ
				// while its window moves: say both.
				fmt.Fprintf(&b, ": what a TCP flow reaches at %s loss and %s (one share by the equation: %s)", Percent(c.Loss), Millis(c.RTTms), Kbit(c.ShareBPS))
			}
		default:
			b.WriteString(": no loss seen yet, so the rate a TCP flow would reach")
			if c.RTTms > 0 {
				fmt.Fprintf(&b, " at %s", Millis(c.RTTms))
			}
		}
		if c.ViewerAskedBPS > 0 && !c.limitedByViewer() {
			fmt.Fprintf(&b, "; your viewer asked %s", thousands(c.ViewerAskedBPS/1000))
		}
	}
	if c.ReceivedBPS > 0 || c.AskedBPS > 0 {
		fmt.Fprintf(&b, "; receiving %s", Kbit(c.ReceivedBPS))
	}
	c.Why = b.String()
}

// limitedByViewer: the viewer's own request, not fairgrid's rate, is what
// fairgrid asks for.
func (c *Circuit) limitedByViewer() bool {
	return c.ViewerAskedBPS > 0 && c.AskedBPS < c.DecidedBPS*0.99 && c.AskedBPS <= c.ViewerAskedBPS*1.01
}

// Refused are the refusal causes that counted something.
func (s Snapshot) Refused() []Count {
	var out []Count
	for _, c := range s.Refusals {
		if c.N > 0 {
			out = append(out, c)
		}
	}
	return out
}

// Kbit writes a rate in bits/s as kbit/s with thousands separated:
// "1,500 kbit/s".
func Kbit(bps float64) string { return thousands(bps/1000) + " kbit/s" }

// thousands writes x rounded, with commas: 1,500.
func thousands(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "-"
	}
	s := strconv.FormatInt(int64(math.Round(x)), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Percent writes a fraction as a percentage with two significant digits.
func Percent(p float64) string {
	switch {
	case p <= 0:
		return "0 %"
	case p < 0.001:
		return strconv.FormatFloat(p*100, 'f', 3, 64) + " %"
	case p < 0.1:
		return strconv.FormatFloat(p*100, 'f', 1, 64) + " %"
	}
	return strconv.FormatFloat(p*100, 'f', 0, 64) + " %"
}

// Millis writes milliseconds: "180 ms", "-" for none.
func Millis(ms float64) string {
	if ms <= 0 {
		return "-"
	}
	if ms < 10 {
		return strconv.FormatFloat(ms, 'f', 1, 64) + " ms"
	}
	return strconv.FormatFloat(ms, 'f', 0, 64) + " ms"
}

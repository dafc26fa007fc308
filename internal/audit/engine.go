package audit

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
	"github.com/fairgrid/fairgrid/throttle/circuit"
)

// NominalSegmentBytes is TFRC-SP's nominal s (RFC 4828 §3, congestion.md
// §13 item 2), the controllers' own.
const NominalSegmentBytes = ratecalc.NominalSegmentSize

// withinBand is the verdict's "fair" band: received within ±10 % of the
// fair rate. The SIGCOMM 2000 TFRC paper calls a factor of two fair
// (congestion.md §10.1); ±10 % is what the issue names, and what the
// controllers' own hysteresis (throttle's MinChange, 5 %) stays inside.
const withinBand = 0.10

// Config configures an Auditor. Zero fields take the defaults named.
type Config struct {
	// Ports selects the simulator ports' datagrams when reading captures
	// (nil: all); Sims and Template are as in circuit.Config.
	Ports    lludp.Ports
	Sims     []netip.AddrPort
	Template *lludp.Template
	// Segment is the verdict's s, the controllers' setting (default
	// mean); both fair rates are always reported. The replay uses it too
	// unless Replay.Segment says otherwise.
	Segment throttle.Segment
	// Series keeps the per-second rows and the requests in the Report
	// (Seconds, Requests): memory then grows with the seconds reported.
	// Without it only each circuit's per-second rates and ratios are kept,
	// a float each, for the percentiles.
	Series bool
	// Replay is the control loop whose controllers are replayed on the
	// trace: its Interval, Min, Max, Floor and ViewerSetting, defaults
	// filled in as throttle.New does. Its Controller is ignored: every
	// controller is replayed (replayed).
	Replay throttle.Config
}

// Auditor measures captured datagrams into a Report. It is for one
// goroutine; it starts none.
type Auditor struct {
	cfg     Config
	loop    throttle.Config
	tracker *circuit.Tracker

	circuits map[*circuit.Circuit]*circuitState
	order    []*circuitState
	hotC     *circuit.Circuit
	hotS     *circuitState

	// The 1 s bins are aligned to the capture's unix seconds and closed
	// for every flow at once when a datagram opens a later second.
	started bool
	sec     int64
	active  []*flowState

	nextTick int64 // unix ns of the next replay decision

	// Counts per message: High and Medium numbers index arrays (most
	// datagrams), the rest a map.
	high, medium [256]*MessageType
	messages     map[lludp.MessageID]*MessageType

	files    []FileResult
	file     int // index of the file whose datagram is in hand
	seconds  []Second
	requests []Request
	replayed [len(replayed)]bool // which sources appear
	warnings []string
	unknown  uint64
	decoded  uint64
}

// circuitState is the auditor's view of one circuit.
type circuitState struct {
	c    *circuit.Circuit
	name string
	file string
	dirs [2]flowState
	// replay holds the controllers the tracker feeds.
	replay *replayController
	// The viewer's AgentThrottles seen (and any sidecar's: both come from
	// the viewer's endpoint).
	throttleAt   time.Time
	requests     int64
	lastRequest  float64 // bit/s
	requestSince bool
}

// flowState is one direction of a circuit: the bins' running state.
type flowState struct {
	cs   *circuitState
	dir  circuit.Direction
	bin  int64 // the second last marked active
	prev circuit.DirStats
	// Per-second values, one per second that carried traffic: what the
	// per-connection percentiles are taken over.
	rates, ratios dist
	peak          float64
	lastRate      float64
	lastFair      *float64
}

// New returns an Auditor with nothing read.
func New(cfg Config) (*Auditor, error) {
	if cfg.Segment == "" {
		cfg.Segment = throttle.SegmentMean
	}
	if err := cfg.Segment.UnmarshalText([]byte(cfg.Segment)); err != nil {
		return nil, err
	}
	if cfg.Replay.Segment == "" {
		cfg.Replay.Segment = cfg.Segment
	}
	// The loop's own validation and defaults, so that the replay is the
	// configuration `fairgrid run` would use.
	l, err := throttle.New(cfg.Replay, nil)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	a := &Auditor{cfg: cfg, loop: l.Config(), circuits: map[*circuit.Circuit]*circuitState{}, messages: map[lludp.MessageID]*MessageType{}}
	if _, err := newReplay(a.loop); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	tc := circuit.Config{Sims: cfg.Sims, SimPorts: cfg.Ports, Template: cfg.Template}
	if cfg.Series {
		// The replay is reported only with the series; without them its
		// three controllers' work per datagram would be wasted.
		tc.NewController = func(circuit.Key) ratecalc.Controller {
			r, err := newReplay(a.loop)
			if err != nil {
				// New built one with the same configuration.
				panic("audit BUG: the replay built in New fails now: " + err.Error())
			}
			return r
		}
	}
	a.tracker = circuit.NewTracker(tc)
	return a, nil
}

// Observe measures one datagram of the file last begun with BeginFile. It
// returns the tracker's error for a datagram that is not LLUDP or belongs
// to no circuit; such datagrams are counted, never fatal.
func (a *Auditor) Observe(d lludp.Datagram) error {
	if len(a.files) == 0 {
		a.BeginFile("-")
	}
	at := d.At.UnixNano()
	sec := floorDiv(at, int64(time.Second))
	if !a.started {
		a.started, a.sec = true, sec
		a.nextTick = at + int64(a.loop.Interval)
	}
	if sec > a.sec {
		a.closeBins()
		a.sec = sec
	}
	if at >= a.nextTick {
		a.tick(at)
	}
	f := &a.files[a.file]
	// Counted here for a caller that observes datagrams itself (the lab);
	// Read replaces both with its reader's counts at the file's end.
	f.Datagrams++
	f.Bytes += int64(len(d.Payload))
	if f.FirstUnixMs == 0 {
		f.FirstUnixMs = at / 1e6
	}
	f.LastUnixMs = max(f.LastUnixMs, at/1e6)
	c, dir, err := a.tracker.Observe(d)
	if err != nil && !errors.Is(err, circuit.ErrNotCircuit) {
		if errors.Is(err, lludp.ErrUnknownMessage) {
			a.unknown++
		}
		return err
	}
	a.decoded++
	a.countMessage(d.Payload)
	if err != nil || c.Candidate() {
		return err
	}
	cs := a.hotS
	if c != a.hotC {
		cs = a.circuits[c]
		if cs == nil {
			cs = a.add(c)
		}
		a.hotC, a.hotS = c, cs
	}
	if fs := &cs.dirs[dir]; fs.bin != a.sec {
		fs.bin = a.sec
		a.active = append(a.active, fs)
	}
	if dir == circuit.Up && !c.ViewerThrottleAt.Equal(cs.throttleAt) {
		a.viewerRequest(cs)
	}
	return nil
}

// add starts following a circuit just promoted. Its promotion replayed
// datagrams of both directions, so both are in the current bin.
func (a *Auditor) add(c *circuit.Circuit) *circuitState {
	cs := &circuitState{c: c, name: c.Key.Viewer.String() + " > " + c.Key.Sim.String(), file: a.files[a.file].Name}
	cs.replay, _ = c.Controller.(*replayController)
	for d := range cs.dirs {
		cs.dirs[d] = flowState{cs: cs, dir: circuit.Direction(d), bin: a.sec}
		a.active = append(a.active, &cs.dirs[d])
	}
	a.circuits[c] = cs
	a.order = append(a.order, cs)
	return cs
}

// countMessage counts a datagram the tracker accepted under its message.
func (a *Auditor) countMessage(payload []byte) {
	h, _, _, err := lludp.ParseHeader(payload)
	if err != nil {
		return // the tracker parsed it already: cannot happen
	}
	var slot **MessageType
	switch {
	case h.ID.Frequency == lludp.High && h.ID.Number < 256:
		slot = &a.high[h.ID.Number]
	case h.ID.Frequency == lludp.Medium && h.ID.Number < 256:
		slot = &a.medium[h.ID.Number]
	}
	var m *MessageType
	if slot != nil {
		m = *slot
	} else {
		m = a.messages[h.ID]
	}
	if m == nil {
		name := h.ID.String()
		if msg := a.template().Lookup(h.ID); msg != nil {
			name = msg.Name
		}
		m = &MessageType{Name: name}
		a.messages[h.ID] = m
		if slot != nil {
			*slot = m
		}
	}
	m.Packets++
	m.Bytes += int64(len(payload))
}

func (a *Auditor) template() *lludp.Template {
	if a.cfg.Template != nil {
		return a.cfg.Template
	}
	return lludp.Builtin()
}

// viewerRequest records an AgentThrottle seen from the viewer's endpoint.
func (a *Auditor) viewerRequest(cs *circuitState) {
	c := cs.c
	cs.throttleAt = c.ViewerThrottleAt
	var total float64
	var cats [lludp.NumCategories]float64
	for i, v := range c.ViewerThrottle {
		cats[i] = float64(v)
		total += float64(v)
	}
	cs.requests++
	cs.lastRequest = total
	cs.requestSince = true
	if a.cfg.Series {
		down := &cs.dirs[circuit.Down]
		a.requests = append(a.requests, Request{Circuit: cs.name, UnixMs: c.ViewerThrottleAt.UnixMilli(), Source: SourceCapture,
			TotalBitPerS: total, CategoryBitPerS: cats, ReceivedBitPerS: down.lastRate, FairBitPerS: down.lastFair,
			RequestedOverFair: ratio(total, down.lastFair)})
	}
}

// closeBins ends the current second for every flow that carried traffic
// in it.
func (a *Auditor) closeBins() {
	for _, fs := range a.active {
		a.closeBin(fs)
		// Marked inactive, so that a datagram of the same second read after
		// a Report opens the bin again.
		fs.bin = math.MinInt64
	}
	a.active = a.active[:0]
}

func (a *Auditor) closeBin(fs *flowState) {
	c := fs.cs.c
	st := c.Stats(fs.dir)
	packets := st.Packets - fs.prev.Packets
	if packets == 0 {
		fs.prev = st
		return
	}
	// A bin is one second wide, so its bytes·8 are its bit/s.
	rate := float64(st.Bytes-fs.prev.Bytes) * 8
	fs.rates.add(rate)
	fs.peak = max(fs.peak, rate)
	fs.lastRate = rate
	rtt := pingRTT(c)
	state, fair := a.fair(st, a.segment(st), rtt, st.LossEventRate)
	fs.lastFair = fair
	r := ratio(rate, fair)
	if r != nil {
		fs.ratios.add(*r)
	}
	if a.cfg.Series {
		s := Second{Circuit: fs.cs.name, Direction: fs.dir.String(), UnixS: a.sec, Packets: int64(packets), BitPerS: rate,
			Lost: int64(st.Lost - fs.prev.Lost), LossEventRate: st.LossEventRate, RTTMs: millis(rtt),
			FairState: state, FairBitPerS: fair, Ratio: r}
		for i := range s.CategoryBitPerS {
			s.CategoryBitPerS[i] = float64(st.ByCategory[i]-fs.prev.ByCategory[i]) * 8
		}
		for i := range s.ChannelBitPerS {
			s.ChannelBitPerS[i] = float64(st.ByChannel[i]-fs.prev.ByChannel[i]) * 8
		}
		a.seconds = append(a.seconds, s)
	}
	fs.prev = st
}

// segment is the verdict's s for a direction's counters.
func (a *Auditor) segment(st circuit.DirStats) float64 {
	if a.cfg.Segment == throttle.SegmentNominal {
		return NominalSegmentBytes
	}
	return meanPayload(st)
}

func meanPayload(st circuit.DirStats) float64 {
	if st.Packets == 0 {
		return 0
	}
	return float64(st.Bytes) / float64(st.Packets)
}

// pingRTT is the circuit's ping-based RTT, nil before any ping pair: the
// ack-based one is biased by the simulator's ack delay and never used.
func pingRTT(c *circuit.Circuit) *time.Duration {
	r := c.RTT()
	if r.Samples() == 0 {
		return nil
	}
	d := r.SRTT()
	return &d
}

// fair is the TFRC rate for s, rtt and p in bit/s, or why there is none.
// Zero loss makes the rate unbounded whatever the RTT; it is stated, never
// written as a number.
func (a *Auditor) fair(st circuit.DirStats, s float64, rtt *time.Duration, p float64) (string, *float64) {
	switch {
	case st.Packets == 0 || s <= 0:
		return FairNoData, nil
	case st.LossEvents == 0 || !(p > 0):
		return FairUnbounded, nil
	case rtt == nil:
		return FairNoRTT, nil
	}
	v := ratecalc.TFRCRate(s, *rtt, p).BitsPerSecond()
	return FairKnown, &v
}

func ratio(x float64, fair *float64) *float64 {
	if fair == nil || !(*fair > 0) {
		return nil
	}
	r := x / *fair
	return &r
}

func millis(d *time.Duration) *float64 {
	if d == nil {
		return nil
	}
	v := float64(*d) / float64(time.Millisecond)
	return &v
}

// floorDiv divides rounding toward minus infinity, so that times before
// 1970 still fall in the right second.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// sortedMessages returns the message counts, most bytes first.
func (a *Auditor) sortedMessages() []MessageType {
	out := make([]MessageType, 0, len(a.messages))
	for _, m := range a.messages {
		out = append(out, *m)
	}
	slices.SortFunc(out, func(x, y MessageType) int {
		if x.Bytes != y.Bytes {
			if x.Bytes > y.Bytes {
				return -1
			}
			return 1
		}
		if x.Name < y.Name {
			return -1
		}
		if x.Name > y.Name {
			return 1
		}
		return 0
	})
	return out
}

package ratecalc

import (
	"cmp"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// A deterministic link simulator on virtual time: a sender that sends
// what the throttle allows (or less, when application-limited), a
// bottleneck with a capacity and a FIFO buffer in packets, one-way delay,
// random or bursty loss, and a receiver that declares a sequence number lost
// once three later ones have arrived (NDUPACK = 3) and feeds the controller.
// Every request interval the controller's decision travels to the sender in
// one one-way delay. Pings sample the RTT every pingEvery.

type linkConfig struct {
	capacity Rate          // bottleneck, bytes/s
	buffer   int           // FIFO length in packets
	delay    time.Duration // one-way
	loss     float64       // random loss probability per packet
	burstLen float64       // > 1: losses come in bursts of this mean length (Gilbert–Elliott), same mean rate
	size     int           // payload bytes
	appRate  Rate          // > 0: the application sends at most this
	// appBurst > 0: the application has appBurst bytes to send every
	// appPeriod (a region resending terrain patches), sent at the
	// throttle until they are gone: demand appBurst/appPeriod.
	appBurst  int
	appPeriod time.Duration
	interval  time.Duration // request interval
	pingEvery time.Duration
	seed      uint64
	// lossAt, if set, changes the loss probability during the run.
	lossAt func(t time.Duration) float64
}

func (c linkConfig) withDefaults() linkConfig {
	c.capacity = cmp.Or(c.capacity, Rate(1e12))
	c.buffer = cmp.Or(c.buffer, 1000)
	c.size = cmp.Or(c.size, 1200)
	c.interval = cmp.Or(c.interval, 5*time.Second)
	c.pingEvery = cmp.Or(c.pingEvery, 5*time.Second)
	return c
}

// linkResult summarises a run from the end of warm-up on.
type linkResult struct {
	requested  []Rate // the decision at each interval (whole run)
	received   []Rate // what arrived over each interval, at its decision
	meanRate   Rate   // mean requested rate, after warm-up
	meanRecv   Rate   // mean received rate, after warm-up
	packets    uint64 // sequence numbers sent, after warm-up
	events     uint64 // loss events, after warm-up
	lossEvent  float64
	packetLoss float64
	meanRTT    time.Duration
	maxWindow  float64
}

// gap is a run of missing sequence numbers between before and after.
type gap struct {
	before, after   uint64
	tBefore, tAfter time.Duration
	later           int // arrivals since the gap was seen
}

type inflight struct {
	seq     uint64
	arrival time.Duration
	lost    bool
}

func runLink(ctrl Controller, cfg linkConfig, duration, warmup time.Duration) linkResult {
	cfg = cfg.withDefaults()
	rng := rand.New(rand.NewPCG(cfg.seed, 0x9E3779B97F4A7C15))
	t0 := time.Unix(1_700_000_000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }

	var (
		now, nextSend, nextControl, nextPing time.Duration
		applyAt                              = time.Duration(-1)
		pingDue                              = time.Duration(-1) // when the outstanding ping's reply arrives
		pingSample                           time.Duration
		pending                              Rate
		throttle                             Rate
		queue                                []inflight // packets in order of arrival at the receiver
		departures                           []time.Duration
		lastDeparture                        time.Duration
		seq                                  uint64
		badState                             bool // Gilbert–Elliott: in the lossy burst state
		// receiver
		highest              uint64
		haveHighest          bool
		lastArrival          time.Duration
		missing              []gap
		res                  linkResult
		recvBytes            float64
		rttSum               time.Duration
		rttN                 int
		eventsAtWarm, pktsAt uint64
		lostAtWarm           uint64
		warmSet              bool
		rateSum              float64
		rateN                int
		intervalBytes        float64
		backlog              int // bytes the bursty application has yet to send
		nextBurst            time.Duration
	)
	throttle = ctrl.Rate(at(0))
	res.requested = append(res.requested, throttle)
	nextControl, nextPing = cfg.interval, 0
	sendRate := func() Rate {
		r := throttle
		if cfg.appRate > 0 {
			r = min(r, cfg.appRate)
		}
		return max(r, 1)
	}
	nextSend = 0
	lossProb := func() float64 {
		if cfg.lossAt != nil {
			return cfg.lossAt(now)
		}
		return cfg.loss
	}
	dropped := func() bool {
		p := lossProb()
		if cfg.burstLen <= 1 {
			return rng.Float64() < p
		}
		// Two states: bad drops everything and lasts burstLen packets on
		// average; good drops nothing. The stationary drop rate is p.
		leave := 1 / cfg.burstLen
		enter := p * leave / (1 - p)
		if badState {
			badState = rng.Float64() >= leave
		} else {
			badState = rng.Float64() < enter
		}
		return badState
	}
	queueDelay := func() time.Duration {
		if lastDeparture > now {
			return lastDeparture - now
		}
		return 0
	}
	bursty := cfg.appBurst > 0
	if bursty {
		nextSend = -1 // nothing to send before the first burst
	}
	for now < duration {
		next := min(nextControl, nextPing)
		if nextSend >= 0 {
			next = min(next, nextSend)
		}
		if bursty {
			next = min(next, nextBurst)
		}
		if len(queue) > 0 {
			next = min(next, queue[0].arrival)
		}
		if applyAt >= 0 {
			next = min(next, applyAt)
		}
		if pingDue >= 0 {
			next = min(next, pingDue)
		}
		now = next
		if !warmSet && now >= warmup {
			warmSet = true
			st := ctrl.Stats()
			eventsAtWarm, pktsAt, lostAtWarm = st.LossEvents, seq, st.Lost
		}
		switch {
		case bursty && now == nextBurst:
			backlog += cfg.appBurst
			nextBurst += cfg.appPeriod
			if nextSend < 0 {
				nextSend = now
			}
		case applyAt >= 0 && now == applyAt:
			throttle, applyAt = pending, -1
		case len(queue) > 0 && now == queue[0].arrival:
			p := queue[0]
			queue = queue[1:]
			if p.lost {
				continue // the receiver learns of it from later arrivals
			}
			if haveHighest && p.seq > highest+1 {
				missing = append(missing, gap{before: highest, after: p.seq, tBefore: lastArrival, tAfter: now})
			}
			ctrl.OnPacket(Packet{At: at(now), Size: cfg.size})
			intervalBytes += float64(cfg.size)
			if warmSet {
				recvBytes += float64(cfg.size)
			}
			// A gap is lost once three packets after it have arrived; its
			// time is interpolated between its neighbours (RFC 5348 §5.2).
			for i := range missing {
				missing[i].later++
			}
			for len(missing) > 0 && missing[0].later >= 3 {
				g := missing[0]
				missing = missing[1:]
				for s := g.before + 1; s < g.after; s++ {
					frac := float64(s-g.before) / float64(g.after-g.before)
					ctrl.OnPacket(Packet{At: at(g.tBefore + time.Duration(frac*float64(g.tAfter-g.tBefore))), Lost: true})
				}
			}
			highest, haveHighest, lastArrival = p.seq, true, now
		case now == nextControl:
			r := ctrl.Rate(at(now))
			res.requested = append(res.requested, r)
			res.received = append(res.received, RateFromDelta(intervalBytes, cfg.interval))
			intervalBytes = 0
			if warmSet {
				rateSum += float64(r)
				rateN++
			}
			if w := ctrl.Stats().Window; w > res.maxWindow {
				res.maxWindow = w
			}
			pending, applyAt = r, now+cfg.delay
			nextControl += cfg.interval
		case pingDue >= 0 && now == pingDue:
			ctrl.OnRTT(pingSample, at(now))
			if warmSet {
				rttSum += pingSample
				rttN++
			}
			pingDue = -1
		case now == nextPing:
			pingSample = 2*cfg.delay + queueDelay()
			pingDue = now + pingSample
			nextPing += cfg.pingEvery
		default: // nextSend
			seq++
			p := inflight{seq: seq}
			// The bottleneck: drop on a full buffer, else serialise.
			for len(departures) > 0 && departures[0] <= now {
				departures = departures[1:]
			}
			switch {
			case dropped():
				p.lost = true
				p.arrival = now + cfg.delay
			case len(departures) >= cfg.buffer:
				p.lost = true
				p.arrival = now + cfg.delay
			default:
				start := max(now, lastDeparture)
				lastDeparture = start + time.Duration(float64(cfg.size)/float64(cfg.capacity)*1e9)
				departures = append(departures, lastDeparture)
				p.arrival = lastDeparture + cfg.delay
			}
			// Keep arrivals in order (a drop "arrives" as a gap marker).
			if n := len(queue); n > 0 && p.arrival < queue[n-1].arrival {
				p.arrival = queue[n-1].arrival
			}
			queue = append(queue, p)
			nextSend = now + time.Duration(float64(cfg.size)/float64(sendRate())*1e9)
			if bursty {
				if backlog -= cfg.size; backlog <= 0 {
					backlog, nextSend = 0, -1
				}
			}
		}
	}
	st := ctrl.Stats()
	res.packets = seq - pktsAt
	res.events = st.LossEvents - eventsAtWarm
	if res.packets > 0 {
		res.lossEvent = float64(res.events) / float64(res.packets)
		res.packetLoss = float64(st.Lost-lostAtWarm) / float64(res.packets)
	}
	if rateN > 0 {
		res.meanRate = Rate(rateSum / float64(rateN))
	}
	res.meanRecv = RateFromDelta(recvBytes, duration-warmup)
	if rttN > 0 {
		res.meanRTT = rttSum / time.Duration(rttN)
	}
	return res
}

func mustTFRC(t testing.TB, cfg TFRCConfig) *TFRC {
	c, err := NewTFRC(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustWindow(t testing.TB, cfg WindowConfig) *Window {
	c, err := NewWindow(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// runFor returns a duration long enough for about `events` loss events at
// the Mathis rate for loss p and one-way delay d.
func runFor(p float64, d time.Duration, events float64) time.Duration {
	pktPerSec := math.Sqrt(1.5/p) / (2 * d).Seconds()
	secs := events / (p * pktPerSec)
	return time.Duration(min(max(secs, 300), 20000) * float64(time.Second))
}

func relErr(got, want Rate) float64 { return float64(got)/float64(want) - 1 }

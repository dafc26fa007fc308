package gateway_test

import (
	"context"
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim"
	"github.com/fairgrid/fairgrid/opensim/gateway"
	"github.com/fairgrid/fairgrid/opensim/gateway/gatewaytest"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle"
)

// boundRun is what one viewer received in TestChannelBoundOnSockets: each
// Avatar and Task datagram's wait from the region's send to its arrival,
// and the texture bytes that arrived while the region was sending.
type boundRun struct {
	waits        map[opensim.Channel][]time.Duration
	textureBytes int
}

// stamped is a region datagram whose last 12 bytes are its send time
// (unix ns) and an index: read back at the viewer, wherever the
// gateway's renumbering leaves the rest.
func stamped(id lludp.MessageID, seq uint32, flags lludp.Flags, size int, at time.Time) []byte {
	b := gatewaytest.Datagram(id, seq, flags, size, nil)
	binary.LittleEndian.PutUint64(b[len(b)-12:], uint64(at.UnixNano()))
	binary.LittleEndian.PutUint32(b[len(b)-4:], seq)
	return b
}

// TestChannelBoundOnSockets: proportional fair queuing across the channels
// on real sockets. A viewer asks 400 kbit/s (50,000 B/s); the region keeps a
// texture backlog (a burst of 30 1,000-byte ImagePackets, then 60,000 B/s of
// them, more than the rate) while it sends an 80-byte avatar update every
// 100 ms and a 1,200-byte ObjectUpdate every 500 ms, for 2 s (as
// TestChannelFairQueuing: each within its channel's own rate — the viewer's
// split gives Task 28 % of the total, of which the Task channel has a fifth,
// 2,800 B/s, and Avatar the rest). Through the gateway (its default
// scheduler) an Avatar or Task datagram waits at most one texture
// datagram's transmission time at the viewer's rate, 1,000 B ÷ 50,000 B/s =
// 20 ms, plus its own bucket's wait — the scheduler's calendar slot,
// 131 µs, for a channel within its rate; on explicit time
// TestChannelFairQueuing holds the bound exactly. (Offered beyond its
// channel's rate — an ObjectUpdate every 300 ms, 4,000 B/s — Task waits for
// its own bucket as well.) Here the wait from the region's send to the
// viewer's read is held to it plus 5 ms for nine datagrams in ten (the
// gateway's timer and the reader wake late on a loaded 2-core machine),
// the gateway's own measure of its largest wait to it plus 50 ms; the
// texture channel keeps at least 70 % of what the others leave. With the gateway off, the same datagrams cross one
// FIFO at the same 50,000 B/s (the link emulator's, as the viewer's access
// link would hold them): they wait behind the texture backlog. Under the
// race detector the waits are logged, not judged.
func TestChannelBoundOnSockets(t *testing.T) {
	const (
		rate     = 50_000 // B/s
		texSize  = 1000
		run      = 2 * time.Second
		avatarHz = 10
	)
	bound := time.Duration(texSize)*time.Second/rate + 131*time.Microsecond
	ask := throttle.ViewerSplit(ratecalc.Rate(rate))

	// On: the gateway in front of a stand-in region.
	// The viewer acks nothing (the stand-in viewer does not), which
	// the gateway reads as losing everything (issue 34): the fair rate
	// is clamped at the ask, so that this is the channels' bound alone.
	on := gatewaytest.Start(t, gateway.Config{Control: throttle.Config{Min: ratecalc.Rate(rate)}}, nil)
	onViewer := gatewaytest.NewViewer(t, on.GW.Addr(0), 1, gatewaytest.Loopback)
	onAt := on.LoggedIn(t, onViewer, &ask)
	// Off: the same region traffic through one FIFO at the same rate.
	offRegion := gatewaytest.StartRegion(t)
	relay, err := link.New(link.Config{Listen: loopback, Upstream: offRegion.Addr(), Down: link.PipeConfig{Rate: rate, Buffer: 4000}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	relayDone := make(chan error, 1)
	go func() { relayDone <- relay.Run(ctx) }()
	defer func() { cancel(); <-relayDone }()
	offViewer := gatewaytest.NewViewer(t, relay.Addr(), 2, gatewaytest.Loopback)
	offViewer.UseCircuitCode(t)
	offAt := offRegion.NextOf(t, lludp.UseCircuitCodeID).From

	// The viewers read until every Avatar and Task datagram has arrived.
	avatars, tasks := int(run.Seconds()*avatarHz), int(run/(500*time.Millisecond))
	var sendEnd time.Time
	ended := make(chan struct{})
	receive := func(v *gatewaytest.Viewer, out chan<- boundRun) {
		r := boundRun{waits: map[opensim.Channel][]time.Duration{}}
		defer func() { out <- r }()
		for len(r.waits[opensim.Avatar]) < avatars || len(r.waits[opensim.Task]) < tasks {
			h, b, at := v.Recv(t)
			if len(b) < 12 {
				continue
			}
			sent := time.Unix(0, int64(binary.LittleEndian.Uint64(b[len(b)-12:])))
			switch h.ID {
			case lludp.ImprovedTerseObjectUpdateID:
				r.waits[opensim.Avatar] = append(r.waits[opensim.Avatar], at.Sub(sent))
			case lludp.ObjectUpdateID:
				r.waits[opensim.Task] = append(r.waits[opensim.Task], at.Sub(sent))
			case lludp.ImagePacketID:
				select {
				case <-ended:
				default:
					r.textureBytes += len(b)
				}
			}
		}
	}
	onOut, offOut := make(chan boundRun, 1), make(chan boundRun, 1)
	go receive(onViewer, onOut)
	go receive(offViewer, offOut)

	// The region: both circuits get the same datagrams at the same times.
	var seq uint32
	send := func(id lludp.MessageID, flags lludp.Flags, size int, now time.Time) {
		seq++
		b := stamped(id, seq, flags, size, now)
		on.Region.Send(t, onAt, b)
		offRegion.Send(t, offAt, slices.Clone(b))
	}
	start := time.Now()
	for range 30 {
		send(lludp.ImagePacketID, lludp.FlagReliable, texSize, start)
	}
	tick := time.NewTicker(5 * time.Millisecond)
	var texSent float64
	nextAvatar, nextTask := start, start.Add(50*time.Millisecond)
	sentAvatars, sentTasks := 0, 0
	for now := start; now.Sub(start) < run; now = <-tick.C {
		for ; texSent < 60_000*now.Sub(start).Seconds(); texSent += texSize {
			send(lludp.ImagePacketID, lludp.FlagReliable, texSize, now)
		}
		if !now.Before(nextAvatar) && sentAvatars < avatars {
			send(lludp.ImprovedTerseObjectUpdateID, 0, 80, now)
			sentAvatars++
			nextAvatar = nextAvatar.Add(time.Second / avatarHz)
		}
		if !now.Before(nextTask) && sentTasks < tasks {
			send(lludp.ObjectUpdateID, lludp.FlagReliable, 1200, now)
			sentTasks++
			nextTask = nextTask.Add(500 * time.Millisecond)
		}
	}
	tick.Stop()
	sendEnd = time.Now()
	close(ended)
	for sentAvatars < avatars || sentTasks < tasks { // a loaded machine's ticker fell behind: send the rest now
		if sentAvatars < avatars {
			send(lludp.ImprovedTerseObjectUpdateID, 0, 80, time.Now())
			sentAvatars++
		}
		if sentTasks < tasks {
			send(lludp.ObjectUpdateID, lludp.FlagReliable, 1200, time.Now())
			sentTasks++
		}
	}
	onRun, offRun := <-onOut, <-offOut
	c := on.GW.Circuits()
	if len(c) != 1 {
		t.Fatalf("%d circuits through the gateway", len(c))
	}
	st := c[0]
	q := func(ds []time.Duration, f float64) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[min(len(s)-1, int(f*float64(len(s))))]
	}
	for _, ch := range []opensim.Channel{opensim.Avatar, opensim.Task} {
		w, wOff := onRun.waits[ch], offRun.waits[ch]
		t.Logf("%v: through the gateway median %v, p95 %v, max %v (the gateway's own measure of its queue: max %v, mean %v); gateway off (one FIFO): median %v, max %v; bound %v",
			ch, q(w, 0.5), q(w, 0.95), slices.Max(w), st.Delay[ch], st.DelayMean[ch], q(wOff, 0.5), slices.Max(wOff), bound)
		if raceEnabled {
			continue
		}
		// The bound is on the wait in the gateway's queue. On a shared
		// 2-core machine a goroutine (the gateway's loop, the region's
		// sender, the viewer's reader) now and then waits tens of
		// milliseconds for a core: such outliers are allowed for one
		// datagram in ten, and the gateway's own largest measure is held
		// to the bound plus 50 ms — an order of magnitude under the FIFO's.
		over := 0
		for _, d := range w {
			if d > bound+5*time.Millisecond {
				over++
			}
		}
		if over > max(1, len(w)/10) {
			t.Errorf("%v: %d of %d datagrams waited more than the bound %v plus 5 ms from the region to the viewer", ch, over, len(w), bound)
		}
		if st.Delay[ch] > bound+50*time.Millisecond {
			t.Errorf("%v waited up to %v in the gateway's queue, above the bound %v plus 50 ms", ch, st.Delay[ch], bound)
		}
		if st.Delay[ch] > slices.Max(w)+time.Millisecond {
			t.Errorf("%v: the gateway measured a wait of %v in its queue, longer than any datagram took end to end (%v)", ch, st.Delay[ch], slices.Max(w))
		}
		if q(wOff, 0.5) <= 10*bound {
			t.Errorf("%v waited a median %v with the gateway off: the FIFO held no backlog, and the test shows nothing", ch, q(wOff, 0.5))
		}
	}
	// What the others leave, over the sending period.
	secs := sendEnd.Sub(start).Seconds()
	leave := rate*secs - float64(avatars*80+tasks*1200)
	t.Logf("texture: %.0f B/s through the gateway, %.0f with it off; the others leave %.0f B/s; the gateway's mean texture wait %v; load shows in the spread",
		float64(onRun.textureBytes)/secs, float64(offRun.textureBytes)/secs, leave/secs, st.DelayMean[opensim.Texture])
	if !raceEnabled && float64(onRun.textureBytes) < 0.7*leave {
		t.Errorf("the texture channel got %d bytes in %.2f s, under 70 %% of the %.0f the others leave", onRun.textureBytes, secs, leave)
	}
}

package opensim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
)

// The differential test runs one sequence of operations through the fast
// Scheduler and the reference (reference_test.go) and compares, after every
// call: the packets Next and NextBatch return (client, channel, size,
// packet, resend flag), the waits they return when nothing may leave, the
// errors of Enqueue, EnqueueBatch, SetThrottle and RemoveClient, the
// throttle reports and rates, and every counter of Stats and ClientStats
// (so drops at the queue limits and discards on removal too).
//
// The freedom the fast scheduler has by design, and exactly that:
//
//  1. Which client goes next. The reference orders ready clients by exact
//     start tag; the fast scheduler's ready calendar has slots 2^-12 virtual
//     seconds wide and serves a slot first come first served. So Next may
//     return the packet of any ready client whose start tag S has
//     ⌊S/2^20⌋ = ⌊Smin/2^20⌋ (tags in units of 2^-32 s), Smin the smallest
//     start tag of a ready client, and of no other client. The reference
//     then goes on from the client chosen: v becomes that client's start
//     tag, as SFQ defines it, so both stay in the same state.
//  2. When a waiting client becomes ready. Its bucket turns positive at an
//     exact nanosecond W; the fast scheduler's waiting calendar has slots of
//     2^17 ns from the Unix epoch and wakes the client at the first Next at
//     or after W rounded up to a multiple of 2^17 ns. The reference does
//     the same, so this is no freedom in the comparison: a wait for a
//     client is exactly that rounded-up time minus now, and a wait for the
//     scene bucket is exact.
//
// Nothing else may differ: within a client the channel order, Avatar
// priority, the tags and every token are exact.

// differ drives both schedulers and fails the test at the first difference,
// printing the operations that led to it.
type differ struct {
	t    testing.TB
	fast *Scheduler[int]
	ref  *refScheduler
	ids  []ClientID       // every ID AddClient returned, removed ones too
	of   map[ClientID]int // the reference's handle for each of them
	now  time.Time
	wait time.Duration // the last wait Next returned
	seq  int           // the next packet's payload: every packet is unique
	ops  []string
	seen differCoverage
}

// differCoverage counts what the comparisons exercised, so that a test can
// insist it compared something.
type differCoverage struct {
	operations, packets, choices, sceneWaits, clientWaits, idle, refused, discarded, priority int
	// Under ChannelBuckets: packets compared, and backlogged channels
	// passed over because their category bucket was empty.
	categoryPackets, categorySkips int
	// Clients beyond a calendar's horizon, in its overflow heap.
	farReady, farWaiting int
}

// differEpoch is where a sequence's time starts.
var differEpoch = time.Unix(1_800_000_000, 0)

func newDiffer(t testing.TB, cfg Config) (*differ, error) {
	fast, err := New[int](cfg)
	if err != nil {
		return nil, err
	}
	return &differ{t: t, fast: fast, ref: newRefScheduler(fast.Config()), of: map[ClientID]int{}, now: differEpoch}, nil
}

func (d *differ) logf(format string, a ...any) {
	d.ops = append(d.ops, fmt.Sprintf("%d ", d.now.Sub(differEpoch))+fmt.Sprintf(format, a...))
}

func (d *differ) fail(format string, a ...any) {
	d.t.Helper()
	ops := d.ops
	if len(ops) > 60 {
		ops = ops[len(ops)-60:]
	}
	d.t.Fatalf("%s\nconfig %+v\nlast operations (time since start in ns, then the call):\n  %s", fmt.Sprintf(format, a...), d.fast.Config(), strings.Join(ops, "\n  "))
}

func (d *differ) handle(id ClientID) int {
	if h, ok := d.of[id]; ok {
		return h
	}
	return -1
}

func (d *differ) add() ClientID {
	id := d.fast.AddClient(d.now)
	if _, dup := d.of[id]; dup {
		d.fail("AddClient returned %v again", id)
	}
	d.of[id] = d.ref.addClient(d.now)
	d.ids = append(d.ids, id)
	d.logf("AddClient() = %v", id)
	return id
}

func (d *differ) remove(id ClientID) {
	d.logf("RemoveClient(%v)", id)
	got := d.fast.RemoveClient(id, d.now)
	want := d.ref.removeClient(d.handle(id), d.now)
	if got != want {
		d.fail("RemoveClient(%v) = %v, reference %v", id, got, want)
	}
}

func (d *differ) throttleValues(id ClientID, cats [lludp.NumCategories]float32) {
	d.logf("SetThrottleValues(%v, %v)", id, cats)
	rep, err := d.fast.SetThrottleValues(id, cats, d.now)
	want, werr := d.ref.setThrottleValues(d.handle(id), cats, d.now)
	d.checkThrottle(rep, err, want, werr)
}

func (d *differ) throttleRaw(id ClientID, raw []byte) {
	d.logf("SetThrottle(%v, %x)", id, raw)
	rep, err := d.fast.SetThrottle(id, raw, d.now)
	want, werr := d.ref.setThrottle(d.handle(id), raw, d.now)
	d.checkThrottle(rep, err, want, werr)
}

func (d *differ) checkThrottle(rep ThrottleReport, err error, want ThrottleReport, werr error) {
	d.t.Helper()
	if rep != want || !errors.Is(err, werr) || (err == nil) != (werr == nil) {
		d.fail("throttle: report %+v, error %v; reference %+v, %v", rep, err, want, werr)
	}
}

func (d *differ) enqueue(id ClientID, ch Channel, size int, resend bool) {
	d.seq++
	d.logf("Enqueue(%v, %v, %d, packet %d, resend %v)", id, ch, size, d.seq, resend)
	err := d.fast.Enqueue(id, ch, size, d.seq, resend, d.now)
	werr := d.ref.enqueue(d.handle(id), ch, size, d.seq, resend, d.ref.clock(d.now))
	if !errors.Is(err, werr) || (err == nil) != (werr == nil) {
		d.fail("Enqueue(%v, %v, %d, resend %v) = %v, reference %v", id, ch, size, resend, err, werr)
	}
	if errors.Is(err, ErrQueueFull) {
		d.seen.refused++
	}
}

func (d *differ) enqueueBatch(pkts []Outgoing[int]) {
	for k := range pkts {
		d.seq++
		pkts[k].Packet = d.seq
	}
	d.logf("EnqueueBatch(%+v)", pkts)
	errs := make([]error, len(pkts))
	n := d.fast.EnqueueBatch(pkts, errs, d.now)
	t := d.ref.clock(d.now)
	want := 0
	for k, p := range pkts {
		werr := d.ref.enqueue(d.handle(p.Client), p.Channel, p.Size, p.Packet, p.Resend, t)
		if werr == nil {
			want++
		}
		if !errors.Is(errs[k], werr) || (errs[k] == nil) != (werr == nil) {
			d.fail("EnqueueBatch packet %d (%+v): %v, reference %v", k, p, errs[k], werr)
		}
	}
	if n != want {
		d.fail("EnqueueBatch queued %d, reference %d", n, want)
	}
}

func (d *differ) next() (ok bool) {
	it, wait, ok := d.fast.Next(d.now)
	t := d.ref.clock(d.now)
	if ok {
		d.logf("Next() = %+v", it)
		d.checkSent(it, t)
		return true
	}
	d.logf("Next() = wait %v", wait)
	d.checkWait(wait, t)
	return false
}

func (d *differ) nextBatch(k int) {
	out := make([]Item[int], k)
	n, wait := d.fast.NextBatch(out, d.now)
	t := d.ref.clock(d.now)
	d.logf("NextBatch(%d) = %d packets %+v, wait %v", k, n, out[:n], wait)
	for _, it := range out[:n] {
		d.checkSent(it, t)
	}
	if n == k {
		if wait != 0 {
			d.fail("NextBatch filled all %d, wait %v", k, wait)
		}
		return
	}
	d.checkWait(wait, t)
}

// checkSent checks that the fast scheduler's packet is one the reference
// allows at t, and sends it in the reference.
func (d *differ) checkSent(it Item[int], t int64) {
	d.t.Helper()
	out := d.ref.step(t)
	h := d.handle(it.Client)
	i := slices.IndexFunc(out.candidates, func(c refCandidate) bool { return c.client == h })
	if i < 0 {
		d.fail("sent %+v; the reference allows %s", it, d.describe(out, t))
	}
	c := out.candidates[i]
	want := Item[int]{Client: it.Client, Channel: c.channel, Size: c.packet.size, Packet: c.packet.packet, Resend: c.packet.resend}
	if it != want {
		d.fail("sent %+v; the reference sends %+v from that client", it, want)
	}
	d.noteHorizons(out, t)
	d.ref.send(c, t)
	d.seen.packets++
	if d.ref.cfg.ChannelBuckets {
		d.seen.categoryPackets++
	}
	if len(out.candidates) > 1 {
		d.seen.choices++
	}
	if c.priority {
		d.seen.priority++
	}
}

// checkWait checks the wait of a Next that sent nothing: as the reference
// reckons it from its clock, plus how far the time given lies behind that
// clock.
func (d *differ) checkWait(wait time.Duration, t int64) {
	d.t.Helper()
	out := d.ref.step(t)
	if len(out.candidates) > 0 {
		d.fail("nothing sent, wait %v; the reference sends %s", wait, d.describe(out, t))
	}
	d.noteHorizons(out, t)
	want := out.wait
	if want != Idle {
		want += time.Duration(t - d.now.UnixNano())
	}
	if wait != want {
		d.fail("wait %v; the reference waits %v for the %s", wait, want, out.waitFor)
	}
	d.wait = wait
	switch out.waitFor {
	case "scene":
		d.seen.sceneWaits++
	case "client":
		d.seen.clientWaits++
	default:
		d.seen.idle++
	}
}

// noteHorizons counts the calls at which some client was beyond a fast
// calendar's horizon (8,192 slots), so in its overflow heap.
func (d *differ) noteHorizons(out refOutcome, t int64) {
	for _, c := range d.ref.clients {
		switch {
		case !c.live:
		case c.state == refReady && len(out.candidates) > 0 && c.start/readySlot-d.ref.clients[out.candidates[0].client].start/readySlot >= 1<<13:
			d.seen.farReady++
		case c.state == refWaiting && refWakeTime(c)/waitingSlot-t/waitingSlot > 1<<13:
			d.seen.farWaiting++
		}
	}
}

func (d *differ) describe(out refOutcome, t int64) string {
	if len(out.candidates) == 0 {
		return fmt.Sprintf("nothing (wait %v for the %s)", out.wait, out.waitFor)
	}
	var b strings.Builder
	for _, c := range out.candidates {
		rc := d.ref.clients[c.client]
		fmt.Fprintf(&b, "[client %v start %d (slot %d) %v packet %+v] ", d.ids[c.client], rc.start, rc.start/readySlot, c.channel, c.packet)
	}
	for h, rc := range d.ref.clients {
		if rc.live && rc.state != refIdle {
			fmt.Fprintf(&b, "\n    client %v state %d start %d (slot %d) finish %d, tokens %d at %d", d.ids[h], rc.state, rc.start, rc.start/readySlot, rc.finish, rc.bucket.tokens, rc.bucket.last-t)
		}
	}
	return b.String()
}

// compare checks every counter and every client's rates and statistics.
func (d *differ) compare() {
	d.t.Helper()
	if got, want := d.fast.Stats(), d.ref.stats; got != want {
		d.fail("Stats\n  fast      %+v\n  reference %+v", got, want)
	}
	for _, id := range d.ids {
		h := d.of[id]
		st, queued, ok := d.fast.ClientStats(id)
		wst, wqueued, wok := d.ref.clientStats(h)
		if st != wst || queued != wqueued || ok != wok {
			d.fail("ClientStats(%v)\n  fast      %+v %v %v\n  reference %+v %v %v", id, st, queued, ok, wst, wqueued, wok)
		}
		rates, total, ok := d.fast.Rates(id)
		if c := d.ref.client(h); ok != (c != nil) || (ok && (rates != c.rates || total != sumRates(c.rates))) {
			d.fail("Rates(%v) = %v %d %v; reference %+v", id, rates, total, ok, c)
		}
	}
}

// drain follows the waits until nothing is queued.
func (d *differ) drain(limit int) {
	for range limit {
		if d.next() {
			continue
		}
		if d.wait == Idle {
			return
		}
		d.now = d.now.Add(d.wait)
	}
	d.fail("not drained after %d calls", limit)
}

// opReader hands out the bytes of a fuzz input, zeros after its end.
type opReader struct {
	data []byte
	pos  int
}

func (r *opReader) byte() byte {
	if r.pos >= len(r.data) {
		r.pos++
		return 0
	}
	b := r.data[r.pos]
	r.pos++
	return b
}

func (r *opReader) more() bool { return r.pos < len(r.data) }

// differConfig picks a configuration from four bytes: small scene caps
// and queues so that the scene bucket and the queue limits bind, and the
// extremes the validation allows.
func differConfig(r *opReader) Config {
	a, b, c, e := r.byte(), r.byte(), r.byte(), r.byte()
	return Config{
		SceneMax:       []int64{0, 20_000, 200_000, 1_000_000, 1 << 33, 3_000, 64_000, 500_000}[a%8],
		ClientMax:      []int64{0, 50_000, 3_000, 1 << 33}[(a>>3)%4],
		AvatarPriority: a&0x20 != 0,
		AvatarShare:    []float64{0, 0.5, 1, 0.01}[(a>>6)%4],
		QueuePackets:   []int{0, 1, 3, 8}[b%4],
		QueueBytes:     []int64{0, 1 << 16, 20_000, 70_000}[(b>>2)%4],
		MaxPacket:      []int{0, 1500, 1 << 16, 9000}[(b>>4)%4],
		BurstTime:      []time.Duration{0, time.Millisecond, 10 * time.Second, 3*time.Millisecond + 7}[(b>>6)%4],
		MinBurst:       []int64{0, 1, 100_000, 700}[c%4],
		ChannelMin:     [NumChannels]int64{int64(c>>2) % 3 * 250, 0, 0, 0, int64(c>>4) % 2 * 1000},
		ChannelBuckets: c&0x80 != 0,
		DefaultRates:   [NumChannels]int64{int64(e) * 97, int64(e) * 31, int64(e) * 53, int64(e) * 7, int64(e)},
	}
}

// throttleValues are categories that matter: zero, the channel floor,
// typical viewer settings, huge, and the invalid values.
var throttleValues = []float32{0, 1, 4000, 12_000, 64_000, 100_000, 500_000, 1_536_000, 5e6, 1e9, 3.4e38, -1, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 8_000}

func (d *differ) size(r *opReader) int {
	b := r.byte()
	mp := d.fast.Config().MaxPacket
	if b < 128 {
		return int(b)*37 + 1
	}
	return []int{0, 1, 125, 500, 1200, 1500, mp, mp + 1, -1, 8192, 3, 2500, 40, 1000, 64, 7}[b%16]
}

func (d *differ) pick(r *opReader) ClientID {
	b := r.byte()
	if len(d.ids) == 0 || int(b)%(len(d.ids)+1) == len(d.ids) {
		return ClientID(b)<<8 | 0xff_0000_0000 // no such client: generation and slot never used
	}
	return d.ids[int(b)%len(d.ids)]
}

// run performs the operations the bytes describe, comparing after each.
func (d *differ) run(r *opReader, maxOps int) {
	for n := 0; r.more() && n < maxOps; n++ {
		op := r.byte()
		switch op % 16 {
		case 0:
			if d.fast.Stats().Clients < 16 {
				d.add()
			}
		case 1:
			d.remove(d.pick(r))
		case 2:
			id := d.pick(r)
			var cats [lludp.NumCategories]float32
			for i := range cats {
				b := r.byte()
				cats[i] = throttleValues[b%16] * float32(1+b>>4)
			}
			d.throttleValues(id, cats)
		case 3:
			id := d.pick(r)
			n := []int{28, 28, 0, 4, 27, 29, 32, 12}[r.byte()%8]
			raw := make([]byte, 0, n)
			for len(raw)+4 <= n {
				b := r.byte()
				raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(throttleValues[b%16]*float32(1+b>>4)))
			}
			raw = append(raw, make([]byte, n-len(raw))...)
			d.throttleRaw(id, raw)
		case 4, 5, 6:
			id := d.pick(r)
			b := r.byte()
			ch := Channel(b % NumChannels)
			if b >= 250 {
				ch = Channel(NumChannels + b%3)
			}
			d.enqueue(id, ch, d.size(r), b%9 == 8)
		case 7:
			pkts := make([]Outgoing[int], 1+r.byte()%12)
			for k := range pkts {
				b := r.byte()
				pkts[k] = Outgoing[int]{Client: d.pick(r), Channel: Channel(b % (NumChannels + 1)), Size: d.size(r), Resend: b%13 == 0}
			}
			d.enqueueBatch(pkts)
		case 8, 9:
			d.next()
		case 10:
			d.nextBatch(int(r.byte() % 9))
		case 11, 12:
			b := r.byte()
			var step time.Duration
			rethrottle := ClientID(0)
			switch op >> 4 % 8 {
			case 0:
				step = time.Duration(b)
			case 1:
				step = time.Duration(b) * time.Microsecond
			case 2:
				step = time.Duration(b) * time.Duration(b) * time.Microsecond
			case 3:
				step = time.Duration(b) * 10 * time.Millisecond
			case 4:
				step = max(d.wait, 0)
			case 5:
				// To the exact refill of a waiting client, before the
				// waiting calendar's rounded-up wake-up, where a viewer's
				// new AgentThrottle may find it.
				ns := d.now.UnixNano()
				for h, c := range d.ref.clients {
					if c.live && c.state == refWaiting {
						step = time.Duration(c.bucket.firstPositive()-ns) + time.Duration(b%2)
						if b&4 != 0 {
							rethrottle = d.ids[h]
						}
						break
					}
				}
			case 6:
				ns := d.now.UnixNano()
				step = time.Duration((ns/waitingSlot+1)*waitingSlot-ns) + time.Duration(b%3) - 1
			case 7:
				step = -time.Duration(b) * time.Microsecond // time goes back
			}
			d.now = d.now.Add(step)
			d.logf("time %+v", step)
			if rethrottle != 0 {
				d.throttleValues(rethrottle, [lludp.NumCategories]float32{0, 0, 0, 0, throttleValues[b>>4], 0, 0})
			}
		case 13:
			// A sender's loop: send what may leave, sleep the wait.
			for range 1 + int(r.byte()) {
				if !d.next() {
					if d.wait == Idle {
						break
					}
					d.now = d.now.Add(d.wait)
				}
			}
		case 14:
			// A burst of traffic for one client, so that queues fill.
			id := d.pick(r)
			b := r.byte()
			for k := range int(b%32) + 1 {
				d.enqueue(id, Channel((int(b)+k)%NumChannels), d.size(r), false)
			}
		case 15:
			d.nextBatch(int(r.byte()))
		}
		d.compare()
		d.seen.operations++
	}
}

// runDifferential runs one input end to end: a configuration, the
// operations, then a drain of everything left.
func runDifferential(t testing.TB, data []byte) (seen differCoverage, ran bool) {
	r := &opReader{data: data}
	d, err := newDiffer(t, differConfig(r))
	if err != nil {
		return seen, false // configurations New refuses are TestConfigErrors' business
	}
	d.run(r, 5000)
	d.drain(200_000)
	d.compare()
	if st := d.fast.Stats(); st.EnqueuedBytes != st.SentBytes+st.DiscardedBytes {
		d.fail("drained, but %d bytes enqueued, %d sent, %d discarded", st.EnqueuedBytes, st.SentBytes, st.DiscardedBytes)
	}
	d.seen.discarded = int(d.ref.stats.DiscardedBytes)
	d.seen.categorySkips = d.ref.skipped
	return d.seen, true
}

// TestSchedulerMatchesReference runs seeded random operation sequences
// through the fast scheduler and the reference, and insists that they
// compared every kind of outcome: packets with a choice among clients,
// Avatar priority, waits for the scene and for a client, refusals at the
// queue limits and discards on removal.
func TestSchedulerMatchesReference(t *testing.T) {
	var total differCoverage
	runs := 0
	const seeds = 150
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 0x5eed))
		data := make([]byte, 200+rng.IntN(600))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		seen, ran := runDifferential(t, data)
		if !ran {
			continue
		}
		runs++
		total.operations += seen.operations
		total.packets += seen.packets
		total.choices += seen.choices
		total.sceneWaits += seen.sceneWaits
		total.clientWaits += seen.clientWaits
		total.idle += seen.idle
		total.refused += seen.refused
		total.discarded += seen.discarded
		total.priority += seen.priority
		total.farReady += seen.farReady
		total.farWaiting += seen.farWaiting
		total.categoryPackets += seen.categoryPackets
		total.categorySkips += seen.categorySkips
	}
	t.Logf("%d of %d configurations valid; compared %+v", runs, seeds, total)
	if runs < seeds/2 {
		t.Errorf("only %d of %d configurations valid", runs, seeds)
	}
	for name, n := range map[string]int{
		"operations": total.operations, "packets": total.packets, "choices among clients": total.choices, "scene waits": total.sceneWaits,
		"client waits": total.clientWaits, "idle": total.idle, "refusals": total.refused,
		"discards": total.discarded, "Avatar priority sends": total.priority,
		"ready clients beyond the horizon": total.farReady, "waiting clients beyond the horizon": total.farWaiting,
		"packets under ChannelBuckets": total.categoryPackets, "channels passed over for an empty category bucket": total.categorySkips,
	} {
		if n == 0 {
			t.Errorf("no %s compared: the sequences no longer exercise them", name)
		}
	}
}

// FuzzSchedulerReference is the differential test on inputs the fuzzer
// chooses: any difference from the reference beyond the freedom stated at
// the top of this file fails.
func FuzzSchedulerReference(f *testing.F) {
	for seed := range uint64(8) {
		rng := rand.New(rand.NewPCG(seed, 0xf022))
		data := make([]byte, 300)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		runDifferential(t, data)
	})
}

// departures follows Next's waits until nothing is queued and returns
// when each packet left, by payload.
func departures(t *testing.T, s *Scheduler[int], now time.Time) map[int]time.Time {
	t.Helper()
	left := map[int]time.Time{}
	for range 10_000 {
		it, wait, ok := s.Next(now)
		switch {
		case ok:
			left[it.Packet] = now
		case wait == Idle:
			return left
		default:
			now = now.Add(wait)
		}
	}
	t.Fatal("still sending after 10,000 calls")
	return nil
}

// TestClientChargedWhenPacketLeaves: a client's bucket is charged at the
// time its packet leaves. A client that waited its turn behind the scene
// cap with a full bucket has earned nothing beyond the burst meanwhile, so
// after a packet twice its burst it owes the difference. (Charged at the
// time it joined the queue instead, as the fast scheduler once did, the
// waiting time was credited against the debt, and the client's second
// packet left 37.5 ms early.)
func TestClientChargedWhenPacketLeaves(t *testing.T) {
	s, err := New[int](Config{SceneMax: 40_000, DefaultRates: [NumChannels]int64{2000, 2000, 2000, 2000, 2000}})
	if err != nil {
		t.Fatal(err)
	}
	a, b := s.AddClient(differEpoch), s.AddClient(differEpoch)
	// Rates 10,000 B/s, bursts 1,500 bytes (MinBurst); the scene's too.
	for _, p := range []struct {
		client ClientID
		packet int
	}{{a, 1}, {b, 2}, {b, 3}} {
		if err := s.Enqueue(p.client, Task, 3000, p.packet, false, differEpoch); err != nil {
			t.Fatal(err)
		}
	}
	left := departures(t, s, differEpoch)
	// a's packet takes the scene 1,500 bytes into debt (37.5 ms at 40,000
	// B/s); then b's first leaves and b owes 1,500 bytes: 150 ms at 10,000
	// B/s.
	if gap := left[3].Sub(left[2]); gap < 150*time.Millisecond || gap > 150*time.Millisecond+waitingSlot {
		t.Errorf("b's second packet left %v after its first, want 150 ms (rounded up to the waiting slot)", gap)
	}
}

// TestSceneBurstAtLargestConfig: at the largest scene cap and burst time
// the configuration allows, the scene bucket holds what a bucket can hold
// (1 GiB), not MinBurst. rate × BurstTime, 2^33 B/s × 10^10 ns, once
// overflowed int64 and left the scene a 1,500-byte bucket.
func TestSceneBurstAtLargestConfig(t *testing.T) {
	s, err := New[int](Config{SceneMax: 1 << 33, BurstTime: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := s.AddClient(differEpoch) // default rates: 66,750 B/s, a 667,500-byte burst
	const packets = 30            // within the queue's 256 KiB
	for p := range packets {
		if err := s.Enqueue(c, Texture, 8192, p, false, differEpoch); err != nil {
			t.Fatal(err)
		}
	}
	out := make([]Item[int], packets)
	if n, wait := s.NextBatch(out, differEpoch); n != packets {
		t.Errorf("%d of %d packets left at once, then a wait of %v", n, packets, wait)
	}
}

// TestRethrottleRejoinsAtVirtualTime: a waiting client whose bucket has
// refilled, re-throttled before the waiting calendar's rounded-up wake-up,
// rejoins at the current virtual time like a client the timer wakes. It
// once kept its old start tag, and the virtual time it then set let the
// next client to join send its whole burst, fifteen packets, before a
// client whose turn came first (the reference interleaves them).
func TestRethrottleRejoinsAtVirtualTime(t *testing.T) {
	d, err := newDiffer(t, Config{DefaultRates: [NumChannels]int64{500, 500, 500, 500, 500}})
	if err != nil {
		t.Fatal(err)
	}
	// Clients at 2,500 B/s with 1,500-byte buckets. c's big packet takes
	// its tags 3.3 virtual seconds ahead.
	a, c := d.add(), d.add()
	d.enqueue(c, Task, 8192, false)
	d.next()
	d.now = d.now.Add(3 * time.Second)
	// a's first packet puts it 1,500 bytes in debt, with one more queued:
	// a waits 600 ms, its finish tag 1.2 virtual seconds. c sends
	// meanwhile, taking the virtual time to its own start, 3.3 s.
	d.enqueue(a, Task, 3000, false)
	d.enqueue(a, Task, 100, false)
	d.next()
	d.enqueue(c, Task, 100, false)
	d.next()
	d.next()
	// At the nanosecond a's bucket turns positive, 131 µs at most before
	// its wake-up, a new throttle makes a ready at once.
	d.now = time.Unix(0, d.ref.clients[d.of[a]].bucket.firstPositive())
	d.throttleValues(a, [lludp.NumCategories]float32{0, 0, 0, 0, 32_000, 0, 0})
	d.next()
	// A client joining now starts at the virtual time a's packet set.
	e := d.add()
	for range 20 {
		d.enqueue(e, Task, 100, false)
		d.enqueue(c, Task, 100, false)
	}
	d.drain(1000)
}

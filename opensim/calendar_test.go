package opensim

import (
	"errors"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// calendarFixture is a scheduler whose clients serve as the calendar's
// list nodes, and a calendar of its own to test.
func calendarFixture(t *testing.T, n int) (*Scheduler[int], *calendar) {
	t.Helper()
	s, err := New[int](Config{})
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		s.AddClient(epoch)
	}
	return s, newCalendar(0)
}

// TestCalendarOrder: clients leave in slot order (in wrap-around
// arithmetic, across the end of the 64-bit range), first come first
// served within a slot that was within the horizon, whether they were in a slot or in the overflow
// heap, with some removed on the way.
func TestCalendarOrder(t *testing.T) {
	for _, base := range []uint64{0, 1 << 40, ^uint64(0) - 3*calendarSlots} {
		const n = 3000
		s, q := calendarFixture(t, n)
		q.base = base
		rng := rand.New(rand.NewPCG(5, uint64(base)))
		type pushed struct {
			slot  uint64
			order int
			far   bool // the overflow heap keeps no order among equal slots
		}
		want := map[uint32]pushed{}
		for i := range uint32(n) {
			// A third beyond the horizon; a few before base.
			off := uint64(rng.IntN(3 * calendarSlots))
			if rng.IntN(50) == 0 {
				off = -uint64(rng.IntN(100) + 1)
			}
			s.push(q, i, base+off)
			slot := base + off
			if int64(off) < 0 {
				slot = base
			}
			want[i] = pushed{slot, int(i), off >= calendarSlots && int64(off) > 0}
		}
		for i := range uint32(n) {
			if rng.IntN(10) == 0 {
				s.unlink(q, i)
				delete(want, i)
			}
		}
		var last pushed
		left := len(want)
		for k := range left {
			i, slot, ok := s.first(q)
			if !ok {
				t.Fatalf("base %#x: empty after %d of %d", base, k, left)
			}
			w, live := want[i]
			if !live {
				t.Fatalf("base %#x: removed client %d came back", base, i)
			}
			if slot != w.slot {
				t.Fatalf("base %#x: client %d in slot %#x, pushed to %#x", base, i, slot, w.slot)
			}
			if k > 0 && (less(w.slot, last.slot) || w.slot == last.slot && !w.far && w.order < last.order) {
				t.Fatalf("base %#x: client %d (slot %#x, #%d) after slot %#x, #%d", base, i, w.slot, w.order, last.slot, last.order)
			}
			last = w
			s.unlink(q, i)
			q.advance(slot)
			delete(want, i)
		}
		if _, _, ok := s.first(q); ok || q.n != 0 {
			t.Fatalf("base %#x: calendar not empty (n %d)", base, q.n)
		}
	}
}

// TestCalendarOverflowOnly: with nothing in the slots, first names the
// earliest overflow entry without moving base, which a waiting calendar
// must not move past the present.
func TestCalendarOverflowOnly(t *testing.T) {
	s, q := calendarFixture(t, 2)
	s.push(q, 0, 5*calendarSlots)
	s.push(q, 1, 3*calendarSlots)
	i, slot, ok := s.first(q)
	if !ok || i != 1 || slot != 3*calendarSlots || q.base != 0 {
		t.Fatalf("first: client %d slot %d ok %v base %d", i, slot, ok, q.base)
	}
	s.unlink(q, 1)
	q.advance(4*calendarSlots + 1) // brings slot 5·calendarSlots within the horizon
	if i, slot, ok := s.first(q); !ok || i != 0 || slot != 5*calendarSlots || q.n != 1 {
		t.Fatalf("after advance: client %d slot %d ok %v, %d in slots", i, slot, ok, q.n)
	}
}

// TestAdvanceExact: advance's multiply by the inverse matches the exact
// quotient size·2^32/weight to within one unit, across the whole range of
// sizes and weights the configuration allows.
func TestAdvanceExact(t *testing.T) {
	sizes := []int64{1, 2, 999, 1000, 1500, 8192, 1 << 16}
	weights := []int64{1, 2, 3, 500, 2500, 187_500, 640_000, 1_000_003, 1 << 33, 5 << 33}
	for _, size := range sizes {
		for _, w := range weights {
			got := advance(0, size, inverse(w))
			exact := new(big.Int).Lsh(big.NewInt(size), virtualShift)
			exact.Quo(exact, big.NewInt(w))
			diff := new(big.Int).Sub(exact, new(big.Int).SetUint64(got))
			if diff.Sign() < 0 || diff.Cmp(big.NewInt(1)) > 0 {
				t.Errorf("size %d weight %d: %d, exact %s", size, w, got, exact)
			}
		}
	}
}

// TestBatches: EnqueueBatch and NextBatch do what Enqueue and Next do one
// by one — the same packets in the same order, the same wait, the same
// errors and counters.
func TestBatches(t *testing.T) {
	build := func() (*Scheduler[int], []ClientID) {
		s, err := New[int](Config{QueuePackets: 6})
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]ClientID, 40)
		for i := range ids {
			ids[i] = s.AddClient(epoch)
			s.SetThrottleValues(ids[i], viewerSplit(float64(200+50*i)), epoch)
		}
		s.RemoveClient(ids[7], epoch)
		return s, ids
	}
	rng := rand.New(rand.NewPCG(8, 9))
	var pkts []Outgoing[int]
	for k := range 2000 {
		pkts = append(pkts, Outgoing[int]{Client: ClientID(rng.IntN(40)) | 1<<32, Channel: Channel(rng.IntN(NumChannels)), Size: 200 + rng.IntN(1300), Packet: k, Resend: rng.IntN(20) == 0})
	}
	pkts[3].Size, pkts[4].Channel = 0, NumChannels // bad ones among them

	one, _ := build()
	var wantErrs []error
	var want []Item[int]
	now := epoch
	for k := 0; k < len(pkts); k += 100 {
		for _, p := range pkts[k : k+100] {
			wantErrs = append(wantErrs, one.Enqueue(p.Client, p.Channel, p.Size, p.Packet, p.Resend, now))
		}
		for range 70 {
			it, _, ok := one.Next(now)
			if !ok {
				break
			}
			want = append(want, it)
		}
		now = now.Add(3 * time.Millisecond)
	}
	var wantWait time.Duration
	for {
		it, wait, ok := one.Next(now)
		if !ok {
			wantWait = wait
			break
		}
		want = append(want, it)
	}

	batch, _ := build()
	errs := make([]error, len(pkts))
	var got []Item[int]
	out := make([]Item[int], 70)
	queued := 0
	now = epoch
	for k := 0; k < len(pkts); k += 100 {
		queued += batch.EnqueueBatch(pkts[k:k+100], errs[k:k+100], now)
		n, _ := batch.NextBatch(out, now)
		got = append(got, out[:n]...)
		now = now.Add(3 * time.Millisecond)
	}
	var gotWait time.Duration
	for {
		n, wait := batch.NextBatch(out, now)
		got = append(got, out[:n]...)
		if n < len(out) {
			gotWait = wait
			break
		}
	}
	if gotWait != wantWait || gotWait <= 0 {
		t.Errorf("final NextBatch: wait %v; Next's wait %v", gotWait, wantWait)
	}
	if !slices.Equal(got, want) {
		t.Errorf("NextBatch sent %d packets, Next %d, or in another order", len(got), len(want))
	}
	wantQueued := 0
	for k := range errs {
		if !errors.Is(errs[k], wantErrs[k]) || (errs[k] == nil) != (wantErrs[k] == nil) {
			t.Fatalf("packet %d: error %v, Enqueue's %v", k, errs[k], wantErrs[k])
		}
		if wantErrs[k] == nil {
			wantQueued++
		}
	}
	if queued != wantQueued || batch.Stats() != one.Stats() {
		t.Errorf("queued %d, want %d; stats %+v, want %+v", queued, wantQueued, batch.Stats(), one.Stats())
	}
	if wantQueued == len(pkts) || wantQueued < len(pkts)/2 {
		t.Fatalf("%d of %d queued: the test should see both refusals and plenty queued", wantQueued, len(pkts))
	}
	// Without an error slice, and with nothing to do.
	if batch.EnqueueBatch(pkts[:10], nil, now) == 0 || batch.EnqueueBatch(nil, nil, now) != 0 {
		t.Error("EnqueueBatch without errs")
	}
}

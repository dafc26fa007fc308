package opensim

import (
	"encoding/binary"
	"math"
	"math/bits"
	"testing"
	"time"
)

// checkInvariants: no bucket holds more than its burst, and bytes are
// conserved.
func checkInvariants(t *testing.T, s *Scheduler[int]) {
	t.Helper()
	if s.scene.tokens > s.scene.burst {
		t.Fatalf("scene tokens %d above burst %d", s.scene.tokens, s.scene.burst)
	}
	var queued uint64
	for i := range s.clients {
		c := &s.clients[i]
		if !c.used {
			continue
		}
		if c.bucket.tokens > c.bucket.burst || c.avatar.tokens > c.avatar.burst {
			t.Fatalf("client %d: tokens %d/%d above burst %d/%d", i, c.bucket.tokens, c.avatar.tokens, c.bucket.burst, c.avatar.burst)
		}
		if s.cfg.ChannelBuckets {
			for k, b := range s.chb[i] {
				if k != int(Avatar) && (b.tokens > b.burst || b.burst > openSimMaxBurst*nanoPerByte && b.burst > s.cfg.MinBurst*nanoPerByte) {
					t.Fatalf("client %d category bucket %v: tokens %d, burst %d", i, Channel(k), b.tokens, b.burst)
				}
			}
		}
		var n uint32
		for ch := range c.queues {
			queued += uint64(c.queues[ch].bytes)
			n += c.queues[ch].n
			if (c.queues[ch].n > 0) != (c.backlog&(1<<ch) != 0) {
				t.Fatalf("client %d channel %d: %d queued, backlog bit %v", i, ch, c.queues[ch].n, c.backlog&(1<<ch) != 0)
			}
		}
		if n != uint32(c.queued) || (n > 0) != (c.state != stateIdle) {
			t.Fatalf("client %d: %d packets queued, counted %d, state %d", i, n, c.queued, c.state)
		}
	}
	checkCalendar(t, s, s.ready, stateReady)
	checkCalendar(t, s, s.waiting, stateWaiting)
	st := s.Stats()
	if st.EnqueuedBytes != st.SentBytes+st.DiscardedBytes+queued {
		t.Fatalf("bytes not conserved: enqueued %d, sent %d, discarded %d, queued %d", st.EnqueuedBytes, st.SentBytes, st.DiscardedBytes, queued)
	}
}

// checkCalendar walks every list the bitmap marks: each client on one is in
// state, in that slot, linked back to its neighbour, and listed once; the
// lists hold q.n clients; and every client in state is on a list or in the
// overflow heap — so a list the bitmap missed would show as a client on
// none.
func checkCalendar(t *testing.T, s *Scheduler[int], q *calendar, state uint8) {
	t.Helper()
	seen := make([]bool, len(s.clients))
	listed := 0
	for w, word := range q.words {
		if bit := q.summary[w>>6]&(1<<(w&63)) != 0; bit != (word != 0) {
			t.Fatalf("word %d: %x, summary bit %v", w, word, bit)
		}
		for ; word != 0; word &= word - 1 {
			idx := w<<6 + bits.TrailingZeros64(word)
			l := q.slots[idx]
			var prev uint32
			for i := l.head; i != 0; i = s.clients[i-1].next {
				c := &s.clients[i-1]
				if c.state != state || c.linked != linkedInSlot || c.slot != uint32(idx) || c.prev != prev || seen[i-1] {
					t.Fatalf("slot %d: client %d state %d linked %d slot %d prev %d (want %d)", idx, i-1, c.state, c.linked, c.slot, c.prev, prev)
				}
				seen[i-1] = true
				listed++
				prev = i
			}
			if prev == 0 || l.tail != prev {
				t.Fatalf("slot %d: marked, tail %d, last %d", idx, l.tail, prev)
			}
		}
	}
	if listed != q.n {
		t.Fatalf("%d clients on lists, n = %d", listed, q.n)
	}
	for _, h := range q.far.items {
		if c := &s.clients[h.client]; c.ticket == h.ticket && c.linked == linkedFar {
			seen[h.client] = true
		}
	}
	for i := range s.clients {
		c := &s.clients[i]
		if c.used && c.state == state && !seen[i] {
			t.Fatalf("client %d in state %d is in no list (linked %d)", i, state, c.linked)
		}
	}
}

// FuzzScheduler runs random operations — clients coming and going,
// hostile throttles, packets of any size, time that jumps and steps back —
// and checks the invariants after each; at the end it drains every queue:
// no backlogged channel starves.
func FuzzScheduler(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	f.Add([]byte{0, 0, 0, 2, 200, 2, 200, 2, 200, 3, 3, 3, 3, 3, 1, 3, 3})
	f.Fuzz(func(t *testing.T, ops []byte) {
		s, err := New[int](Config{SceneMax: 200_000, QueuePackets: 8, QueueBytes: 20000, AvatarPriority: len(ops)%2 == 0, ChannelBuckets: len(ops)/2%2 == 1})
		if err != nil {
			t.Fatal(err)
		}
		var ids []ClientID
		now := epoch
		next := func(i int) byte {
			if i < len(ops) {
				return ops[i]
			}
			return 0
		}
		for i := 0; i < len(ops); i += 3 {
			a, b := next(i+1), next(i+2)
			pick := func() ClientID {
				if len(ids) == 0 {
					return ClientID(a) // unknown
				}
				return ids[int(a)%len(ids)]
			}
			switch ops[i] % 7 {
			case 0:
				ids = append(ids, s.AddClient(now))
			case 1:
				s.RemoveClient(pick(), now)
			case 2:
				var raw []byte
				for k := range int(b%9) * 4 {
					raw = append(raw, next(i+k))
				}
				if b%5 == 0 {
					raw = binary.LittleEndian.AppendUint32(raw[:0], math.Float32bits(float32(math.NaN())))
				}
				s.SetThrottle(pick(), raw, now)
			case 3:
				s.Enqueue(pick(), Channel(b%6), int(a)*40+int(b), i, b%7 == 0, now)
			case 4:
				// A batch: packets for several clients, bad ones among them.
				batch := make([]Outgoing[int], b%5+1)
				for k := range batch {
					x := next(i + k)
					batch[k] = Outgoing[int]{Client: pick(), Channel: Channel(x % 6), Size: int(x)*30 + int(a), Packet: i, Resend: x%11 == 0}
					a++
				}
				s.EnqueueBatch(batch, nil, now)
			case 5:
				now = now.Add(time.Duration(a) * time.Duration(b) * time.Microsecond)
				if a%2 == 0 {
					s.NextBatch(make([]Item[int], b%6), now)
					break
				}
				for range 4 {
					if _, _, ok := s.Next(now); !ok {
						break
					}
				}
			case 6:
				now = now.Add(-time.Duration(a) * time.Millisecond)
				s.Next(now)
			}
			checkInvariants(t, s)
		}
		// Drain: following the waits, everything queued leaves.
		for range 100_000 {
			_, wait, ok := s.Next(now)
			if !ok {
				if wait == Idle {
					break
				}
				now = now.Add(wait)
			}
		}
		checkInvariants(t, s)
		for i := range s.clients {
			if c := &s.clients[i]; c.used && c.queued > 0 {
				t.Fatalf("client %d starves with %d packets queued", i, c.queued)
			}
		}
	})
}

package opensim

import (
	"encoding/binary"
	"math"
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
		n := 0
		for ch := range c.queues {
			queued += uint64(c.queues[ch].bytes)
			n += c.queues[ch].n
			if (c.queues[ch].n > 0) != (c.backlog&(1<<ch) != 0) {
				t.Fatalf("client %d channel %d: %d queued, backlog bit %v", i, ch, c.queues[ch].n, c.backlog&(1<<ch) != 0)
			}
		}
		if n != int(c.queued) || (n > 0) != (c.state != stateIdle) {
			t.Fatalf("client %d: %d packets queued, counted %d, state %d", i, n, c.queued, c.state)
		}
	}
	st := s.Stats()
	if st.EnqueuedBytes != st.SentBytes+st.DiscardedBytes+queued {
		t.Fatalf("bytes not conserved: enqueued %d, sent %d, discarded %d, queued %d", st.EnqueuedBytes, st.SentBytes, st.DiscardedBytes, queued)
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
		s, err := New[int](Config{SceneMax: 200_000, QueuePackets: 8, QueueBytes: 20000, AvatarPriority: len(ops)%2 == 0})
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
			case 3, 4:
				s.Enqueue(pick(), Channel(b%6), int(a)*40+int(b), i, b%7 == 0, now)
			case 5:
				now = now.Add(time.Duration(a) * time.Duration(b) * time.Microsecond)
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

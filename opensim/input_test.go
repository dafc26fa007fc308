package opensim

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
)

func throttleBlob(vals ...float32) []byte {
	var b []byte
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// TestBadThrottles: hostile AgentThrottle values are clamped to the
// channel limits and counted, never a panic, never a rate outside them.
func TestBadThrottles(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, tc := range []struct {
		name      string
		raw       []byte
		malformed bool
		invalid   int
	}{
		{"NaN everywhere", throttleBlob(nan, nan, nan, nan, nan, nan, nan), false, 7},
		{"infinities", throttleBlob(inf, -inf, inf, inf, inf, inf, inf), false, 7},
		{"negative", throttleBlob(-1, -1e9, -5, 0, 100000, 100000, 100000), false, 3},
		{"absurdly large", throttleBlob(3e38, 3e38, 3e38, 3e38, 3e38, 3e38, 3e38), false, 0},
		{"short block", throttleBlob(100000, 100000, 100000), true, 0},
		{"empty block", nil, true, 0},
		{"long block", append(throttleBlob(1e5, 1e5, 1e5, 1e5, 1e5, 1e5, 1e5), 1, 2, 3, 4, 5), true, 0},
		{"zeros", throttleBlob(0, 0, 0, 0, 0, 0, 0), false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := New[int](Config{})
			id := s.AddClient(epoch)
			rep, err := s.SetThrottle(id, tc.raw, epoch)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Malformed != tc.malformed || rep.Invalid != tc.invalid {
				t.Errorf("report %+v, want malformed %v invalid %d", rep, tc.malformed, tc.invalid)
			}
			rates, total, _ := s.Rates(id)
			cfg := s.Config()
			var sum int64
			for ch, r := range rates {
				if r < cfg.ChannelMin[ch] || r > cfg.ChannelMax[ch] {
					t.Errorf("%v: %d B/s outside [%d, %d]", Channel(ch), r, cfg.ChannelMin[ch], cfg.ChannelMax[ch])
				}
				sum += r
			}
			if total != sum || total > cfg.ClientMax+1 {
				t.Errorf("total %d (channels sum to %d), client max %d", total, sum, cfg.ClientMax)
			}
			st := s.Stats()
			if tc.malformed && st.ThrottleMalformed != 1 || uint64(tc.invalid) != st.ThrottleInvalid {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func TestUnknownClientsAndBadPackets(t *testing.T) {
	s, _ := New[int](Config{})
	id := s.AddClient(epoch)
	if !s.RemoveClient(id, epoch) || s.RemoveClient(id, epoch) {
		t.Fatal("a client removed twice")
	}
	if err := s.Enqueue(id, Task, 100, 1, false, epoch); !errors.Is(err, ErrUnknownClient) {
		t.Errorf("enqueue for a removed client: %v", err)
	}
	if _, err := s.SetThrottle(id, throttleBlob(1, 2, 3, 4, 5, 6, 7), epoch); !errors.Is(err, ErrUnknownClient) {
		t.Errorf("throttle for a removed client: %v", err)
	}
	again := s.AddClient(epoch) // reuses the slot, not the ID
	if again == id {
		t.Fatal("an ID was reused")
	}
	for _, tc := range []struct {
		ch   Channel
		size int
		err  error
	}{{Task, 0, ErrPacketSize}, {Task, 9000, ErrPacketSize}, {7, 100, ErrChannel}} {
		if err := s.Enqueue(again, tc.ch, tc.size, 1, false, epoch); !errors.Is(err, tc.err) {
			t.Errorf("channel %d size %d: %v, want %v", tc.ch, tc.size, err, tc.err)
		}
	}
	if st := s.Stats(); st.UnknownClient != 3 || st.BadPackets != 3 {
		t.Errorf("stats %+v", st)
	}
}

// TestPacketLargerThanBurst: a packet bigger than the bucket leaves from a
// full bucket, the tokens go negative, and the client then waits exactly as
// long as its rate needs to pay the debt.
func TestPacketLargerThanBurst(t *testing.T) {
	s, _ := New[int](Config{ChannelMin: [NumChannels]int64{100, 100, 100, 100, 100}, MinBurst: 100})
	id := s.AddClient(epoch)
	s.SetThrottleValues(id, [lludp.NumCategories]float32{0, 0, 0, 0, 8 * 1000, 0, 0}, epoch) // Task 1000 B/s: Avatar 800, Task 200
	rates, total, _ := s.Rates(id)
	s.Enqueue(id, Task, 4000, 1, false, epoch)
	s.Enqueue(id, Task, 4000, 2, false, epoch)
	if _, _, ok := s.Next(epoch); !ok {
		t.Fatal("a full bucket must let a packet larger than itself leave")
	}
	_, wait, ok := s.Next(epoch)
	// The bucket held one burst (MinBurst 100 B, or 10 ms of rate) and paid
	// 4000 B: the debt is about 3900 B at the client's total rate.
	want := time.Duration(float64(4000-max(100, total/100)) / float64(total) * float64(time.Second))
	if ok || math.Abs(float64(wait-want)) > float64(time.Millisecond) {
		t.Errorf("wait %v, want about %v (rates %v, total %d)", wait, want, rates, total)
	}
	if _, _, ok := s.Next(epoch.Add(wait)); !ok {
		t.Error("the second packet does not leave once the debt is paid")
	}
}

// TestTimeBackwards: a clock step back is held still and counted; no
// tokens are lost or invented, and the wait still counts from the time
// given, so a caller that adds it reaches the moment a packet may leave.
func TestTimeBackwards(t *testing.T) {
	s, _ := New[int](Config{})
	id := s.AddClient(epoch)
	for i := range 100 {
		s.Enqueue(id, Texture, 1000, i, false, epoch)
	}
	n := 0
	for {
		if _, _, ok := s.Next(epoch); !ok {
			break
		}
		n++
	}
	_, waitBefore, _ := s.Next(epoch)
	_, waitAfter, ok := s.Next(epoch.Add(-time.Hour))
	if ok || waitAfter != waitBefore+time.Hour || s.Stats().TimeBackwards != 1 {
		t.Errorf("after a step back: ok %v, wait %v (was %v), counted %d", ok, waitAfter, waitBefore, s.Stats().TimeBackwards)
	}
	if _, _, ok := s.Next(epoch.Add(-time.Hour + waitAfter)); !ok {
		t.Error("no packet at the time the wait named")
	}
}

// TestQueueLimits: new packets beyond a channel's limit are dropped and
// counted; resends are never refused and go to the head.
func TestQueueLimits(t *testing.T) {
	s, _ := New[int](Config{QueuePackets: 3, QueueBytes: 10000})
	id := s.AddClient(epoch)
	for i := range 5 {
		err := s.Enqueue(id, Asset, 1000, i, false, epoch)
		if (i < 3) != (err == nil) {
			t.Errorf("packet %d: %v", i, err)
		}
	}
	if err := s.Enqueue(id, Asset, 1000, 99, true, epoch); err != nil {
		t.Errorf("a resend was refused: %v", err)
	}
	it, _, ok := s.Next(epoch)
	if !ok || it.Packet != 99 || !it.Resend {
		t.Errorf("first out %+v, want the resend", it)
	}
	st, queued, _ := s.ClientStats(id)
	cs := st.Channels[Asset]
	if cs.RefusedPackets != 2 || cs.RefusedBytes != 2000 || cs.Resends != 1 || queued[Asset] != 3000 {
		t.Errorf("stats %+v queued %v", cs, queued)
	}
	s.RemoveClient(id, epoch)
	if got := s.Stats(); got.DiscardedBytes != 3000 || got.RefusedBytes != 2000 || got.EnqueuedBytes != got.SentBytes+got.DiscardedBytes {
		t.Errorf("stats after removal %+v", got)
	}
}

// TestNothingQueued: an empty scheduler is Idle.
func TestNothingQueued(t *testing.T) {
	s, _ := New[int](Config{})
	s.AddClient(epoch)
	if _, wait, ok := s.Next(epoch); ok || wait != Idle {
		t.Errorf("got ok %v wait %v, want Idle", ok, wait)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{SceneMax: -1}, {ClientMax: 1 << 40}, {AvatarShare: 1.5}, {AvatarShare: math.NaN()},
		{BurstTime: time.Nanosecond}, {MaxPacket: 70000}, {QueueBytes: 100},
		{ChannelMin: [NumChannels]int64{10}, ChannelMax: [NumChannels]int64{5}},
	} {
		if _, err := New[int](cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v, want ErrConfig", cfg, err)
		}
	}
}

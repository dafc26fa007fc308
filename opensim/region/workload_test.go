package region

import (
	"math"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim"
)

// workloadRig is a region whose loop the test drives on virtual time: one
// client that completed the handshake, the region's producers called
// every tick as Run calls them, and whatever the scheduler lets leave
// taken out (not sent: the bytes are what is counted).
type workloadRig struct {
	t      *testing.T
	s      *Server
	c      *client
	now    time.Time
	sent   int64 // bytes the scheduler let leave
	byChan [opensim.NumChannels]int64
}

func newWorkloadRig(t *testing.T, cfg Config, throttleBPS float32) *workloadRig {
	t.Helper()
	cfg.Listen = netip.MustParseAddrPort("127.0.0.1:0")
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.conn.Close() })
	now := time.Unix(1_800_000_000, 0)
	addr := netip.MustParseAddrPort("127.0.0.1:1")
	c := &client{addr: addr, moved: true, opened: now, lastRecv: now, unacked: map[uint32]*outPacket{}, archive: map[uint32]struct{}{}}
	c.id = s.sched.AddClient(now)
	s.clients[addr], s.byID[c.id] = c, c
	if throttleBPS > 0 {
		if _, err := s.sched.SetThrottleValues(c.id, lludp.ViewerSplit(float64(throttleBPS)), now); err != nil {
			t.Fatal(err)
		}
	}
	return &workloadRig{t: t, s: s, c: c, now: now}
}

// run advances d in ticks of the region's loop.
func (r *workloadRig) run(d time.Duration) {
	var out [64]opensim.Item[*outPacket]
	for end := r.now.Add(d); r.now.Before(end); r.now = r.now.Add(tick) {
		r.s.produce(r.now)
		for {
			n, _ := r.s.sched.NextBatch(out[:], r.now)
			for _, it := range out[:n] {
				r.sent += int64(it.Size)
				r.byChan[it.Channel] += int64(it.Size)
				if it.Packet.fresh {
					r.c.queued[it.Channel]--
				}
			}
			if n < len(out) {
				break
			}
		}
	}
}

// offered is every byte the producers offered: queued or refused.
func (r *workloadRig) offered() int64 {
	st := r.s.sched.Stats()
	return int64(st.EnqueuedBytes + st.RefusedBytes)
}

// TestWorkloadDemand: over a minute of the region's loop, each workload
// offers its stated Demand (plus its arrival burst), within 1 %, and at a
// throttle above it all of it leaves, on the workload's channel only; at
// a throttle far below it the workload offers the same bytes (it is
// application-limited: the throttle decides what leaves, not what is
// offered), refusing what the queue cannot hold.
func TestWorkloadDemand(t *testing.T) {
	const run = 60 * time.Second
	for _, tc := range []struct {
		a       Activity
		avatars int
		channel opensim.Channel
	}{
		{Terrain, 0, opensim.Layer},
		{Objects, 0, opensim.Task},
		{Avatars, 0, opensim.Avatar},
		{Avatars, 40, opensim.Avatar},
		{Textures, 0, opensim.Texture},
	} {
		name := tc.a.String()
		if tc.avatars > 0 {
			name += "/40"
		}
		t.Run(name, func(t *testing.T) {
			demand := Demand(tc.a, tc.avatars)
			want := float64(demand)*run.Seconds() + float64(ArrivalBytes(tc.a))
			for _, throttle := range []float32{40e6, 100_000} {
				r := newWorkloadRig(t, Config{Activity: tc.a, Avatars: tc.avatars,
					Scheduler: opensim.Config{ClientMax: 4_000_000, ChannelMax: [opensim.NumChannels]int64{4e6, 4e6, 4e6, 4e6, 4e6}}}, throttle)
				r.run(run)
				if got := float64(r.offered()); math.Abs(got/want-1) > 0.01 {
					t.Errorf("throttle %.0f bit/s: offered %.0f bytes in %v, want %.0f (Demand %d B/s + %d on arrival)", throttle, got, run, want, demand, ArrivalBytes(tc.a))
				}
				if throttle < 1e6 {
					if demand > int64(throttle/8) && r.sent >= r.offered()*9/10 {
						t.Errorf("throttle %.0f bit/s: %d of %d bytes left: the throttle should bind", throttle, r.sent, r.offered())
					}
					continue
				}
				if got := float64(r.sent); got < want*0.99 {
					t.Errorf("throttle %.0f bit/s: %.0f bytes left, want all %.0f offered", throttle, got, want)
				}
				if r.byChan[tc.channel] != r.sent {
					t.Errorf("bytes by channel %v, want all on %v", r.byChan, tc.channel)
				}
			}
		})
	}
}

// TestDemandStated: the demands --help and docs/opensim.md state, and the
// idle and load-model activities' sums.
func TestDemandStated(t *testing.T) {
	for _, tc := range []struct {
		a       Activity
		avatars int
		want    int64
	}{
		{Idle, 0, 0},
		{Standing, 0, 4_000},
		{Walking, 0, 118_000},
		{Terrain, 0, int64(8 * workloads[Terrain].wireSize())},
		{Objects, 0, int64(2 * workloads[Objects].wireSize())},
		{Avatars, 0, int64(100 * workloads[Avatars].wireSize())},
		{Avatars, 3, int64(30 * workloads[Avatars].wireSize())},
		{Textures, 0, int64(200 * workloads[Textures].wireSize())},
	} {
		if got := Demand(tc.a, tc.avatars); got != tc.want {
			t.Errorf("Demand(%v, %d) = %d B/s, want %d", tc.a, tc.avatars, got, tc.want)
		}
	}
	help := ActivityHelp()
	for _, name := range activityNames {
		if !strings.Contains(help, name) {
			t.Errorf("ActivityHelp lacks %s:\n%s", name, help)
		}
	}
	t.Logf("\n%s", help)
}

// TestWorkloadRestartsOnSetActivity: switching activity starts the
// workload anew, arrival burst included.
func TestWorkloadRestartsOnSetActivity(t *testing.T) {
	r := newWorkloadRig(t, Config{Activity: Idle}, 40e6)
	r.run(time.Second)
	if r.offered() != 0 {
		t.Fatalf("idle offered %d bytes", r.offered())
	}
	r.s.SetActivity(Objects)
	r.run(10 * time.Millisecond)
	if got, want := r.offered(), ArrivalBytes(Objects)+int64(workloads[Objects].wireSize()); got != want {
		t.Errorf("after SetActivity(objects): offered %d bytes, want the arrival burst and one update, %d", got, want)
	}
	r.s.SetActivity(Activity(200)) // out of range: ignored
	if r.s.cfg.Activity != Objects {
		t.Errorf("SetActivity(200) changed the activity to %v", r.s.cfg.Activity)
	}
}

// TestBadAvatars: the region refuses a negative or huge Avatars, and an
// activity out of range, with an error.
func TestBadAvatars(t *testing.T) {
	for _, cfg := range []Config{{Avatars: -1}, {Avatars: maxAvatars + 1}, {Activity: Activity(200)}} {
		cfg.Listen = netip.MustParseAddrPort("127.0.0.1:0")
		if s, err := New(cfg, nil); err == nil {
			s.conn.Close()
			t.Errorf("New(%+v): no error", cfg)
		}
	}
}

// TestAckStall: Config.AckStall sets how many unacked reliable packets
// stop the producers (0: OpenSim's 50; negative: never), for the
// workloads and for the saturating activities alike.
func TestAckStall(t *testing.T) {
	for _, tc := range []struct {
		name     string
		activity Activity
		stall    int
		unacked  uint32
		fed      bool
	}{
		{"opensim's 50, at 50", Textures, 0, 50, true},
		{"opensim's 50, past it", Textures, 0, 51, false},
		{"opensim's 50, flying, past it", Flying, 0, 51, false},
		{"none, past 50", Textures, -1, 51, true},
		{"none, flying, far past 50", Flying, -1, 1000, true},
		{"100, past 50", Textures, 100, 51, true},
		{"100, past it", Textures, 100, 101, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newWorkloadRig(t, Config{Activity: tc.activity, AckStall: tc.stall}, 40e6)
			for seq := range tc.unacked {
				r.c.unacked[seq+1] = &outPacket{}
			}
			r.run(time.Second)
			if fed := r.offered() > 0; fed != tc.fed {
				t.Errorf("AckStall %d, %d unacked: offered %d bytes in 1 s, want fed %v", tc.stall, tc.unacked, r.offered(), tc.fed)
			}
		})
	}
}

// TestWorkloadAfterStall: while a client has more than AckStall packets
// unacked, its workload waits (OpenSim's stall); when the stall ends, what
// fell due is offered, but no more than a queue holds is built: the rest
// is counted as refused, so the bytes offered still add up to the demand.
func TestWorkloadAfterStall(t *testing.T) {
	r := newWorkloadRig(t, Config{Activity: Textures}, 40e6)
	for seq := range uint32(DefaultAckStall + 1) {
		r.c.unacked[seq+1] = &outPacket{}
	}
	r.run(10 * time.Second)
	if r.offered() != 0 {
		t.Fatalf("stalled, yet offered %d bytes", r.offered())
	}
	clear(r.c.unacked)
	r.run(10 * time.Millisecond)
	w := workloads[Textures]
	limit := int64(r.s.sched.Config().QueuePackets) * int64(w.wireSize())
	if got := r.offered(); got > limit {
		t.Errorf("after the stall %d bytes built, more than the queue's %d", got, limit)
	}
	total := float64(r.offered()) + float64(r.c.workSkipped)
	if want := float64(w.due(10*time.Second, 0) * int64(w.wireSize())); math.Abs(total/want-1) > 0.01 {
		t.Errorf("offered %d and skipped %d bytes, want %.0f due in all", r.offered(), r.c.workSkipped, want)
	}
}

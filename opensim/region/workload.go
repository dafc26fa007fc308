package region

import (
	"fmt"
	"strings"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim"
)

// A workload is an application-limited activity: packets of one message on
// one channel, some at once when the client arrives (its circuit completes
// the handshake) and then a burst every period, the first at arrival. It
// is offered whatever the throttle: a region has only so much to say. The
// scheduler's queue (opensim.Config.QueueBytes, QueuePackets) bounds what
// waits; beyond it packets are refused, counted in ClientInfo.Refused.
type workload struct {
	channel   opensim.Channel
	size      int           // target payload bytes (message number and body), as message builds it
	arrival   int           // packets at arrival
	burst     int           // packets each period; for Avatars, per avatar
	period    time.Duration // between bursts
	perAvatar bool
}

// workloads are the application-limited activities, with their sources
// (OpenSim 0.9.2.2 unless said otherwise):
//
//   - Terrain: an edit every 2 s (a user terraforming) whose modified
//     patches go out as 16 LayerData of about 1,000 bytes. OpenSim checks
//     the terrain for edits every 4th frame, 0.36 s (Scene.cs:1710-1713,
//     FrameTime 0.0908 s at :830), and sends each tainted patch to every
//     client (TerrainModule.cs:884-912): a burst, then nothing.
//   - Objects: a scene of 200 ObjectUpdates of 1,200 bytes (240 kB, held
//     by the scheduler's default 256 KiB queue) when the avatar arrives,
//     then one update every 500 ms as objects change: a burst, then a
//     trickle. OpenSim sends entity updates as the Task bucket drains
//     (LLClientView.cs:5800-5812, HandleQueueEmpty); the arrival burst
//     queues here instead of in its entity update list.
//   - Avatars: Config.Avatars avatars (default 10) moving, each an
//     ImprovedTerseObjectUpdate of about 80 bytes at 10 Hz, about
//     OpenSim's frame rate (FrameTime 0.0908 s, Scene.cs:830).
//   - Textures: 20 ImagePackets of 1,000 bytes of image data every 100 ms,
//     as an old viewer fetching textures over UDP takes them:
//     IMAGE_PACKET_SIZE (J2KImage.cs:45), TextureSendLimit packets a turn
//     (default 20, LLUDPServer.cs:416, used at LLClientView.cs:5814). At
//     about 200 kB/s it is above the Texture rate of the classic
//     1,500 kbps request (69 kB/s), so it saturates the Texture channel.
var workloads = map[Activity]workload{
	Terrain:  {channel: opensim.Layer, size: 1000, burst: 16, period: 2 * time.Second},
	Objects:  {channel: opensim.Task, size: 1200, arrival: 200, burst: 1, period: 500 * time.Millisecond},
	Avatars:  {channel: opensim.Avatar, size: 80, burst: 1, period: 100 * time.Millisecond, perAvatar: true},
	Textures: {channel: opensim.Texture, size: 1000, burst: 20, period: 100 * time.Millisecond},
}

// DefaultAvatars is the number of moving avatars of the Avatars workload.
const DefaultAvatars = 10

// maxAvatars bounds Config.Avatars: 10,000 terse updates of 80 bytes at
// 10 Hz are 8 MB/s, more than any client may receive.
const maxAvatars = 10_000

// due is how many packets the workload has offered by elapsed since the
// client arrived: the arrival packets and a burst at 0, period, 2·period…
// up to elapsed.
func (w workload) due(elapsed time.Duration, avatars int) int64 {
	if elapsed < 0 {
		return 0
	}
	burst := int64(w.burst)
	if w.perAvatar {
		burst *= int64(avatars)
	}
	return int64(w.arrival) + (int64(elapsed/w.period)+1)*burst
}

// wireSize is the bytes of one of the workload's datagrams on the wire
// (LLUDP header included, zero-coded where the message is, no appended
// acks), as the viewer and a capture count them.
func (w workload) wireSize() int {
	payload, flags, err := message(w.channel, w.size, 1, nil)
	if err != nil {
		panic("region: building a workload's message: " + err.Error()) // a bug: the messages are fixed
	}
	return len(lludp.AppendPacket(nil, lludp.Header{Flags: flags, Sequence: 1}, payload, nil))
}

// Demand is the mean the activity offers one client, in bytes/s on the
// wire, with avatars moving for Avatars (0: DefaultAvatars): for a
// workload, its periodic part (the Objects arrival burst, ArrivalBytes,
// comes on top once); for the load models, the sum of their channels'
// offered rates, which they reach only where the throttle allows. Divided
// by one TCP-fair share it says how far a workload is application-limited.
func Demand(a Activity, avatars int) int64 {
	if avatars <= 0 {
		avatars = DefaultAvatars
	}
	if w, ok := workloads[a]; ok {
		burst := int64(w.burst)
		if w.perAvatar {
			burst *= int64(avatars)
		}
		return burst * int64(w.wireSize()) * int64(time.Second) / int64(w.period)
	}
	var sum int64
	if int(a) < len(loads) {
		for _, l := range loads[a] {
			sum += l.Rate
		}
	}
	return sum
}

// ArrivalBytes is what a workload offers at once when a client arrives,
// on the wire (Objects: its scene; the others none).
func ArrivalBytes(a Activity) int64 {
	w, ok := workloads[a]
	if !ok {
		return 0
	}
	return int64(w.arrival) * int64(w.wireSize())
}

// ActivityHelp describes every activity with its demand, for --help.
func ActivityHelp() string {
	var b strings.Builder
	for i := range activityNames {
		a := Activity(i)
		fmt.Fprintf(&b, "  %-9s %7d B/s", a, Demand(a, 0))
		if n := ArrivalBytes(a); n > 0 {
			fmt.Fprintf(&b, " + %d B on arrival", n)
		}
		if _, ok := workloads[a]; ok {
			b.WriteString(" (application-limited")
			if workloads[a].perAvatar {
				fmt.Fprintf(&b, "; %d avatars, --avatars", DefaultAvatars)
			}
			b.WriteString(")")
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// produceWorkload offers each client what the workload has due by now,
// counted from its arrival (or from the last SetActivity). The producers'
// stall past Config.AckStall unacked packets applies here too, as
// OpenSim's 50-unacked stall does to everything it sends but resends
// (protocol.md §8.5); what falls due meanwhile is offered when it ends.
func (s *Server) produceWorkload(w workload, now time.Time) {
	var buf []byte
	queueLimit := s.sched.Config().QueuePackets
	for _, c := range s.clients {
		if !c.moved {
			continue
		}
		if c.workFrom.IsZero() {
			c.workFrom, c.workMade = now, 0
		}
		if s.stalled(c) {
			continue
		}
		due := w.due(now.Sub(c.workFrom), s.cfg.Avatars)
		if behind := due - c.workMade; behind > int64(queueLimit) {
			// After a long stall, more than the queue holds: what it could
			// not hold is refused unbuilt, and counted as refused.
			skip := behind - int64(queueLimit)
			c.workMade += skip
			c.workSkipped += uint64(skip) * uint64(w.wireSize())
		}
		for ; c.workMade < due; c.workMade++ {
			c.counter++
			payload, flags, err := message(w.channel, w.size, c.counter, buf)
			if err != nil {
				s.log.Error("build traffic", "err", err)
				return
			}
			p := &outPacket{payload: payload, flags: flags, channel: w.channel, fresh: true}
			// Charged at its size on the wire, zero-coding done, as
			// OpenSim's buckets charge the encoded buffer; Demand
			// counts the same bytes.
			s.scratch = lludp.AppendPacket(s.scratch[:0], lludp.Header{Flags: flags}, payload, nil)
			if s.sched.Enqueue(c.id, p.channel, len(s.scratch), p, false, now) == nil {
				c.queued[w.channel]++
			}
		}
	}
}

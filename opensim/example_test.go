package opensim_test

import (
	"fmt"
	"time"

	"github.com/fairgrid/fairgrid/lludp"
	"github.com/fairgrid/fairgrid/opensim"
)

// A server's use of the scheduler: a client joins, asks for the classic
// viewer's 1,500 kbit/s, and has texture data and an avatar update queued;
// the send loop takes whatever may leave, sleeping for the wait it is
// given. The avatar update, queued last, leaves first: the channels start
// level, and a tie goes to the channel listed first, Avatar. The last texture
// packet waits for the client's bucket: it started with the 1,500 bytes a
// new client may burst, and the packet before took it 1,020 bytes into
// debt, 5.3 ms at the new rate (rounded up to the waiting calendar's
// 131 µs slots).
func Example() {
	sched, err := opensim.New[string](opensim.Config{})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	viewer := sched.AddClient(now)
	// AgentThrottle's seven values in bits/s: Resend, Land, Wind, Cloud,
	// Task, Texture, Asset.
	sched.SetThrottleValues(viewer, [lludp.NumCategories]float32{153600, 133120, 26624, 26624, 495616, 495616, 204800}, now)
	for i := range 3 {
		sched.Enqueue(viewer, opensim.Texture, 1200, fmt.Sprintf("ImageData %d", i), false, now)
	}
	sched.Enqueue(viewer, opensim.Avatar, 120, "ImprovedTerseObjectUpdate", false, now)

	start := now
	out := make([]opensim.Item[string], 64)
	for {
		n, wait := sched.NextBatch(out, now)
		for _, it := range out[:n] {
			fmt.Printf("%-10v %-8v %s\n", now.Sub(start), it.Channel, it.Packet)
		}
		if wait == opensim.Idle {
			break
		}
		now = now.Add(wait) // a server sleeps until then, or until more is queued
	}
	// Output:
	// 0s         Avatar   ImprovedTerseObjectUpdate
	// 0s         Texture  ImageData 0
	// 0s         Texture  ImageData 1
	// 5.341184ms Texture  ImageData 2
}

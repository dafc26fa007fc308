package link

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// WriteStats writes what a relay forwarded and dropped each way: a line
// per direction, or with asJSON one object {"down":…,"up":…}.
func WriteStats(w io.Writer, asJSON bool, down, up PipeStats) error {
	type dir struct {
		Forwarded       uint64  `json:"forwarded"`
		DroppedRandom   uint64  `json:"dropped_random"`
		DroppedQueue    uint64  `json:"dropped_queue"`
		QueueDelayMsAvg float64 `json:"queue_delay_ms_mean"`
	}
	conv := func(p PipeStats) dir {
		return dir{p.Forwarded, p.DroppedRandom, p.DroppedQueue, float64(p.QueueDelayMean()) / float64(time.Millisecond)}
	}
	out := struct {
		Down dir `json:"down"`
		Up   dir `json:"up"`
	}{conv(down), conv(up)}
	if asJSON {
		return json.NewEncoder(w).Encode(out)
	}
	for _, d := range []struct {
		name string
		dir
	}{{"down (sim → viewer)", out.Down}, {"up (viewer → sim)", out.Up}} {
		if _, err := fmt.Fprintf(w, "%-20s forwarded %d, dropped %d random + %d queue, mean queueing delay %.2f ms\n",
			d.name, d.Forwarded, d.DroppedRandom, d.DroppedQueue, d.QueueDelayMsAvg); err != nil {
			return err
		}
	}
	return nil
}

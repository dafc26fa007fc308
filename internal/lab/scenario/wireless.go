package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/internal/lab/tcpflow"
	"github.com/fairgrid/fairgrid/ratecalc"
)

// The access points' buffers as the QoS-TCP study measured them (issue
// #14 quoting it; the paper not read), in packets.
var wirelessBufferSizes = []int{37, 90, 135, 256, 266}

const (
	wirelessRate   = 6_000_000 / 8 // bytes/s: an 802.11g cell's useful rate
	wirelessDelay  = 10 * time.Millisecond
	wirelessFlows  = 3
	wirelessSource = "QoS-TCP study (issue #14 quoting it): AP buffers 37–266 packets, a QoS-TCP holding its target bandwidth"
)

// wirelessFloor is the viewer's guaranteed rate in the QoS runs: enough
// for an avatar in a busy region (congestion.md's flying load is around
// 1 Mbit/s at full throttle), well under the cell's share of four flows.
var wirelessFloor = ratecalc.RateFromBits(512_000)

func wirelessBuffers() Scenario {
	return Scenario{Name: "wireless-buffers", DefaultDuration: 30 * time.Second,
		Summary: "access-point buffers of 37, 90, 135, 256 and 266 packets; three CUBIC downloads and a viewer under window tracking, with a 512 kbit/s QoS floor and without",
		Run:     runWireless}
}

const wirelessWarmup = 10 * time.Second

func wirelessJobs(o Options, dur time.Duration, buffers []int, floors []ratecalc.Rate) []job {
	var jobs []job
	for _, buffer := range buffers {
		for _, floor := range floors {
			pc := link.PipeConfig{Rate: wirelessRate, Delay: wirelessDelay, Buffer: buffer}
			var flows []tcpflow.FlowConfig
			for i := range wirelessFlows {
				flows = append(flows, tcpflow.FlowConfig{Name: fmt.Sprintf("cubic download %d", i), CC: tcpflow.CUBIC, Dir: tcpflow.Download, Start: time.Duration(i) * 200 * time.Millisecond})
			}
			jobs = append(jobs, job{name: fmt.Sprintf("wireless buffer=%d floor=%.0fk", buffer, floor.BitsPerSecond()/1000),
				cfg: RigConfig{Up: pc, Down: pc, Seed: o.Seed, Warmup: wirelessWarmup, Duration: dur, TCP: flows,
					Viewer: &RigViewer{Mode: Window, Floor: floor}}})
		}
	}
	return jobs
}

func runWireless(ctx context.Context, o Options) (Result, error) {
	o = o.withDefaults()
	start := time.Now()
	dur := o.Duration
	if dur == 0 {
		dur = 30 * time.Second
	}
	jobs := wirelessJobs(o, dur, wirelessBufferSizes, []ratecalc.Rate{wirelessFloor, 0})
	runs, err := runAll(ctx, o, jobs)
	if err != nil {
		return Result{}, err
	}
	res := wirelessResult(jobs, runs)
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

func wirelessResult(jobs []job, runs []RunResult) Result {
	res := Result{Scenario: "wireless-buffers", Runs: runs}
	t := Table{Title: "wireless-buffers: a viewer (window tracking) beside three CUBIC downloads, 6 Mbit/s, 10 ms one way",
		Columns: []string{"buffer", "QoS floor kbit/s", "viewer kbit/s", "viewer/floor", "delay mean/p95 ms", "TCP kbit/s each", "Jain (all four)"},
		Notes: []string{"floor: fairgrid's Floor, a guaranteed minimum under every request (as QoS-TCP holds a target bandwidth); 0: none.",
			"published: " + wirelessSource + "."}}
	for i, r := range runs {
		m := r.Measurement
		v := m.Viewer
		floor := jobs[i].cfg.Viewer.Floor.BitsPerSecond()
		xs := []float64{v.Down.ThroughputBPS}
		each := ""
		for k, f := range m.TCP {
			xs = append(xs, f.Data.ThroughputBPS)
			if k > 0 {
				each += " / "
			}
			each += kbit(f.GoodputBPS)
		}
		share := "-"
		if floor > 0 {
			share = fmt.Sprintf("%.2f", v.Down.ThroughputBPS/floor)
			res.Comparisons = append(res.Comparisons, Comparison{Scenario: "wireless-buffers",
				Metric: fmt.Sprintf("viewer / its QoS floor, buffer %d", jobs[i].cfg.Down.Buffer), Unit: "×",
				Published: 1, Measured: v.Down.ThroughputBPS / floor, Source: wirelessSource})
		}
		t.Rows = append(t.Rows, []string{fmt.Sprint(jobs[i].cfg.Down.Buffer), fmt.Sprintf("%.0f", floor/1000), kbit(v.Down.ThroughputBPS), share,
			fmt.Sprintf("%.0f / %.0f", v.Down.QueueDelayMeanMs, v.Down.QueueDelayP95Ms), each, fmt.Sprintf("%.2f", Jain(xs...))})
	}
	res.Tables = append(res.Tables, t)
	return res
}

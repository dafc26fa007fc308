package scenario

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/kerneltcp"
	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/internal/lab/tcpflow"
)

// The seed study's home access link (issue #14, quoting it: NS2, ADSL):
// 512 kbit/s up, 6 Mbit/s down, 80 ms one way, buffers of 20 and 200
// packets.
const (
	adslUp      = 512_000 / 8   // bytes/s
	adslDown    = 6_000_000 / 8 // bytes/s
	adslDelay   = 80 * time.Millisecond
	seedSmall   = 20
	seedLarge   = 200
	seedSource  = "seed study (issue #14): NS2, ADSL 512k/6M, 80 ms, 200-packet buffers"
	seedDelayMs = 300 // "nearly 300 ms" added to the game flow by loss-based TCP at 200 packets
)

func adsl(buffer int) (up, down link.PipeConfig) {
	return link.PipeConfig{Rate: adslUp, Delay: adslDelay, Buffer: buffer},
		link.PipeConfig{Rate: adslDown, Delay: adslDelay, Buffer: buffer}
}

func coexistence() Scenario {
	return Scenario{Name: "coexistence", DefaultDuration: 30 * time.Second,
		Summary: "a viewer (stock, window tracking, TFRC) beside a bulk TCP upload and download on a 512k/6M ADSL link, 20 and 200-packet buffers; and which segment size s is TCP-fair",
		Run:     runCoexistence}
}

// coexistenceWarmup covers TCP's slow start into a 200-packet buffer and
// the viewer's login and first decisions.
const coexistenceWarmup = 10 * time.Second

func runCoexistence(ctx context.Context, o Options) (Result, error) {
	o = o.withDefaults()
	start := time.Now()
	dur := o.Duration
	if dur == 0 {
		dur = 30 * time.Second
	}
	jobs, segJobs := coexistenceJobs(o, dur)
	runs, err := runAll(ctx, o, jobs)
	if err != nil {
		return Result{}, err
	}
	res := coexistenceResult(jobs, runs, segJobs)
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// coexistenceJobs are the scenario's runs: the matrix first, then the
// segment choices from the index it returns.
func coexistenceJobs(o Options, dur time.Duration) (jobs []job, segJobs int) {
	for _, buffer := range []int{seedSmall, seedLarge} {
		for _, cc := range []tcpflow.CongestionControl{tcpflow.Reno, tcpflow.CUBIC} {
			for _, mode := range []ViewerMode{Stock, Window, TFRC} {
				up, down := adsl(buffer)
				jobs = append(jobs, job{name: fmt.Sprintf("coexistence buffer=%d tcp=%s viewer=%s", buffer, cc, mode),
					cfg: RigConfig{Up: up, Down: down, Seed: o.Seed, Warmup: coexistenceWarmup, Duration: dur,
						TCP: []tcpflow.FlowConfig{
							{Name: string(cc) + " upload", CC: cc, Dir: tcpflow.Upload},
							{Name: string(cc) + " download", CC: cc, Dir: tcpflow.Download},
						},
						Viewer: &RigViewer{Mode: mode}}})
			}
		}
	}
	// Linux's own TCP, as root: the stock viewer beside each congestion
	// control the kernel has.
	if kerneltcp.Supported() == nil {
		jobs = append(jobs, kernelCoexistenceJobs(o, dur, []int{seedSmall, seedLarge})...)
	}
	// Which s is TCP-fair: window tracking with each choice beside one
	// bulk download (no upload, whose queue would stretch the download's
	// ACK clock), on the small buffer, where TCP meets loss often.
	segJobs = len(jobs)
	for _, seg := range []string{SegmentMean, SegmentNominal} {
		up, down := adsl(seedSmall)
		jobs = append(jobs, job{name: "coexistence segment=" + seg,
			cfg: RigConfig{Up: up, Down: down, Seed: o.Seed, Warmup: coexistenceWarmup, Duration: dur,
				TCP:    []tcpflow.FlowConfig{{Name: "cubic download", CC: tcpflow.CUBIC, Dir: tcpflow.Download}},
				Viewer: &RigViewer{Mode: Window, Segment: seg}}})
	}
	return jobs, segJobs
}

// kernelCoexistenceJobs are the stock viewer beside a Linux upload and
// download of each congestion control the kernel has (bbr standing for
// the delay-based family: these kernels have no vegas).
func kernelCoexistenceJobs(o Options, dur time.Duration, buffers []int) []job {
	var jobs []job
	for _, buffer := range buffers {
		for _, cc := range kerneltcp.CongestionControls {
			if ok, _ := kerneltcp.CongestionAvailable(cc); !ok {
				continue
			}
			up, down := adsl(buffer)
			jobs = append(jobs, job{name: fmt.Sprintf("coexistence buffer=%d tcp=linux-%s viewer=stock", buffer, cc),
				cfg: RigConfig{Up: up, Down: down, Seed: o.Seed, Warmup: coexistenceWarmup, Duration: dur,
					Kernel: []kerneltcp.FlowConfig{
						{Name: "linux " + cc + " upload", Congestion: cc},
						{Name: "linux " + cc + " download", Congestion: cc, Download: true},
					},
					Viewer: &RigViewer{Mode: Stock}}})
		}
	}
	return jobs
}

func coexistenceResult(jobs []job, runs []RunResult, segJobs int) Result {
	res := Result{Scenario: "coexistence", Runs: runs}
	t := Table{Title: "coexistence: a viewer beside a bulk TCP upload and download (512 kbit/s up, 6 Mbit/s down, 80 ms one way)",
		Columns: []string{"buffer", "TCP", "viewer", "added delay up mean/p95 ms", "down mean/p95 ms", "viewer kbit/s", "TCP up kbit/s", "TCP down kbit/s", "fair kbit/s", "Jain (down)"},
		Notes: []string{
			"added delay: the viewer's datagrams' wait in the bottleneck's queues (up: its acks, agent updates and AgentThrottle; down: the region's traffic).",
			"fair: the Mathis (Reno) rate at the loss event rate and RTT fairgrid measured, s = the mean payload. Jain: over the viewer and the TCP download.",
			"TCP: gVisor's userspace Reno and CUBIC; as root, Linux's reno, cubic and bbr (kerneltcp: network namespaces joined to the bottleneck through TUN devices; no vegas in these kernels, so bbr is the delay-based one).",
			"published: " + seedSource + ": nearly 300 ms added to the game flow with loss-based TCP, much less with 20 packets.",
		}}
	added := map[string]float64{}
	for i, r := range runs[:segJobs] {
		m := r.Measurement
		j := jobs[i]
		v := m.Viewer
		tcpUp, tcpDown := m.TCP[0], m.TCP[1]
		buffer := j.cfg.Up.Buffer
		t.Rows = append(t.Rows, []string{fmt.Sprint(buffer), tcpUp.CC, string(v.Mode),
			fmt.Sprintf("%.0f / %.0f", v.Up.QueueDelayMeanMs, v.Up.QueueDelayP95Ms),
			fmt.Sprintf("%.0f / %.0f", v.Down.QueueDelayMeanMs, v.Down.QueueDelayP95Ms),
			kbit(v.Down.ThroughputBPS), kbit(tcpUp.GoodputBPS), kbit(tcpDown.GoodputBPS), kbitOpt(v.FairMeanBPS),
			fmt.Sprintf("%.2f", Jain(v.Down.ThroughputBPS, tcpDown.Data.ThroughputBPS))})
		if v.Mode == Stock {
			added[fmt.Sprintf("%d %s", buffer, tcpUp.CC)] = v.Up.QueueDelayMeanMs + v.Down.QueueDelayMeanMs
		}
	}
	res.Tables = append(res.Tables, t)
	var ccs []string
	for _, j := range jobs[:segJobs] {
		if cc := jobCC(j); j.cfg.Up.Buffer == seedLarge && j.cfg.Viewer.Mode == Stock && !slices.Contains(ccs, cc) {
			ccs = append(ccs, cc)
		}
	}
	for _, cc := range ccs {
		res.Comparisons = append(res.Comparisons, Comparison{Scenario: "coexistence",
			Metric: fmt.Sprintf("stock viewer's added delay (up+down mean), %s, 200 packets", cc), Unit: "ms",
			Published: seedDelayMs, Measured: added[fmt.Sprintf("%d %s", seedLarge, cc)], Source: seedSource})
		res.Comparisons = append(res.Comparisons, Comparison{Scenario: "coexistence",
			Metric: fmt.Sprintf("stock viewer's added delay, %s, 200 over 20 packets", cc), Unit: "×",
			Measured: added[fmt.Sprintf("%d %s", seedLarge, cc)] / added[fmt.Sprintf("%d %s", seedSmall, cc)], Source: seedSource + " (\"much less\" with 20)"})
	}

	st := Table{Title: "which s is TCP-fair: window tracking beside one bulk CUBIC download (20-packet buffers)",
		Columns: []string{"segment", "s bytes", "viewer kbit/s", "TCP kbit/s", "viewer / TCP", "loss event rate", "RTT ms"},
		Notes: []string{
			"mean: s is the viewer's mean payload (RFC 5348, what the controllers use); nominal: s = 1460 B (TFRC-SP, RFC 4828 §3), requested by scaling the controller's rate by 1460/s.",
			"TCP-fair is a ratio of 1: the viewer's bytes/s equal to a TCP flow's on the same path.",
		}}
	for _, r := range runs[segJobs:] {
		m := r.Measurement
		v, tcp := m.Viewer, m.TCP[0]
		ratio := v.Down.ThroughputBPS / tcp.Data.ThroughputBPS
		seg := jobs[segJobs+len(st.Rows)].cfg.Viewer.Segment
		st.Rows = append(st.Rows, []string{seg, fmt.Sprintf("%.0f", v.SegmentBytes), kbit(v.Down.ThroughputBPS), kbit(tcp.Data.ThroughputBPS),
			fmt.Sprintf("%.2f", ratio), fmt.Sprintf("%.4f", v.LossEventRate), fmt.Sprintf("%.0f", v.RTTms)})
		res.Comparisons = append(res.Comparisons, Comparison{Scenario: "coexistence", Metric: "viewer bytes/s over one bulk TCP flow's, segment " + seg,
			Unit: "×", Published: 1, Measured: ratio, Source: "TCP-fair by definition (RFC 5348 §1; RFC 4828 for the nominal s)"})
	}
	res.Tables = append(res.Tables, st)
	return res
}

// jobCC names a run's TCP as its rows do.
func jobCC(j job) string {
	if len(j.cfg.Kernel) > 0 {
		return "linux " + j.cfg.Kernel[0].Congestion
	}
	return string(j.cfg.TCP[0].CC)
}

func kbit(bps float64) string { return fmt.Sprintf("%.0f", bps/1000) }

func kbitOpt(bps float64) string {
	if bps == 0 {
		return "-"
	}
	return kbit(bps)
}

package scenario

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/kerneltcp"
	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/internal/lab/tcpflow"
)

// The coexistence study (docCoexistence): two users of one ADSL line, one
// playing WoW (a TCP SACK game flow), the other uploading a file by FTP
// (TCP SACK, NewReno or Vegas); the game's uplink queueing delay with a
// 200- and a 20-packet uplink buffer, 1,000 s simulated, averaged over the
// last 200 s (lines 31, 32, 41, 43).
const (
	adslUp    = 512_000 / 8   // bytes/s (line 31)
	adslDown  = 6_000_000 / 8 // bytes/s (line 31)
	adslDelay = 80 * time.Millisecond
	// The uplink buffers (line 32).
	seedSmall = 20
	seedLarge = 200
	// adslDownBuffer is the downlink's buffer: the document sizes the
	// uplink's only; the downlink carries only the game's 18 kbit/s and
	// the upload's ACKs, so it never fills.
	adslDownBuffer = 100
	// coexistencePublished: 1,000 s simulated (line 41), the last 200 s
	// averaged (line 43).
	coexistencePublishedRun      = 1000 * time.Second
	coexistencePublishedMeasured = 200 * time.Second
	coexistenceDefault           = 30 * time.Second
)

// What the document found (Fig. 9, in its text).
var (
	coexistence300ms = cite(docCoexistence, 47, "the added delays using TCP SACK and TCP New Reno is nearly 300 ms", 300, "ms")
	coexistenceSmall = cite(docCoexistence, 150, "smaller buffers have been demonstrated to be better for TCP-based MMORPGs, since larger buffers cause higher delays", 0, "")
)

func adsl(buffer int) (up, down link.PipeConfig) {
	return link.PipeConfig{Rate: adslUp, Delay: adslDelay, Buffer: buffer},
		link.PipeConfig{Rate: adslDown, Delay: adslDelay, Buffer: adslDownBuffer}
}

// wowFlow is the game: an application-limited TCP flow with WoW's
// Questing rates as the multiplexing study gives them (docMultiplexing
// lines 54–55: 1.47 kbit/s up, 18.13 kbit/s down); the coexistence study
// models Questing too (line 35) but gives no rate beyond "less than 10
// kbps" up (line 44).
func wowFlow() tcpflow.FlowConfig {
	return tcpflow.FlowConfig{Name: "wow game", CC: tcpflow.Reno, App: &tcpflow.AppConfig{UpRate: gameUpRate, DownRate: gameDownRate, Message: gameMessage}}
}

func coexistence() Scenario {
	return Scenario{Name: "coexistence", DefaultDuration: coexistenceDefault,
		Summary: "a WoW-like TCP game flow beside an FTP upload on a 512k/6M ADSL line, 20 and 200-packet uplink buffers: the game's uplink queueing delay; and (ours) a viewer beside an upload and a download, and which segment size s is TCP-fair",
		Run:     runCoexistence}
}

// coexistenceWarmup covers TCP's slow start into a 200-packet buffer and
// the viewer's login and first decisions.
const coexistenceWarmup = 10 * time.Second

// coexistenceTimes are the warm-up and the measured part: with Full the
// document's (800 s, then 200 s).
func coexistenceTimes(o Options) (warmup, dur time.Duration) {
	dur = o.duration(coexistenceDefault, coexistencePublishedMeasured)
	if o.Full && o.Duration == 0 {
		return coexistencePublishedRun - coexistencePublishedMeasured, dur
	}
	return coexistenceWarmup, dur
}

func runCoexistence(ctx context.Context, o Options) (Result, error) {
	warmup, dur := coexistenceTimes(o)
	var docJobs, segJobs int
	return runSeeded(ctx, o, func(o Options) []job {
		var jobs []job
		jobs, docJobs, segJobs = coexistenceJobs(o, warmup, dur)
		return jobs
	}, func(jobs []job, runs []RunResult) Result {
		return coexistenceResult(jobs, runs, docJobs, segJobs, warmup, dur)
	})
}

// ftpCCs are the uploads beside the game: gVisor's Reno stands for the
// document's SACK and NewReno (it is NewReno with SACK, RFC 6675);
// CUBIC is ours.
var ftpCCs = []tcpflow.CongestionControl{tcpflow.Reno, tcpflow.CUBIC}

// coexistenceDocJobs are the document's set-up: the game beside an FTP
// upload (gVisor's; as root also Linux's reno, cubic and bbr), each
// uplink buffer.
func coexistenceDocJobs(o Options, warmup, dur time.Duration, buffers []int, kernel bool) []job {
	var jobs []job
	for _, buffer := range buffers {
		up, down := adsl(buffer)
		for _, cc := range ftpCCs {
			jobs = append(jobs, job{name: fmt.Sprintf("coexistence buffer=%d ftp=%s game=wow", buffer, cc),
				cfg: RigConfig{Up: up, Down: down, Seed: o.Seed, Warmup: warmup, Duration: dur,
					TCP: []tcpflow.FlowConfig{wowFlow(), {Name: string(cc) + " ftp upload", CC: cc, Dir: tcpflow.Upload}}}})
		}
		if !kernel {
			continue
		}
		for _, cc := range kerneltcp.CongestionControls {
			if ok, _ := kerneltcp.CongestionAvailable(cc); !ok {
				continue
			}
			jobs = append(jobs, job{name: fmt.Sprintf("coexistence buffer=%d ftp=linux-%s game=wow", buffer, cc),
				cfg: RigConfig{Up: up, Down: down, Seed: o.Seed, Warmup: warmup, Duration: dur,
					TCP:    []tcpflow.FlowConfig{wowFlow()},
					Kernel: []kerneltcp.FlowConfig{{Name: "linux " + cc + " ftp upload", Congestion: cc}}}})
		}
	}
	return jobs
}

// coexistenceJobs are the scenario's runs: the document's first (docJobs
// of them), then ours: the viewer beside an upload and a download, then
// the segment choices from segJobs on.
func coexistenceJobs(o Options, warmup, dur time.Duration) (jobs []job, docJobs, segJobs int) {
	jobs = coexistenceDocJobs(o, warmup, dur, []int{seedSmall, seedLarge}, kerneltcp.Supported() == nil)
	docJobs = len(jobs)
	for _, buffer := range []int{seedSmall, seedLarge} {
		for _, cc := range []tcpflow.CongestionControl{tcpflow.Reno, tcpflow.CUBIC} {
			for _, mode := range []ViewerMode{Stock, Window, TFRC} {
				up, down := adsl(buffer)
				down.Buffer = buffer
				jobs = append(jobs, job{name: fmt.Sprintf("coexistence buffer=%d tcp=%s viewer=%s", buffer, cc, mode),
					cfg: RigConfig{Up: up, Down: down, Seed: o.Seed, Warmup: warmup, Duration: dur,
						TCP: []tcpflow.FlowConfig{
							{Name: string(cc) + " upload", CC: cc, Dir: tcpflow.Upload},
							{Name: string(cc) + " download", CC: cc, Dir: tcpflow.Download},
						},
						Viewer: &RigViewer{Mode: mode}}})
			}
		}
	}
	// Which s is TCP-fair: window tracking with each choice beside one
	// bulk download (no upload, whose queue would stretch the download's
	// ACK clock), on the small buffer, where TCP meets loss often.
	segJobs = len(jobs)
	for _, seg := range []string{SegmentMean, SegmentNominal} {
		up, down := adsl(seedSmall)
		down.Buffer = seedSmall
		jobs = append(jobs, job{name: "coexistence segment=" + seg,
			cfg: RigConfig{Up: up, Down: down, Seed: o.Seed, Warmup: warmup, Duration: dur,
				TCP:    []tcpflow.FlowConfig{{Name: "cubic download", CC: tcpflow.CUBIC, Dir: tcpflow.Download}},
				Viewer: &RigViewer{Mode: Window, Segment: seg}}})
	}
	return jobs, docJobs, segJobs
}

// The bounds the lab asserts for the document's runs (docs/lab.md gives
// the spread): the game's uplink queueing delay with 200 packets at
// least coexistenceMinRatio times that with 20, and, with loss-based TCP,
// at least coexistenceMinDelay.
const (
	coexistenceMinRatio = 3
	coexistenceMinDelay = 1000 // ms
)

func coexistenceDiffers(warmup, dur time.Duration, ftp string) string {
	return fmt.Sprintf("%.0f s measured after %.0f s (published: the last 200 s of 1,000 s); FTP: %s; the game: gVisor Reno, application-limited at 1.47/18.13 kbit/s in 100-byte updates (the WoW Questing model's rates, from %s:54–55; the document: TCP SACK, its own model); downlink buffer %d packets (not given); the LAN's 100 Mbit/s left out",
		dur.Seconds(), warmup.Seconds(), ftp, docMultiplexing, adslDownBuffer)
}

// coexistenceDocResult is the document's comparisons and table from its
// runs (coexistenceDocJobs' order).
func coexistenceDocResult(jobs []job, runs []RunResult, warmup, dur time.Duration) ([]Comparison, Table) {
	t := Table{Title: "coexistence (the document's set-up): a WoW-like game flow beside an FTP upload, 512 kbit/s up, 6 Mbit/s down, 80 ms one way",
		Columns: []string{"uplink buffer", "FTP", "game uplink queueing mean/p95 ms", "game up kbit/s", "game down kbit/s", "FTP kbit/s", "uplink dropped"},
		Notes: []string{
			"game uplink queueing: the mean wait in the uplink queue of the game flow's client→server packets (its updates and ACKs), the document's Fig. 9 (" + docCoexistence + ":43).",
			"FTP: gVisor's Reno (NewReno with SACK) stands for the document's SACK and NewReno; CUBIC and, as root, Linux's reno, cubic and bbr are ours (these kernels have no vegas; bbr is the delay-based one).",
		}}
	delay := map[string]float64{}
	var ccs []string
	for i, r := range runs {
		m := r.Measurement
		j := jobs[i]
		cc := jobCC(j)
		game := m.TCP[0]
		ftp := m.TCP[len(m.TCP)-1]
		buffer := j.cfg.Up.Buffer
		delay[fmt.Sprintf("%d %s", buffer, cc)] = game.Other.QueueDelayMeanMs
		if !slices.Contains(ccs, cc) {
			ccs = append(ccs, cc)
		}
		t.Rows = append(t.Rows, []string{fmt.Sprint(buffer), cc, fmt.Sprintf("%.0f / %.0f", game.Other.QueueDelayMeanMs, game.Other.QueueDelayP95Ms),
			fmt.Sprintf("%.2f", game.GoodputUpBPS/1000), fmt.Sprintf("%.1f", game.GoodputBPS/1000), kbit(ftp.GoodputBPS), fmt.Sprintf("%.1f %%", 100*float64(m.Up.Dropped)/max(1, float64(m.Up.Arrived)))})
	}
	var cs []Comparison
	for _, cc := range ccs {
		large, small := delay[fmt.Sprintf("%d %s", seedLarge, cc)], delay[fmt.Sprintf("%d %s", seedSmall, cc)]
		ratio := 0.0
		if small > 0 {
			ratio = large / small
		}
		ftp := "gVisor " + cc
		if strings.HasPrefix(cc, "linux") {
			ftp = cc + " (Linux's own, as root)"
		}
		differs := coexistenceDiffers(warmup, dur, ftp)
		lossBased := cc == "reno" || cc == "linux reno"
		kase := "200 packets, FTP " + cc
		if lossBased {
			cs = append(cs, coexistence300ms.compare("coexistence", kase, "game's uplink queueing delay, mean", "ms", large, differs,
				allAtLeast(coexistenceMinDelay, "several times the published: the upload fills the 200-packet uplink (4.7 s of 1,500-byte packets at 512 kbit/s)", "not far above the published")))
		} else {
			why := "the document has no " + cc
			if cc == "linux bbr" {
				why = "bbr stands in for the document's Vegas (these kernels have none), which gave less than SACK and NewReno (" + docCoexistence + ":148)"
			}
			cs = append(cs, ours("coexistence", kase, "game's uplink queueing delay, mean", "ms", why, 0, large, differs, logged("reported, not judged")))
		}
		j := allAtLeast(coexistenceMinRatio, "several times, as published: larger buffers cause higher delays", "not several times, unlike the document")
		if cc == "linux bbr" {
			j = logged("reported, not judged (a delay-based upload need not fill the buffer)")
		}
		c := coexistenceSmall.compare("coexistence", "200 over 20 packets, FTP "+cc, "game's uplink queueing delay, 200 over 20 packets", "×", ratio, differs, j)
		if !lossBased {
			c.Source = oursSource("the direction of " + coexistenceSmall.Source() + ", with an FTP the document does not have")
		}
		cs = append(cs, c)
	}
	return cs, t
}

func coexistenceResult(jobs []job, runs []RunResult, docJobs, segJobs int, warmup, dur time.Duration) Result {
	res := Result{Scenario: "coexistence", Runs: runs}
	cs, dt := coexistenceDocResult(jobs[:docJobs], runs[:docJobs], warmup, dur)
	res.Comparisons = cs
	res.Tables = append(res.Tables, dt)
	t := Table{Title: "coexistence (ours): a viewer beside a bulk TCP upload and download (512 kbit/s up, 6 Mbit/s down, 80 ms one way, the same buffer both ways)",
		Columns: []string{"buffer", "TCP", "viewer", "added delay up mean/p95 ms", "down mean/p95 ms", "viewer kbit/s", "TCP up kbit/s", "TCP down kbit/s", "fair kbit/s", "Jain (down)"},
		Notes: []string{
			"ours, not the document's set-up: the viewer in the game's place, a download beside the upload, and the buffer on both directions.",
			"added delay: the viewer's datagrams' wait in the bottleneck's queues (up: its acks, agent updates and AgentThrottle; down: the region's traffic).",
			"fair: the Mathis (Reno) rate at the loss event rate and RTT fairgrid measured, s = the mean payload. Jain: over the viewer and the TCP download.",
		}}
	for i, r := range runs[docJobs:segJobs] {
		m := r.Measurement
		j := jobs[docJobs+i]
		v := m.Viewer
		tcpUp, tcpDown := m.TCP[0], m.TCP[1]
		t.Rows = append(t.Rows, []string{fmt.Sprint(j.cfg.Up.Buffer), tcpUp.CC, string(v.Mode),
			fmt.Sprintf("%.0f / %.0f", v.Up.QueueDelayMeanMs, v.Up.QueueDelayP95Ms),
			fmt.Sprintf("%.0f / %.0f", v.Down.QueueDelayMeanMs, v.Down.QueueDelayP95Ms),
			kbit(v.Down.ThroughputBPS), kbit(tcpUp.GoodputBPS), kbit(tcpDown.GoodputBPS), kbitOpt(v.FairMeanBPS),
			fmt.Sprintf("%.2f", Jain(v.Down.ThroughputBPS, tcpDown.Data.ThroughputBPS))})
	}
	res.Tables = append(res.Tables, t)

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
		res.Comparisons = append(res.Comparisons, ours("coexistence", "segment "+seg, "viewer bytes/s over one bulk CUBIC download's (20 packets)", "×",
			"TCP-fair is 1 by definition (RFC 5348 §1; RFC 4828 for the nominal s)", 1, ratio,
			fmt.Sprintf("ours: window tracking beside one gVisor CUBIC download, %.0f s after %.0f s", dur.Seconds(), warmup.Seconds()), logged("reported, not judged")))
	}
	res.Tables = append(res.Tables, st)
	return res
}

// jobCC names a run's bulk TCP as its rows do: the kernel's if any, else
// the last gVisor flow's.
func jobCC(j job) string {
	if len(j.cfg.Kernel) > 0 {
		return "linux " + j.cfg.Kernel[0].Congestion
	}
	return string(j.cfg.TCP[len(j.cfg.TCP)-1].CC)
}

func kbit(bps float64) string { return fmt.Sprintf("%.0f", bps/1000) }

func kbitOpt(bps float64) string {
	if bps == 0 {
		return "-"
	}
	return kbit(bps)
}

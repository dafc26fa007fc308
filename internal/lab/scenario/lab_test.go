package scenario

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fairgrid/fairgrid/internal/lab/kerneltcp"
	"github.com/fairgrid/fairgrid/ratecalc"
)

// labRun is a reduced run's measured part: the scenarios' qualitative
// results show within it.
const labRun = 15 * time.Second

// labParallel is how many of the checks' runs go at once: all 29 at once
// on this 2-core machine starved the viewer's region and sidecar (the
// QoS floor check measured 0.65× where it measures 1.2× alone); 18 of the
// 31 keeps the batch at 56 s with window tracking's three mongoose seeds
// (the floor then 1.02× and 1.40× on a quiet machine).
const labParallel = 18

// labCheck is one qualitative result: its runs and how to judge them.
type labCheck struct {
	name string
	// skip, if not empty, says why the check cannot run here.
	skip  string
	jobs  []job
	judge func(t *testing.T, jobs []job, runs []RunResult)
}

// TestScenarios runs the reduced runs of every check in one batch —
// they are real time but light, and one batch keeps the package near a
// minute of wall clock whatever go test's -parallel — and then judges
// each check in its own subtest, with the tolerances stated there.
func TestScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time runs of up to 55 s: skipped with -short")
	}
	o := Options{Seed: 1}.withDefaults()
	// labParallel at a time, the longest (55 s) and the viewer's QoS
	// floor (the most sensitive to the machine's load) first; the
	// multiplexing runs, whose hundreds of flows wake the scheduler
	// thousands of times a second, last, in the slots the 25 s runs free.
	checks := []labCheck{
		mongooseCheck(o), segmentCheck(o), wirelessFloorCheck(o), bufferDelayCheck(o), kernelCheck(o), wirelessCheck(o), multiplexingCheck(o),
	}
	var all []job
	for _, c := range checks {
		all = append(all, c.jobs...)
	}
	o.Parallel = labParallel
	runs, err := runAll(context.Background(), o, all)
	if err != nil {
		t.Fatal(err)
	}
	skipJudgingUnderRace(t)
	for _, c := range checks {
		n := len(c.jobs)
		jobs, got := all[:n], runs[:n]
		all, runs = all[n:], runs[n:]
		t.Run(c.name, func(t *testing.T) {
			if c.skip != "" {
				t.Skip(c.skip)
			}
			c.judge(t, jobs, got)
		})
	}
}

// bufferDelayCheck: the document's set-up (a WoW-like game flow beside an
// FTP upload): with NS2's 20-packet window (the document's FTP), the
// window binds: the game's uplink queueing delay with 200 packets stays
// under 600 ms, what 20 packets in flight can queue (13 beyond the path's
// 6.8 at 23.4 ms each, with the game's own); with gVisor's uncapped Reno
// (ours) the upload fills the 200-packet uplink: at least 1 s, and at
// least 3 times the delay with 20 packets. These are the rig's checks,
// bounds of ours; the verdicts against the document are logged.
func bufferDelayCheck(o Options) labCheck {
	jobs := coexistenceDocJobs(o, coexistenceWarmup, labRun, []int{seedSmall, seedLarge}, false)
	return labCheck{name: "coexistence buffer delay", jobs: jobs, judge: func(t *testing.T, jobs []job, runs []RunResult) {
		judgeCoexistence(t, jobs, runs)
	}}
}

// judgeCoexistence asserts every comparison of the document's runs that
// the lab judges.
func judgeCoexistence(t *testing.T, jobs []job, runs []RunResult) {
	for i, r := range runs {
		game := r.Measurement.TCP[0]
		t.Logf("%s: game uplink queueing %.0f ms (p95 %.0f), game up %.1f kbit/s, FTP %.0f kbit/s", r.Name, game.Other.QueueDelayMeanMs, game.Other.QueueDelayP95Ms,
			game.GoodputUpBPS/1000, r.Measurement.TCP[len(r.Measurement.TCP)-1].GoodputBPS/1000)
		// The rig's sanity: the game flow ran and offered its packets to
		// the uplink. Behind a full 200-packet buffer (seconds deep) it may
		// deliver nothing within a short window, its segments waiting on
		// backed-off retransmission timers: that starvation is the
		// document's point, logged, not a broken rig (a CI run measured
		// 2.5 s queueing and 0.0 kbit/s of game goodput up).
		if jobs[i].cfg.Kernel == nil && game.Other.Arrived == 0 {
			t.Errorf("%s: the game offered nothing to the uplink", r.Name)
		} else if game.GoodputUpBPS <= 0 {
			t.Logf("%s: the game's uplink goodput was nil in the window: starved behind the queue", r.Name)
		}
	}
	cs, _ := coexistenceDocResult(jobs, runs, coexistenceWarmup, labRun)
	for _, c := range cs {
		t.Logf("%s, %s: %s (published %s, %s): %s", c.Case, c.Metric, c.spread(), c.PublishedText, c.Source, c.Verdict)
		bad := false
		switch c.Case {
		case "200 packets, FTP " + ftpVariants[0].String():
			bad = c.Measured >= 600
		case "200 packets, FTP reno", "200 packets, FTP linux reno":
			bad = c.Measured < 1000
		case "200 over 20 packets, FTP reno":
			bad = c.Measured < 3
		}
		if bad {
			t.Errorf("%s, %s: %s, outside the rig's bound (see bufferDelayCheck)", c.Case, c.Metric, c.spread())
		}
	}
}

// kernelCheck: the same with Linux's reno, cubic and bbr uploading
// (kerneltcp, as root).
func kernelCheck(o Options) labCheck {
	if err := kerneltcp.Supported(); err != nil {
		return labCheck{name: "coexistence with Linux TCP", skip: fmt.Sprintf("Linux TCP in network namespaces needs root, /dev/net/tun and iproute2 (CI runs as root): %v", err)}
	}
	var jobs []job
	for _, j := range coexistenceDocJobs(o, coexistenceWarmup, labRun, []int{seedLarge}, true) {
		if len(j.cfg.Kernel) > 0 {
			jobs = append(jobs, j)
		}
	}
	return labCheck{name: "coexistence with Linux TCP", jobs: jobs, judge: func(t *testing.T, jobs []job, runs []RunResult) {
		for _, r := range runs {
			game := r.Measurement.TCP[0]
			t.Logf("%s: game uplink queueing %.0f ms (p95 %.0f)", r.Name, game.Other.QueueDelayMeanMs, game.Other.QueueDelayP95Ms)
			for _, f := range r.Measurement.TCP {
				if f.GoodputBPS <= 0 {
					t.Errorf("%s: %s moved nothing", r.Name, f.Name)
				}
			}
		}
		// 200 packets only: the ratio to 20 is checked with gVisor's TCP;
		// Linux reno, uncapped, fills the 200-packet uplink (at least 1 s).
		cs, _ := coexistenceDocResult(jobs, runs, coexistenceWarmup, labRun)
		for _, c := range cs {
			if !strings.HasPrefix(c.Case, "200 packets") {
				continue
			}
			t.Logf("%s, %s: %s (%s): %s", c.Case, c.Metric, c.spread(), c.Source, c.Verdict)
			if c.Case == "200 packets, FTP linux reno" && c.Measured < 1000 {
				t.Errorf("%s, %s: %s, want at least 1000 ms", c.Case, c.Metric, c.spread())
			}
		}
	}}
}

// mongooseCheck: at 3 % random loss, alone on the path as the thesis
// measured: the stock viewer takes more than 1.25× its TCP-fair rate
// (the Mathis rate at the loss, RTT and payload measured), and window
// tracking with a 5 s interval comes within fairgrid's 0.8–1.25× of it,
// judged by the median of three seeds (one run of 45 s, nine decisions,
// can stray). Bounds of fairgrid's own claim; the verdicts against the
// thesis are logged.
func mongooseCheck(o Options) labCheck {
	const windowSeeds = 3
	variants := []mongooseVariant{{Stock, 0}, {Window, 5 * time.Second}}
	jobs := mongooseJobs(o, 3*labRun, []float64{0.03}, variants[:1], false)
	for s := range windowSeeds {
		seeded := o
		seeded.Seed = o.Seed + uint64(s)
		for _, j := range mongooseJobs(seeded, 3*labRun, []float64{0.03}, variants[1:], false) {
			j.name = fmt.Sprintf("%s seed=%d", j.name, seeded.Seed)
			jobs = append(jobs, j)
		}
	}
	return labCheck{name: "mongoose at 3 %", jobs: jobs, judge: func(t *testing.T, jobs []job, runs []RunResult) {
		var windowRatios []float64
		for i, r := range runs {
			v := r.Measurement.Viewer
			fair := fairFor(v)
			t.Logf("%s: received %.0f kbit/s (LLUDP bytes), fair %.0f (p %.4f, RTT %.0f ms, s %.0f B), %d requests",
				r.Name, v.PayloadBPS/1000, fair/1000, v.LossEventRate, v.RTTms, v.SegmentBytes, v.Requests)
			if fair <= 0 {
				t.Errorf("%s: no fair rate: no loss measured at 3 %%", r.Name)
				continue
			}
			if i > 0 {
				windowRatios = append(windowRatios, v.PayloadBPS/fair)
				continue
			}
			ratio := v.PayloadBPS / fair
			c, _ := mongooseComparison(variants[0], 0.03, ratio, median(v.PerSecondPayloadBPS)/fair, 3*labRun)
			t.Logf("%s (%s): %s", c.Case, c.Source, c.Verdict)
			if ratio <= fairHigh {
				t.Errorf("%s: %.2f× TCP-fair, want above %.2f×", c.Case, ratio, fairHigh)
			}
		}
		if len(windowRatios) == windowSeeds {
			sort.Float64s(windowRatios)
			got := windowRatios[windowSeeds/2]
			c, _ := mongooseComparison(variants[1], 0.03, got, got, 3*labRun)
			t.Logf("%s (%s), received/fair, median of %v: %s", c.Case, c.Source, windowRatios, c.Verdict)
			if got < fairLow || got > fairHigh {
				t.Errorf("%s: median %.2f× TCP-fair, want within %.2f–%.2f× (seeds: %v)", c.Case, got, fairLow, fairHigh, windowRatios)
			}
		}
	}}
}

// segmentCheck: beside one bulk CUBIC download, window tracking with s =
// the mean payload leaves the viewer well under the TCP flow's bytes/s
// (below 0.7×), and with the nominal 1460 B it gets more than with the
// mean (RFC 4828's argument) where its request binds, without flooding the uplink with its own
// requests (at most 50 upward datagrams a second: acks, agent updates and
// a request per interval).
func segmentCheck(o Options) labCheck {
	all, _, seg := coexistenceJobs(o, coexistenceWarmup, 2*labRun)
	return labCheck{name: "segment choice", jobs: all[seg:], judge: func(t *testing.T, _ []job, runs []RunResult) {
		var ratios []float64
		for _, r := range runs {
			m := r.Measurement
			v := m.Viewer
			ratio := v.Down.ThroughputBPS / m.TCP[0].Data.ThroughputBPS
			ratios = append(ratios, ratio)
			upRate := float64(v.Up.Arrived) / m.Seconds
			t.Logf("%s: viewer %.0f kbit/s (s %.0f B, p %.4f), TCP %.0f kbit/s: %.2f×; viewer up %.0f datagrams/s", r.Name,
				v.Down.ThroughputBPS/1000, v.SegmentBytes, v.LossEventRate, m.TCP[0].Data.ThroughputBPS/1000, ratio, upRate)
			if upRate > 50 {
				t.Errorf("%s: the viewer's side sent %.0f datagrams/s up", r.Name, upRate)
			}
		}
		if ratios[0] >= 0.7 {
			t.Errorf("with s = the mean payload the viewer got %.2f× the TCP flow's bytes/s, want below 0.7×", ratios[0])
		}
		// RFC 4828's larger s raises the request; it raises what the viewer
		// gets only where the request binds. Where the viewer received well
		// under its nominal fair rate, the region's own demand held it (a
		// CI run: 1,542 kbit/s at a fair 2 Mbit/s or so, against 1,648 with
		// the mean), and the two runs may differ only by noise.
		nominal := runs[1].Measurement.Viewer
		if bound := nominal.Down.ThroughputBPS >= 0.8*nominal.FairNominalBPS; bound && !(ratios[1] > ratios[0]) {
			t.Errorf("with s = 1460 B the viewer got %.2f× the TCP flow's bytes/s, with the mean %.2f×: want more", ratios[1], ratios[0])
		} else if !bound && ratios[1] < 0.85*ratios[0] {
			t.Errorf("with s = 1460 B (demand-bound: %.0f of a fair %.0f kbit/s) the viewer got %.2f× the TCP flow's bytes/s, with the mean %.2f×: want no less, but for noise",
				nominal.Down.ThroughputBPS/1000, nominal.FairNominalBPS/1000, ratios[1], ratios[0])
		}
	}}
}

// multiplexingCheck: the document's cases A and D at their size (N = M =
// 50 and 100 flows; 20 s measured instead of 200 s): both branches carry
// data both ways; the verdicts against the document (judged on its own
// figures, docs/lab.md) are logged, not asserted, since a reduced run of
// one seed cannot settle them. And ours: TCM in case A's set-up, whose
// header compression saves at least a fifth of the branch's
// client→server bytes (a 100-byte update's 52 header bytes become 14, a
// pure ACK's 52 become 14: 25 % and 73 %; 56 % measured).
func multiplexingCheck(o Options) labCheck {
	sawtooth := []muxVariant{variantSawtooth}
	cases := []multiplexCase{multiplexCases[0], multiplexCases[3]}
	dur := 20 * time.Second
	jobs := append(multiplexJobs(o.Seed, dur, cases, sawtooth), multiplexJobs(o.Seed, dur, cases[:1], []muxVariant{variantTCM})...)
	return labCheck{name: "multiplexing", jobs: jobs, judge: func(t *testing.T, _ []job, runs []RunResult) {
		n := len(cases)
		res := multiplexResult(cases, sawtooth, dur, runs[:n])
		for _, c := range res.Comparisons {
			t.Logf("%s, %s: %s (published %s): %s", c.Case, c.Metric, c.spread(), c.PublishedText, c.Verdict)
		}
		for i, r := range runs[:n] {
			for _, b := range r.Measurement.Branches {
				if b.UpKbps <= 0 || b.DownKbps <= 0 {
					t.Errorf("case %s: the %s branch moved %.1f kbit/s up, %.1f down", cases[i].name, b.Branch, b.UpKbps, b.DownKbps)
				}
			}
		}
		tcm := runs[n].Measurement.Branches
		t.Logf("A with TCM: %.0f / %.0f kbit/s up; compression saved %.0f %% of the bytes, %.0f %% of packets compressed, %.1f tossed/s",
			tcm[0].UpKbps, tcm[1].UpKbps, 100*tcm[0].Up.SavedShare, 100*tcm[0].Up.CompressedShare, tcm[0].Up.TossedPerSecond)
		if tcm[0].Up.SavedShare < 0.2 {
			t.Errorf("A with TCM: compression saved %.0f %% of the client→server bytes, want at least 20 %%", 100*tcm[0].Up.SavedShare)
		}
	}}
}

// wirelessFloorCheck: with fairgrid's QoS floor of 512 kbit/s, the viewer
// receives at least 85 % of it beside three CUBIC downloads, with the
// smallest and a large access-point buffer (the rest of the floor's
// requests is lost to the full queue: drop-tail spares no flow). 85 % is
// this test's allowance for a loaded machine, not the floor holding: the
// summary reports the floor held only at 1× or more.
func wirelessFloorCheck(o Options) labCheck {
	jobs := wirelessJobs(o, labRun, []int{37, 256}, []ratecalc.Rate{wirelessFloor})
	return labCheck{name: "wireless QoS floor", jobs: jobs, judge: func(t *testing.T, _ []job, runs []RunResult) {
		for _, r := range runs {
			v := r.Measurement.Viewer
			got := v.Down.ThroughputBPS / wirelessFloor.BitsPerSecond()
			t.Logf("%s: viewer %.0f kbit/s (%.2f× the floor), delay %.0f ms, TCP %.0f / %.0f / %.0f kbit/s", r.Name, v.Down.ThroughputBPS/1000, got,
				v.Down.QueueDelayMeanMs, r.Measurement.TCP[0].GoodputBPS/1000, r.Measurement.TCP[1].GoodputBPS/1000, r.Measurement.TCP[2].GoodputBPS/1000)
			if got < 0.85 {
				t.Errorf("%s: the viewer received %.2f× its floor, want at least 0.85×", r.Name, got)
			}
		}
	}}
}

// wirelessCheck: terminals uploading through an AP whose 37-packet buffer
// holds their ACKs (wirelessDocJobs): no data is lost and the ACKs
// overflow the AP (at least 40 % of them dropped), the
// mechanism the document names ("No data losses and TCP ACK overflow at
// AP buffer"; 64–77 % measured with the terminals opening together).
// Whether a terminal is left behind is logged, not asserted: the
// verdicts stand on the summary's seeds.
func wirelessCheck(o Options) labCheck {
	var jobs []job
	for i := range 2 {
		so := o
		so.Seed = o.Seed + uint64(i)
		jobs = append(jobs, wirelessDocJobs(so, labRun, []int{6, 10}, wirelessAPBuffer)...)
	}
	return labCheck{name: "wireless terminals", jobs: jobs, judge: func(t *testing.T, jobs []job, runs []RunResult) {
		for _, r := range runs {
			m := r.Measurement
			minShare, jain, _ := terminalsShares(m)
			acks := float64(m.Down.Dropped) / max(1, float64(m.Down.Arrived))
			t.Logf("%s: unluckiest terminal %.2f of the mean, Jain %.2f, %d of %d data packets dropped, %.0f %% of ACKs", r.Name, minShare, jain,
				m.Up.Dropped, m.Up.Arrived, 100*acks)
			if m.Up.Dropped > 0 {
				t.Errorf("%s: %d data packets dropped, want none (the terminals' windows fit their queue)", r.Name, m.Up.Dropped)
			}
			if acks < 0.4 {
				t.Errorf("%s: %.0f %% of the ACKs dropped at the AP, want at least 40 %%", r.Name, 100*acks)
			}
		}
	}}
}

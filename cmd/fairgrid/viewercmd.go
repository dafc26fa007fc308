package main

import (
	"fmt"
	"time"

	"github.com/fairgrid/fairgrid/internal/audit"
	"github.com/fairgrid/fairgrid/internal/cli"
	"github.com/fairgrid/fairgrid/internal/lab/viewer"
	"github.com/fairgrid/fairgrid/ratecalc"
	"github.com/fairgrid/fairgrid/throttle/group"
)

const viewerSynopsis = `--sim ADDR [--clients N] [--duration D] [--throttle R] [--viewer-rule] [--ack-delay D] [--child-regions K] [--socks5 ADDR [--socks5-user U --socks5-pass P]] [--format text|json]
       fairgrid viewer --stress --sim ADDR [--clients N | --sweep N,N,...] [--duration D] [--neighbours K [--view-distance M]] [--sim-metrics URL] [--fleet auto|shared|per-viewer] [--format text|json]

Synthetic viewers: each logs in to the simulator with UseCircuitCode (no
XML-RPC against fairgrid sim), completes the handshake, streams AgentUpdate
at 10 Hz, acks, pings every 5 s and asks for its throttle with the viewer's
split (default 1,500 kbps of 1024 bit/s, the classic viewer), optionally
following the stock ±10 % rule. At the end each prints what it measured;
--format json gives one object per viewer.

With --child-regions K each viewer also opens a child circuit, from the
same socket, to each of K neighbour regions at --sim's port + 1 ... + K
(as fairgrid sim --child-regions K opens them) once its root circuit is
complete: UseCircuitCode, RegionHandshakeReply, acks and pings, but no
CompleteAgentMovement, AgentUpdate or AgentThrottle, as a real viewer's
child circuits (a neighbour takes its throttle from the root region).
It reports what each circuit received and the total. (Not --neighbours:
that is stress mode's neighbours per movement.) With --stress (against fairgrid
sim --stress) each viewer moves once a second and times the echo of its
movement; --sweep tries each viewer count in turn and reports the largest
whose mean delay stays under 100 ms. Each step reports, over its window
(after a 3 s warm-up): the mean neighbours each movement went to, the
datagrams per second in and out at the region and its CPU seconds (read
from fairgrid sim --metrics at --sim-metrics, for example
http://127.0.0.1:9104/metrics), the viewers' CPU seconds (this process),
and the mean and 99th-percentile echo delay. Without --neighbours the
viewers walk in one 256 m region, so the neighbours per move grow with
their number; --neighbours K spreads each step's viewers over a square
sized to give each movement K neighbours on average within
--view-distance (which must be the sim's).

Stress viewers run on one event loop per CPU. --fleet shared (the default
where it works: Linux, with the sim on IPv4 loopback) gives each viewer
its own address 127.x.y.z and serves all of a loop's viewers from one UDP
socket with IP_PKTINFO, read and written 64 and up to 1,024 datagrams a
system call; --fleet per-viewer gives each viewer its own socket, as
other platforms always do. auto uses shared and falls back to per-viewer,
saying why on stderr; the fleet column says which each step used.

With --socks5 each viewer sends and receives through a UDP association
with that SOCKS 5 proxy (fairgrid proxy, say), every datagram wrapped in
the 10-byte RFC 1928 header, as the Second Life viewer does with "Use
SOCKS 5 proxy for UDP traffic"; --socks5-user and --socks5-pass log in
to a proxy that asks (RFC 1929).`

func runViewer(args []string, s stdio) int {
	fs := newFlagSet("viewer", viewerSynopsis, s)
	flags := viewer.BindFlags(fs)
	format := formatFlag(fs, "output format: `text` or json")
	profiles := cli.BindProfileFlags(fs)
	if c, ok := parseFlags(fs, viewerSynopsis, args, s); !ok {
		return c
	}
	if flags.Stress() {
		return runStress(flags, profiles, *format == "json", s)
	}
	cfgs, err := flags.Configs()
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid viewer: %v\n", err)
		return exitUsage
	}
	ctx, stop := runContext(*flags.Duration, plainNotice(s.err, "fairgrid viewer"))
	defer stop()
	vs := make([]*viewer.Viewer, len(cfgs))
	for i, cfg := range cfgs {
		if vs[i], err = viewer.New(cfg, nil); err != nil {
			fmt.Fprintf(s.err, "fairgrid viewer: %v\n", err)
			return exitFail
		}
	}
	if err := viewerGroup(vs).Run(ctx); err != nil {
		fmt.Fprintf(s.err, "fairgrid viewer: %v\n", err)
		return exitFail
	}
	out := &resultWriter{w: s.out}
	reports := make([]viewer.Report, len(vs))
	failed := 0
	for i, v := range vs {
		if reports[i] = v.Report(); !reports[i].LoggedIn {
			failed++
		}
	}
	viewer.WriteReports(out, reports, *format == "json", viewerVerdict)
	if failed > 0 {
		fmt.Fprintf(s.err, "fairgrid viewer: %d of %d viewers did not log in\n", failed, len(vs))
		return out.finish(s, "viewer", exitFail)
	}
	return out.finish(s, "viewer", exitOK)
}

// runStress runs stress viewers, for one count or a sweep of counts,
// with the profiles asked for.
func runStress(flags *viewer.Flags, profiles cli.ProfileFlags, asJSON bool, s stdio) int {
	plan, err := flags.StressPlan()
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid viewer: %v\n", err)
		return exitUsage
	}
	stopProfiles, err := profiles.Start()
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid viewer: %v\n", err)
		return exitFail
	}
	defer func() {
		if err := stopProfiles(); err != nil {
			fmt.Fprintf(s.err, "fairgrid viewer: %v\n", err)
		}
	}()
	ctx, stop := runContext(0, plainNotice(s.err, "fairgrid viewer"))
	defer stop()
	out := &resultWriter{w: s.out}
	if _, err := plan.Run(ctx, out, asJSON, func(note string) { fmt.Fprintf(s.err, "fairgrid viewer: %s\n", note) }); err != nil && out.err == nil {
		fmt.Fprintf(s.err, "fairgrid viewer: %v\n", err)
		return exitFail
	}
	return out.finish(s, "viewer", exitOK)
}

// viewerGroup is viewer's group: each viewer a member, so the first to
// fail stops the others.
func viewerGroup[V runner](vs []V) *group.Group {
	var g group.Group
	for _, v := range vs {
		g.Add(v.Run, nil)
	}
	return &g
}

// viewerVerdict judges what a synthetic viewer received as the audit
// judges a circuit:
// against the rate a TCP flow would get at its loss (counted by bytes,
// per 1,460-byte segment) and ping RTT.
func viewerVerdict(r viewer.Report) string {
	switch {
	case !r.LoggedIn:
		return "did not log in: nothing to judge"
	case r.Received == 0:
		return "nothing received: nothing to judge"
	case r.RTTms == nil:
		return audit.Verdict(audit.FairNoRTT, nil)
	case r.LossEvents == 0:
		return "no loss: the path had room to spare, so no TCP-fair rate bounds it"
	}
	rtt := time.Duration(*r.RTTms * float64(time.Millisecond))
	p := ratecalc.SegmentLossEventRateOver(float64(r.Bytes), float64(r.Lost), float64(r.LossEvents), float64(r.Bytes)/float64(r.Received))
	if !(p > 0) || rtt <= 0 {
		return audit.Verdict(audit.FairNoData, nil)
	}
	fair := ratecalc.TCPShareRate(audit.NominalSegmentBytes, rtt, p)
	ratio := r.RateBPS / fair.BitsPerSecond()
	return fmt.Sprintf("%s (one share, what a TCP flow would get here: about %s)", audit.Verdict(audit.FairKnown, &ratio), fair)
}

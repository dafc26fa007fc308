package main

import (
	"fmt"

	"github.com/fairgrid/fairgrid/internal/audit"
	"github.com/fairgrid/fairgrid/internal/cli"
	"github.com/fairgrid/fairgrid/internal/lab/viewer"
	"github.com/fairgrid/fairgrid/throttle/group"
)

func runViewer(args []string, s stdio) int {
	fs := newFlagSet("viewer", cli.ViewerSynopsis, s)
	flags := viewer.BindFlags(fs)
	format := formatFlag(fs, "output format: `text` or json")
	profiles := cli.BindProfileFlags(fs)
	if c, ok := parseFlags(fs, cli.ViewerSynopsis, args, s); !ok {
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
	ctx, stop := cli.RunContext(*flags.Duration, cli.PlainNotice(s.err, "fairgrid viewer"))
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
	out := &cli.ResultWriter{W: s.out}
	reports := make([]viewer.Report, len(vs))
	failed := 0
	for i, v := range vs {
		if reports[i] = v.Report(); !reports[i].LoggedIn {
			failed++
		}
	}
	viewer.WriteReports(out, reports, *format == "json", audit.ViewerVerdict)
	if failed > 0 {
		fmt.Fprintf(s.err, "fairgrid viewer: %d of %d viewers did not log in\n", failed, len(vs))
		return out.Finish(s.err, "viewer", exitFail)
	}
	return out.Finish(s.err, "viewer", exitOK)
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
	ctx, stop := cli.RunContext(0, cli.PlainNotice(s.err, "fairgrid viewer"))
	defer stop()
	out := &cli.ResultWriter{W: s.out}
	if _, err := plan.Run(ctx, out, asJSON, func(note string) { fmt.Fprintf(s.err, "fairgrid viewer: %s\n", note) }); err != nil && out.Err == nil {
		fmt.Fprintf(s.err, "fairgrid viewer: %v\n", err)
		return exitFail
	}
	return out.Finish(s.err, "viewer", exitOK)
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

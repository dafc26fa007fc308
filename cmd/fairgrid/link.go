package main

import (
	"fmt"

	"github.com/fairgrid/fairgrid/internal/cli"
	"github.com/fairgrid/fairgrid/internal/lab/link"
	"github.com/fairgrid/fairgrid/throttle/group"
)

func runLink(args []string, s stdio) int {
	fs := newFlagSet("link", cli.LinkSynopsis, s)
	var cfg link.Config
	cli.AddrPortVar(fs, &cfg.Listen, "listen", "127.0.0.1:9100", "`address` viewers send to")
	cli.AddrPortVar(fs, &cfg.Upstream, "upstream", "127.0.0.1:9000", "the simulator's `address`")
	cfg.BindFlags(fs)
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the loss processes")
	duration := fs.Duration("duration", 0, "stop after this long (0: until interrupted)")
	format := formatFlag(fs, "output format: `text` or json")
	if code, ok := parseFlags(fs, cli.LinkSynopsis, args, s); !ok {
		return code
	}
	r, err := link.New(cfg, nil)
	if err != nil {
		fmt.Fprintf(s.err, "fairgrid link: %v\n", err)
		return exitFail
	}
	ctx, stop := cli.RunContext(*duration, cli.PlainNotice(s.err, "fairgrid link"))
	defer stop()
	fmt.Fprintf(s.err, "fairgrid link: relaying %v → %v\n  down (sim → viewer): %v\n  up (viewer → sim):   %v\n", r.Addr(), cfg.Upstream, cfg.Down, cfg.Up)
	if err := linkGroup(r).Run(ctx); err != nil {
		fmt.Fprintf(s.err, "fairgrid link: %v\n", err)
		return exitFail
	}
	down, up := r.Stats()
	out := &cli.ResultWriter{W: s.out}
	link.WriteStats(out, *format == "json", down, up)
	return out.Finish(s.err, "link", exitOK)
}

// linkGroup is link's group: the relay.
func linkGroup(r runner) *group.Group {
	var g group.Group
	g.Add(r.Run, nil)
	return &g
}

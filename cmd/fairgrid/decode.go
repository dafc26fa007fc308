package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fairgrid/fairgrid/capture/input"
	"github.com/fairgrid/fairgrid/internal/cli"
	"github.com/fairgrid/fairgrid/internal/decode"
)

func runDecode(args []string, s stdio) int {
	fs := newFlagSet("decode", cli.DecodeSynopsis, s)
	format := formatFlag(fs, "output format: `text` or json (one object per line)")
	useSamples := fs.Bool("samples", false, "decode the built-in sample datagrams")
	filter := fs.String("filter", "", "print only these messages (comma-separated names)")
	summary := fs.Bool("summary", false, "print only the per-circuit measurements at the end")
	live := fs.String("live", "", "capture live on this interface (needs CAP_NET_RAW) until interrupted")
	duration := fs.Duration("duration", 0, "with --live: stop after this long")
	capFlags := input.BindFlags(fs)
	if code, ok := parseFlagsArgs(fs, cli.DecodeSynopsis, args, s); !ok {
		return code
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(s.err, "fairgrid decode: "+format+"\n", a...)
		return exitUsage
	}
	cfg := decode.Config{JSON: *format == "json", Summary: *summary, Stdin: s.in, Out: s.out, Err: s.err}
	var err error
	if cfg.Ports, cfg.Sims, cfg.Template, err = capFlags.Parse(); err != nil {
		return usageErr("%v", err)
	}
	if *filter != "" {
		cfg.Filter = strings.Split(*filter, ",")
	}
	d, err := decode.New(cfg)
	if err != nil {
		return usageErr("--filter: %v", err)
	}
	switch {
	case *live != "":
		if fs.NArg() > 0 || *useSamples {
			return usageErr("--live takes no other input")
		}
		ctx, stop := cli.RunContext(*duration, cli.PlainNotice(s.err, "fairgrid decode"))
		defer stop()
		d.Live(ctx, *live)
	case *useSamples:
		if err := d.Samples(); err != nil {
			return usageErr("%v", err)
		}
	case fs.NArg() == 0:
		d.Stdin()
	}
	for _, arg := range fs.Args() {
		d.Argument(arg)
	}
	switch err := d.Finish(); {
	case errors.Is(err, decode.ErrInput):
		return exitFail // what went wrong is on stderr
	case err != nil:
		fmt.Fprintf(s.err, "fairgrid decode: %v\n", err)
		return exitFail
	}
	return exitOK
}

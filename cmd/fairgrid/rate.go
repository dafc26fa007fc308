package main

import (
	"fmt"
	"strings"

	"github.com/fairgrid/fairgrid/internal/cli"
)

func runRate(args []string, s stdio) int {
	fs := newFlagSet("rate", cli.RateSynopsis, s)
	lossFlag := fs.String("loss", "", "loss event rate: a fraction (0.03) or a percentage (3%)")
	rtt := fs.Duration("rtt", 0, "round-trip time, for example 100ms")
	size := fs.Float64("size", 1460, "segment size in bytes")
	format := formatFlag(fs, "output format: `text` or json")
	if code, ok := parseFlags(fs, cli.RateSynopsis, args, s); !ok {
		return code
	}
	loss, problems := cli.RateProblems(*lossFlag, *rtt, *size)
	if len(problems) > 0 {
		fmt.Fprintf(s.err, "fairgrid rate: %s\n", strings.Join(problems, "; "))
		return exitUsage
	}
	out := &cli.ResultWriter{W: s.out}
	cli.WriteRates(out, *size, *rtt, loss, *format == "json")
	return out.Finish(s.err, "rate", exitOK)
}

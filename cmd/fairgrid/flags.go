package main

import (
	"context"
	"flag"
	"io"
	"time"

	"github.com/fairgrid/fairgrid/internal/cli"
)

// newFlagSet returns a flag set that reports errors on stderr instead of
// exiting.
func newFlagSet(name, synopsis string, s stdio) *flag.FlagSet {
	return cli.NewFlagSet(name, synopsis, s.err)
}

// parseFlags parses the options of a command that takes no positional
// arguments (cli.Parse): false, with the exit code, when it should stop.
func parseFlags(fs *flag.FlagSet, synopsis string, args []string, s stdio) (int, bool) {
	return cli.Parse(fs, synopsis, args, s.out, s.err)
}

// parseFlagsArgs parses a command line of options and positional
// arguments, which it leaves in fs.Args() (cli.ParseArgs).
func parseFlagsArgs(fs *flag.FlagSet, synopsis string, args []string, s stdio) (int, bool) {
	return cli.ParseArgs(fs, synopsis, args, s.out, s.err)
}

// formatFlag declares --format: text, json or one of more.
var formatFlag = cli.FormatFlag

// runContext, plainNotice and resultWriter are lab.go's names for
// cli.RunContext, cli.PlainNotice and cli.ResultWriter.
func runContext(d time.Duration, notice func(string)) (context.Context, context.CancelFunc) {
	return cli.RunContext(d, notice)
}

func plainNotice(w io.Writer, name string) func(string) { return cli.PlainNotice(w, name) }

type resultWriter struct {
	w   io.Writer
	err error
}

func (r *resultWriter) Write(p []byte) (int, error) {
	c := cli.ResultWriter{W: r.w, Err: r.err}
	n, err := c.Write(p)
	r.err = c.Err
	return n, err
}

func (r *resultWriter) finish(s stdio, name string, code int) int {
	return (&cli.ResultWriter{Err: r.err}).Finish(s.err, name, code)
}

package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/fairgrid/fairgrid/configs"
	"github.com/fairgrid/fairgrid/internal/cli"
	"github.com/fairgrid/fairgrid/throttle"
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

// configFlags declares --config and --check-config, as every front-end
// that reads the configuration file has them.
func configFlags(fs *flag.FlagSet) (path *string, check *bool) {
	path = fs.String("config", "", "configuration file (default: the built-in defaults, as in configs/fairgrid.toml)")
	check = fs.Bool("check-config", false, "validate the configuration and exit")
	return path, check
}

// segmentUsage is --segment's, in the front-ends and audit.
const segmentUsage = "the segment size s of the TCP-fair rate: `mean` (the mean datagram payload, RFC 5348) or nominal (1460 B, RFC 4828)"

// segmentFlag declares audit's --segment; its default is the shipped
// configuration's (control.segment), as the front-ends'.
func segmentFlag(fs *flag.FlagSet) *throttle.Segment {
	segment := configs.Default().Control.Segment
	fs.TextVar(&segment, "segment", segment, segmentUsage)
	return &segment
}

// resultWriter is a command's standard output that remembers the first
// write error, so that the command fails instead of exiting 0 having
// written nothing (a full disk, a closed pipe).
type resultWriter struct {
	w   io.Writer
	err error
}

func (r *resultWriter) Write(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.w.Write(p)
	if err != nil {
		r.err = fmt.Errorf("writing the results: %w", err)
	}
	return n, r.err
}

// finish turns a write error into exit 1, reported on stderr; otherwise it
// returns code.
func (r *resultWriter) finish(s stdio, name string, code int) int {
	if r.err == nil {
		return code
	}
	fmt.Fprintf(s.err, "fairgrid %s: %v\n", name, r.err)
	return exitFail
}

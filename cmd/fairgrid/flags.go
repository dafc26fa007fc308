package main

import (
	"flag"

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

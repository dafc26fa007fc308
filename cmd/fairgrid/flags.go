package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// newFlagSet returns a flag set that reports errors on stderr instead of
// exiting.
func newFlagSet(name, synopsis string, s stdio) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(s.err)
	fs.Usage = func() { printUsage(fs, synopsis, fs.Output()) }
	return fs
}

func printUsage(fs *flag.FlagSet, synopsis string, w io.Writer) {
	fmt.Fprintf(w, "Usage: fairgrid %s %s\n\nOptions:\n", fs.Name(), synopsis)
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// parseFlags parses args. It returns false, with the exit code, when the
// command should stop: help was asked for (printed on stdout, exit 0) or the
// flags were bad (reported on stderr, exit 2).
func parseFlags(fs *flag.FlagSet, synopsis string, args []string, s stdio) (int, bool) {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "--help" || a == "-help" {
			printUsage(fs, synopsis, s.out)
			return exitOK, false
		}
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage, false
	}
	return exitOK, true
}

// formatFlag declares --format: text or json, checked as the flags are
// parsed, so every subcommand refuses the same way.
func formatFlag(fs *flag.FlagSet, usage string) *string {
	format := "text"
	fs.Var(formatValue{&format}, "format", usage)
	return &format
}

type formatValue struct{ p *string }

func (f formatValue) String() string {
	if f.p == nil {
		return ""
	}
	return *f.p
}

func (f formatValue) Set(v string) error {
	if v != "text" && v != "json" {
		return errors.New("want text or json")
	}
	*f.p = v
	return nil
}

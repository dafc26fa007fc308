// Command fairgrid is the one binary of the fairgrid project: TCP-fair
// congestion control for Second Life and OpenSim. Each subcommand wires
// packages together; the logic lives in the packages.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/fairgrid/fairgrid/internal/cli"
)

// command is one subcommand.
type command struct {
	name string
	run  func(args []string, stdio stdio) int
}

// stdio carries the process's streams so that tests can run commands.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1 // the input was bad: some datagram did not decode
	exitUsage = 2 // the command line or configuration was bad
)

// runs are the commands' functions, by name (cli.Commands lists them).
var runs = map[string]func(args []string, s stdio) int{
	"decode":  runDecode,
	"audit":   runAudit,
	"rate":    runRate,
	"run":     runRun,
	"sim":     runSim,
	"viewer":  runViewer,
	"lab":     runLab,
	"link":    runLink,
	"gateway": runGateway,
	"proxy":   runProxy,
	"status":  runStatus,
	"version": runVersion,
}

func commands() []command {
	var cs []command
	for _, c := range cli.Commands {
		cs = append(cs, command{c.Name, runs[c.Name]})
	}
	return cs
}

func main() {
	os.Exit(run(os.Args[1:], stdio{os.Stdin, os.Stdout, os.Stderr}))
}

func run(args []string, s stdio) int {
	if len(args) == 0 {
		cli.Usage(s.err)
		return exitUsage
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" && len(args) == 1 {
		cli.Usage(s.out)
		return exitOK
	}
	if args[0] == "--version" || args[0] == "-version" {
		return runVersion(args[1:], s)
	}
	if args[0] == "help" { // help COMMAND is COMMAND --help
		if len(args) > 2 {
			fmt.Fprintf(s.err, "fairgrid help: unexpected argument %q (help takes one command name)\n", args[2])
			return exitUsage
		}
		c := findCommand(args[1])
		if c == nil {
			fmt.Fprintf(s.err, "fairgrid help: unknown command %q%s; see fairgrid --help\n", args[1], cli.SuggestCommand(args[1]))
			return exitUsage
		}
		return c.run([]string{"--help"}, s)
	}
	if c := findCommand(args[0]); c != nil {
		return c.run(args[1:], s)
	}
	fmt.Fprintf(s.err, "fairgrid: unknown command %q%s; see fairgrid --help\n", args[0], cli.SuggestCommand(args[0]))
	return exitUsage
}

func findCommand(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return &c
		}
	}
	return nil
}

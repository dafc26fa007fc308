// Command fairgrid is the one binary of the fairgrid project: TCP-fair
// congestion control for Second Life and OpenSim. Each subcommand wires
// packages together; the logic lives in the packages.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/fairgrid/fairgrid/internal/cli"
)

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(args []string, stdio stdio) int
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

func commands() []command {
	return []command{
		{"decode", "decode LLUDP datagrams (hex, .bin files, pcap/pcapng captures) or measure captures' circuits", runDecode},
		{"audit", "audit the TCP-fairness of captured traffic per circuit and second (table, JSON, CSV)", runAudit},
		{"rate", "print the TCP-fair rate of a path with a given loss rate and RTT", runRate},
		{"run", "the sidecar daemon; --demo runs the embedded default", runRun},
		{"sim", "run a test region simulator", runSim},
		{"viewer", "run synthetic viewers against a simulator", runViewer},
		{"lab", "run the lab's scenarios: a viewer beside real TCP on a shared bottleneck, beside the published numbers", runLab},
		{"link", "relay UDP between viewers and a simulator through an emulated link", runLink},
		{"gateway", "a UDP gateway at OpenSim regions' public addresses: scheduled, TCP-fair rates for every viewer", runGateway},
		{"proxy", "a SOCKS5 proxy for viewers that measures and sets their throttles (any OS, no root)", runProxy},
		{"status", "what a running run, proxy or gateway does, one line per circuit (the live page is at its metrics address)", runStatus},
		{"version", "print the version and the commit it was built from", runVersion},
	}
}

func main() {
	os.Exit(run(os.Args[1:], stdio{os.Stdin, os.Stdout, os.Stderr}))
}

func run(args []string, s stdio) int {
	if len(args) == 0 {
		usage(s.err)
		return exitUsage
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" && len(args) == 1 {
		usage(s.out)
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
			fmt.Fprintf(s.err, "fairgrid help: unknown command %q%s; see fairgrid --help\n", args[1], suggestCommand(args[1]))
			return exitUsage
		}
		return c.run([]string{"--help"}, s)
	}
	if c := findCommand(args[0]); c != nil {
		return c.run(args[1:], s)
	}
	fmt.Fprintf(s.err, "fairgrid: unknown command %q%s; see fairgrid --help\n", args[0], suggestCommand(args[0]))
	return exitUsage
}

// aliases are commands people type for another: what they meant.
var aliases = map[string]string{"demo": "run --demo", "daemon": "run", "socks": "proxy", "socks5": "proxy", "simulator": "sim", "region": "sim"}

// suggestCommand names the command probably meant, or "".
func suggestCommand(name string) string {
	if meant, ok := aliases[name]; ok {
		return fmt.Sprintf(" (did you mean fairgrid %s?)", meant)
	}
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	if near := cli.Nearest(name, names); near != "" {
		return fmt.Sprintf(" (did you mean fairgrid %s?)", near)
	}
	return ""
}

func findCommand(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return &c
		}
	}
	return nil
}

func usage(w io.Writer) {
	var b strings.Builder
	b.WriteString("fairgrid: TCP-fair congestion control for Second Life and OpenSim viewers.\n\nUsage: fairgrid COMMAND [options]\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-8s %s\n", c.name, c.summary)
	}
	b.WriteString("\nRun 'fairgrid help COMMAND' or 'fairgrid COMMAND --help' for a command's options.\n")
	b.WriteString("Ctrl-C (or SIGTERM) stops a running command with what it has; a second one quits at once.\n")
	io.WriteString(w, b.String())
}

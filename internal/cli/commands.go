package cli

import (
	"fmt"
	"io"
	"strings"
)

// Commands are fairgrid's commands, in the order the usage lists them,
// with what each does.
var Commands = []struct{ Name, Summary string }{
	{"decode", "decode LLUDP datagrams (hex, .bin files, pcap/pcapng captures) or measure captures' circuits"},
	{"audit", "audit the TCP-fairness of captured traffic per circuit and second (table, JSON, CSV)"},
	{"rate", "print the TCP-fair rate of a path with a given loss rate and RTT"},
	{"run", "the sidecar daemon; --demo runs the embedded default"},
	{"sim", "run a test region simulator"},
	{"viewer", "run synthetic viewers against a simulator"},
	{"lab", "run the lab's scenarios: a viewer beside real TCP on a shared bottleneck, beside the published numbers"},
	{"link", "relay UDP between viewers and a simulator through an emulated link"},
	{"gateway", "a UDP gateway at OpenSim regions' public addresses: scheduled, TCP-fair rates for every viewer"},
	{"proxy", "a SOCKS5 proxy for viewers that measures and sets their throttles (any OS, no root)"},
	{"status", "what a running run, proxy or gateway does, one line per circuit (the live page is at its metrics address)"},
	{"version", "print the version and the commit it was built from"},
}

// Usage is fairgrid's: the commands, and how to see their options.
func Usage(w io.Writer) {
	var b strings.Builder
	b.WriteString("fairgrid: TCP-fair congestion control for Second Life and OpenSim viewers.\n\nUsage: fairgrid COMMAND [options]\n\nCommands:\n")
	for _, c := range Commands {
		fmt.Fprintf(&b, "  %-8s %s\n", c.Name, c.Summary)
	}
	b.WriteString("\nRun 'fairgrid help COMMAND' or 'fairgrid COMMAND --help' for a command's options.\n")
	b.WriteString("Ctrl-C (or SIGTERM) stops a running command with what it has; a second one quits at once.\n")
	io.WriteString(w, b.String())
}

// aliases are commands people type for another: what they meant.
var aliases = map[string]string{"demo": "run --demo", "daemon": "run", "socks": "proxy", "socks5": "proxy", "simulator": "sim", "region": "sim"}

// SuggestCommand names the command probably meant, or "".
func SuggestCommand(name string) string {
	if meant, ok := aliases[name]; ok {
		return fmt.Sprintf(" (did you mean fairgrid %s?)", meant)
	}
	var names []string
	for _, c := range Commands {
		names = append(names, c.Name)
	}
	if near := Nearest(name, names); near != "" {
		return fmt.Sprintf(" (did you mean fairgrid %s?)", near)
	}
	return ""
}

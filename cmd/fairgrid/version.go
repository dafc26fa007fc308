package main

import (
	"fmt"

	"github.com/fairgrid/fairgrid/internal/cli"
)

// Stamped at build time by internal/dist/dist.sh:
//
//	go build -ldflags "-X main.version=$(git describe --tags --always --dirty) -X main.commit=$(git rev-parse HEAD)"
//
// A plain `go build` or `go install` leaves them empty, and the version
// comes from what the go tool records in the binary instead.
var (
	version string
	commit  string
)

// currentVersion is the stamped version, or else the one the go tool
// recorded.
func currentVersion() cli.Version { return cli.CurrentVersion(version, commit) }

func runVersion(args []string, s stdio) int {
	fs := newFlagSet("version", cli.VersionSynopsis, s)
	if code, ok := parseFlags(fs, cli.VersionSynopsis, args, s); !ok {
		return code
	}
	fmt.Fprintln(s.out, currentVersion())
	return exitOK
}

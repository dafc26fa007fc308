package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
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

// buildVersion is what `fairgrid version` prints and what the
// fairgrid_build_info metric should carry.
type buildVersion struct {
	Version  string // a git describe, a module version, or "devel"
	Commit   string // the full revision, or "unknown"
	Modified bool   // built from a tree with uncommitted changes (go tool's vcs.modified)
}

// currentVersion is the stamped version, or else the one the go tool
// recorded.
func currentVersion() buildVersion {
	bi, _ := debug.ReadBuildInfo()
	return resolveVersion(version, commit, bi)
}

// resolveVersion prefers the -X stamps; each one missing is taken from
// the build info: the module's version (a tag, or a pseudo-version, which
// `go build` records from the VCS since Go 1.24; "(devel)" otherwise) and
// the vcs.revision and vcs.modified settings.
func resolveVersion(stampedVersion, stampedCommit string, bi *debug.BuildInfo) buildVersion {
	v := buildVersion{Version: stampedVersion, Commit: stampedCommit}
	if bi != nil {
		if v.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
		if stampedCommit == "" {
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					v.Commit = s.Value
				case "vcs.modified":
					v.Modified = s.Value == "true"
				}
			}
		}
	}
	if v.Version == "" {
		v.Version = "devel"
	}
	if v.Commit == "" {
		v.Commit = "unknown"
	}
	return v
}

// String is one line, as `go version` prints: version, commit, toolchain
// and platform.
func (v buildVersion) String() string {
	modified := ""
	if v.Modified {
		modified = " (modified)"
	}
	return fmt.Sprintf("fairgrid %s commit %s%s %s %s/%s", v.Version, v.Commit, modified, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

const versionSynopsis = `(or fairgrid --version)

Prints the version, the commit it was built from ("(modified)" if the tree
had uncommitted changes), the Go toolchain and the platform, on one line.`

func runVersion(args []string, s stdio) int {
	fs := newFlagSet("version", versionSynopsis, s)
	if code, ok := parseFlags(fs, versionSynopsis, args, s); !ok {
		return code
	}
	fmt.Fprintln(s.out, currentVersion())
	return exitOK
}

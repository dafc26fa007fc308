package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is what `fairgrid version` prints and what the
// fairgrid_build_info metric carries.
type Version struct {
	Version  string // a git describe, a module version, or "devel"
	Commit   string // the full revision, or "unknown"
	Modified bool   // built from a tree with uncommitted changes (go tool's vcs.modified)
}

// CurrentVersion is the version stamped into the binary (main.version and
// main.commit, set with -ldflags -X by internal/dist/dist.sh), or else the
// one the go tool recorded.
func CurrentVersion(stampedVersion, stampedCommit string) Version {
	bi, _ := debug.ReadBuildInfo()
	return ResolveVersion(stampedVersion, stampedCommit, bi)
}

// ResolveVersion prefers the -X stamps; each one missing is taken from
// the build info: the module's version (a tag, or a pseudo-version, which
// `go build` records from the VCS since Go 1.24; "(devel)" otherwise) and
// the vcs.revision and vcs.modified settings.
func ResolveVersion(stampedVersion, stampedCommit string, bi *debug.BuildInfo) Version {
	v := Version{Version: stampedVersion, Commit: stampedCommit}
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
func (v Version) String() string {
	modified := ""
	if v.Modified {
		modified = " (modified)"
	}
	return fmt.Sprintf("fairgrid %s commit %s%s %s %s/%s", v.Version, v.Commit, modified, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

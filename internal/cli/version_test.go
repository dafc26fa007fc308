package cli

import (
	"runtime/debug"
	"testing"
)

func TestResolveVersion(t *testing.T) {
	vcs := func(mainVersion string, settings ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/fairgrid/fairgrid", Version: mainVersion}}
		for i := 0; i+1 < len(settings); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return bi
	}
	recorded := vcs("v0.0.0-20261203061048-de0299b25496+dirty", "vcs", "git", "vcs.revision", "de0299b2549608f1e243568cbc67c5f0488646b3", "vcs.modified", "true")
	for _, tc := range []struct {
		name                    string
		stampVersion, stampHash string
		bi                      *debug.BuildInfo
		want                    Version
	}{
		{"stamped by dist.sh", "v1.2.0-3-gde0299b-dirty", "de0299b2549608f1e243568cbc67c5f0488646b3", recorded,
			Version{"v1.2.0-3-gde0299b-dirty", "de0299b2549608f1e243568cbc67c5f0488646b3", false}},
		{"go build in a git tree", "", "", recorded,
			Version{"v0.0.0-20261203061048-de0299b25496+dirty", "de0299b2549608f1e243568cbc67c5f0488646b3", true}},
		{"clean tree", "", "", vcs("v1.2.0", "vcs.revision", "abc", "vcs.modified", "false"), Version{"v1.2.0", "abc", false}},
		{"version stamped, commit recorded", "v1.2.0", "", recorded, Version{"v1.2.0", "de0299b2549608f1e243568cbc67c5f0488646b3", true}},
		{"commit stamped, version recorded", "", "0123", recorded, Version{"v0.0.0-20261203061048-de0299b25496+dirty", "0123", false}},
		{"-buildvcs=false", "", "", vcs("(devel)"), Version{"devel", "unknown", false}},
		{"go install module@version", "", "", vcs("v1.3.0"), Version{"v1.3.0", "unknown", false}},
		{"no build info", "", "", nil, Version{"devel", "unknown", false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ResolveVersion(tc.stampVersion, tc.stampHash, tc.bi); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

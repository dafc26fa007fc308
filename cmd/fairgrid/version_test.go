package main

import (
	"log/slog"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/fairgrid/fairgrid/configs"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
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
		want                    buildVersion
	}{
		{"stamped by dist.sh", "v1.2.0-3-gde0299b-dirty", "de0299b2549608f1e243568cbc67c5f0488646b3", recorded,
			buildVersion{"v1.2.0-3-gde0299b-dirty", "de0299b2549608f1e243568cbc67c5f0488646b3", false}},
		{"go build in a git tree", "", "", recorded,
			buildVersion{"v0.0.0-20261203061048-de0299b25496+dirty", "de0299b2549608f1e243568cbc67c5f0488646b3", true}},
		{"clean tree", "", "", vcs("v1.2.0", "vcs.revision", "abc", "vcs.modified", "false"), buildVersion{"v1.2.0", "abc", false}},
		{"version stamped, commit recorded", "v1.2.0", "", recorded, buildVersion{"v1.2.0", "de0299b2549608f1e243568cbc67c5f0488646b3", true}},
		{"commit stamped, version recorded", "", "0123", recorded, buildVersion{"v0.0.0-20261203061048-de0299b25496+dirty", "0123", false}},
		{"-buildvcs=false", "", "", vcs("(devel)"), buildVersion{"devel", "unknown", false}},
		{"go install module@version", "", "", vcs("v1.3.0"), buildVersion{"v1.3.0", "unknown", false}},
		{"no build info", "", "", nil, buildVersion{"devel", "unknown", false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := resolveVersion(tc.stampVersion, tc.stampHash, tc.bi); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestVersionCommand(t *testing.T) {
	want := currentVersion().String() + "\n"
	if !strings.HasPrefix(want, "fairgrid ") || !strings.Contains(want, " commit ") || !strings.HasSuffix(want, runtime.GOOS+"/"+runtime.GOARCH+"\n") {
		t.Fatalf("version line %q lacks the name, commit or platform", want)
	}
	for _, tc := range []struct {
		args      []string
		code      int
		stdout    string
		stderrHas string
	}{
		{[]string{"version"}, exitOK, want, ""},
		{[]string{"--version"}, exitOK, want, ""},
		{[]string{"-version"}, exitOK, want, ""},
		{[]string{"version", "extra"}, exitUsage, "", `unexpected argument "extra"`},
		{[]string{"--version", "--bogus"}, exitUsage, "", "unknown flag --bogus"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stdout, stderr := runCmd(t, "", tc.args...)
			if code != tc.code || stdout != tc.stdout || !strings.Contains(stderr, tc.stderrHas) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, stderr with %q", code, stdout, stderr, tc.code, tc.stdout, tc.stderrHas)
			}
		})
	}
	if _, stdout, _ := runCmd(t, "", "--help"); !strings.Contains(stdout, "\n  version ") {
		t.Errorf("the command list lacks version:\n%s", stdout)
	}
	if code, stdout, _ := runCmd(t, "", "help", "version"); code != exitOK || !strings.Contains(stdout, "Usage: fairgrid version") {
		t.Errorf("help version: exit %d, %q", code, stdout)
	}
}

// TestVersionStamp builds the binary with the -X flags of
// internal/dist/dist.sh and runs it: the names there must be the variables
// here (the linker ignores a -X for a name that does not exist).
func TestVersionStamp(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go tool is needed to build the binary: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "fairgrid")
	// Built as TestDecodeFloodCapture builds it, so that the two share the
	// compiled packages and this one costs a link; -X acts at link time.
	build := exec.Command(goTool, "build", "-ldflags", "-X main.version=v9.8.7-1-gabcdef0-dirty -X main.commit=abcdef0123456789", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "fairgrid v9.8.7-1-gabcdef0-dirty commit abcdef0123456789 go"; !strings.HasPrefix(string(out), want) {
		t.Errorf("got %q, want it to start with %q", out, want)
	}
}

// TestBuildInfoMetric: the daemon's (and the proxy's) fairgrid_build_info
// carries the version and commit that fairgrid version prints.
func TestBuildInfoMetric(t *testing.T) {
	defer func(v, c string) { version, commit = v, c }(version, commit)
	version, commit = "v9.8.7", "abcdef0123456789"
	d, err := newDaemon(configs.Default(), nil, slog.New(slog.DiscardHandler), new(slog.LevelVar))
	if err != nil {
		t.Fatal(err)
	}
	got, err := testutil.CollectAndFormat(d.Metrics, expfmt.TypeTextPlain, "fairgrid_build_info")
	if err != nil {
		t.Fatal(err)
	}
	if want := `fairgrid_build_info{commit="abcdef0123456789",goversion="` + runtime.Version() + `",version="v9.8.7"} 1`; !strings.Contains(string(got), want) {
		t.Errorf("got\n%s\nwant a line %s", got, want)
	}
}

package main

import (
	"log/slog"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/fairgrid/fairgrid/configs"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
)

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

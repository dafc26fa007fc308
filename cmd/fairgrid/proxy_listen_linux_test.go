package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/fairgrid/fairgrid/internal/cli"
)

// hostsChildEnv marks the child of TestListenResolvedBeforeLoopbackCheck,
// which runs in its own mount namespace; its value is the hosts file to
// bind over /etc/hosts there.
const hostsChildEnv = "FAIRGRID_TEST_HOSTS_FILE"

// TestListenResolvedBeforeLoopbackCheck (issue #24, item 6): with
// "localhost" mapped to 0.0.0.0 (a hosts file bind-mounted over /etc/hosts
// in a mount namespace of the test's own), `fairgrid proxy --listen
// localhost:P` without credentials is refused, naming the address the name
// resolves to. Before, "localhost" was trusted by name and the proxy bound
// every address without credentials.
func TestListenResolvedBeforeLoopbackCheck(t *testing.T) {
	if hosts := os.Getenv(hostsChildEnv); hosts != "" {
		if err := syscall.Mount(hosts, "/etc/hosts", "", syscall.MS_BIND, ""); err != nil {
			t.Fatalf("bind-mounting %s over /etc/hosts: %v", hosts, err)
		}
		code, out, errOut := runCmd(t, "", "proxy", "--listen", "localhost:1080", "--metrics", "", "--check-config")
		if code != exitUsage || !strings.Contains(errOut, "resolves to 0.0.0.0:1080, not loopback: a username and password are required") {
			t.Errorf("--listen localhost:1080 with localhost at 0.0.0.0: exit %d, stdout %q, stderr %q; want refused", code, out, errOut)
		}
		// With credentials the same address is accepted, as any other.
		t.Setenv(cli.ProxyPasswordEnv, "secret")
		if code, _, errOut := runCmd(t, "", "proxy", "--listen", "localhost:1080", "--user", "viewer", "--metrics", "", "--check-config"); code != exitOK {
			t.Errorf("with credentials: exit %d, %q", code, errOut)
		}
		return
	}
	if os.Getuid() != 0 {
		t.Skip("needs root: the test maps localhost elsewhere in a mount namespace of its own (/etc/hosts bind-mounted)")
	}
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte("0.0.0.0 localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestListenResolvedBeforeLoopbackCheck$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), hostsChildEnv+"="+hosts)
	// A new mount namespace, its mounts private: the bind mount stays in it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestListenResolvedBeforeLoopbackCheck") {
		t.Errorf("in a mount namespace with localhost at 0.0.0.0: %v\n%s", err, out)
	}
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readmeBlock is a fenced example of the README marked runnable: "```sh
// runnable" runs anywhere, "```sh runnable root" only as root (it
// captures live).
type readmeBlock struct {
	line   int
	root   bool
	script string
}

func readmeRunnable(t *testing.T, path string) []readmeBlock {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []readmeBlock
	var cur *readmeBlock
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```sh runnable"):
			switch marker := strings.TrimSpace(strings.TrimPrefix(line, "```sh runnable")); marker {
			case "", "root":
				cur = &readmeBlock{line: n, root: marker == "root"}
			default:
				t.Fatalf("README.md:%d: unknown marker %q (runnable or runnable root)", n, line)
			}
		case cur != nil && strings.HasPrefix(line, "```"):
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.script += line + "\n"
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Fatalf("README.md:%d: the block is not closed", cur.line)
	}
	return blocks
}

// TestReadmeRunnable runs the README's examples marked runnable against
// the built binary, as a user would type them in a shell (fairgrid on the
// PATH, in an empty directory beside the repository's configs/): each
// must exit 0, print something, and every job it starts must succeed.
// The root examples are skipped, with the reason, when not root.
func TestReadmeRunnable(t *testing.T) {
	bin := builtBinary(t)
	t.Parallel() // separate processes, waiting on their clocks
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skipf("skipped: the README's examples are shell commands and there is no bash: %v", err)
	}
	readme, _ := filepath.Abs("../../README.md")
	blocks := readmeRunnable(t, readme)
	if len(blocks) < 4 {
		t.Fatalf("README.md has %d runnable examples, want the quick start's", len(blocks))
	}
	configs, _ := filepath.Abs("../../configs")
	for _, b := range blocks {
		t.Run(strings.SplitN(strings.TrimSpace(b.script), "\n", 2)[0], func(t *testing.T) {
			if b.root && os.Geteuid() != 0 {
				t.Skipf("skipped: README.md:%d needs root (live capture, CAP_NET_RAW)", b.line)
			}
			if strings.Contains(b.script, "curl ") {
				if _, err := exec.LookPath("curl"); err != nil {
					t.Skipf("skipped: README.md:%d needs curl (make interop-deps installs it): %v", b.line, err)
				}
			}
			dir := t.TempDir()
			if err := os.Symlink(configs, filepath.Join(dir, "configs")); err != nil {
				t.Fatal(err)
			}
			script := strings.ReplaceAll(b.script, "sudo ", "") // root already
			// every background job must succeed too
			script = "set -e\n" + script + "for j in $(jobs -p); do wait $j; done\n"
			ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-c", script)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if err != nil || stdout.Len() == 0 || strings.Contains(stderr.String(), "panic") {
				t.Errorf("README.md:%d: %v\n--- script\n%s--- stdout\n%s--- stderr\n%s", b.line, err, b.script, stdout.String(), stderr.String())
			}
		})
	}
}

package render

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/fairgrid/fairgrid/internal/audit"
)

// artifacts is where tests leave what a person may want to look at: the
// HTML pages and the browser's screenshots. FAIRGRID_ARTIFACTS names a
// directory that outlives the test; without it they go to t.TempDir.
func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("FAIRGRID_ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	dir = filepath.Join(dir, "render", t.Name())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func writePage(t *testing.T, dir, name string, r *audit.Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatalf("WriteHTML: %v", err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

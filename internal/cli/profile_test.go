package cli

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// TestProfiles: each profile asked for is written when stopped; one that
// cannot be created is an error naming it, and starts none.
func TestProfiles(t *testing.T) {
	dir := t.TempDir()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	p := BindProfileFlags(fs)
	names := []string{"cpuprofile", "blockprofile", "mutexprofile", "trace"}
	var args []string
	for _, n := range names {
		args = append(args, "--"+n, filepath.Join(dir, n))
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	stop, err := p.Start()
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if st, err := os.Stat(filepath.Join(dir, n)); err != nil || st.Size() == 0 {
			t.Errorf("--%s: %v, %v", n, st, err)
		}
	}
	fs.Set("trace", filepath.Join(dir, "no", "such", "dir"))
	if _, err := p.Start(); err == nil {
		t.Error("a trace in a missing directory: no error")
	}
}

package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// internalReference is what a user cannot follow: our issue numbers, the
// project's internal documents, and the test data beside the repository.
var internalReference = regexp.MustCompile(`(?i)issue #?\d+|\b(congestion|protocol|style)\.md\b|\.\./shared|shared/(testdata|seeds|docs)`)

// TestNoInternalReferencesInOutput reads every string literal of the
// command and the packages it prints from (cmd, internal, the library
// packages; tests excepted) and refuses the ones that cite what users do
// not have.
func TestNoInternalReferencesInOutput(t *testing.T) {
	for _, bad := range []string{"as issue #14 found", "congestion.md §13", "../shared/testdata/real/x.pcap"} {
		if !internalReference.MatchString(bad) {
			t.Fatalf("the pattern misses %q: the test cannot fail", bad)
		}
	}
	fset := token.NewFileSet()
	var found []string
	n := 0
	for _, root := range []string{"../../cmd", "../../internal", "../../capture", "../../throttle", "../../ratecalc", "../../lludp", "../../opensim", "../../configs"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(node ast.Node) bool {
				lit, ok := node.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				n++
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					return true
				}
				if m := internalReference.FindString(s); m != "" {
					found = append(found, fset.Position(lit.Pos()).String()+": "+m)
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n < 1000 {
		t.Fatalf("read only %d string literals: the walk missed the sources", n)
	}
	for _, f := range found {
		t.Errorf("user-facing text cites what users do not have: %s", f)
	}
}

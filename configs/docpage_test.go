package configs

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/configuration.md's key table from fairgrid.toml")

const (
	keysBegin = "<!-- keys: generated from configs/fairgrid.toml by `go test ./configs -update-docs` -->\n"
	keysEnd   = "<!-- /keys -->\n"
)

// keysTable is docs/configuration.md's table of every key: its table, its
// default as fairgrid.toml sets it, and the comment above it there (a
// comment explaining several keys set together stands beside each).
func keysTable(example []byte) string {
	var b strings.Builder
	b.WriteString("| key | default | what it does |\n|---|---|---|\n")
	lines := strings.Split(string(example), "\n")
	table := ""
	var comment []string
	inKeys := false
	for _, line := range lines {
		switch {
		case strings.HasPrefix(line, "["):
			table = strings.Trim(line, "[]")
			comment, inKeys = nil, false
		case strings.HasPrefix(line, "#"):
			if inKeys {
				comment, inKeys = nil, false
			}
			comment = append(comment, strings.TrimSpace(strings.TrimPrefix(line, "#")))
		case strings.Contains(line, " = ") && table != "":
			name, value, _ := strings.Cut(line, " = ")
			inKeys = true
			text := strings.ReplaceAll(strings.Join(comment, " "), "|", `\|`)
			b.WriteString("| `" + table + "." + name + "` | `" + strings.ReplaceAll(value, "|", `\|`) + "` | " + text + " |\n")
		default:
			comment, inKeys = nil, false
		}
	}
	return b.String()
}

// TestConfigurationPage: docs/configuration.md lists every key with its
// default and its comment exactly as the shipped fairgrid.toml has them,
// so the page cannot fall behind the file (-update-docs rewrites it).
func TestConfigurationPage(t *testing.T) {
	const path = "../docs/configuration.md"
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok := bytes.Cut(page, []byte(keysBegin))
	_, after, ok2 := bytes.Cut(rest, []byte(keysEnd))
	if !ok || !ok2 {
		t.Fatalf("%s has no %q … %q section", path, keysBegin, keysEnd)
	}
	want := keysTable(Example)
	if *updateDocs {
		out := append(append(append(append(before, keysBegin...), want...), keysEnd...), after...)
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, _, _ := bytes.Cut(rest, []byte(keysEnd))
	if string(got) != want {
		t.Errorf("%s's key table differs from fairgrid.toml; run go test ./configs -update-docs", path)
	}
	for _, key := range Keys() {
		if !strings.Contains(want, "| `"+key+"` |") {
			t.Errorf("%s is not in the table", key)
		}
	}
}

package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// mdLink is a markdown link's target: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^()\s]+)\)`)

// TestDocLinks: every relative link in README.md and docs/ (results
// included) names a file or directory of the repository, and every
// #anchor a heading of its file, as GitHub renders them.
func TestDocLinks(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files := []string{filepath.Join(root, "README.md")}
	for _, pattern := range []string{"docs/*.md", "docs/*/*.md"} {
		more, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, more...)
	}
	if len(files) < 10 {
		t.Fatalf("found %d markdown files under %s: not the repository's docs", len(files), root)
	}
	anchors := map[string]map[string]bool{}
	checked := 0
	for _, file := range files {
		rel, _ := filepath.Rel(root, file)
		for _, l := range links(t, file) {
			target, anchor, _ := strings.Cut(l.target, "#")
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			dest := file
			if target != "" {
				dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(target))
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s:%d: link %q: %v", rel, l.line, l.target, err)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			if anchors[dest] == nil {
				anchors[dest] = headings(t, dest)
			}
			if !anchors[dest][anchor] {
				t.Errorf("%s:%d: link %q: no heading with that anchor", rel, l.line, l.target)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found: the parser missed them")
	}
}

type docLink struct {
	line   int
	target string
}

// links returns the markdown links of file outside fenced code blocks and
// inline code.
func links(t *testing.T, file string) []docLink {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []docLink
	fenced := false
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(stripCode(line), -1) {
			out = append(out, docLink{n, m[1]})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// stripCode removes inline code spans, whose brackets are not links.
func stripCode(line string) string {
	parts := strings.Split(line, "`")
	var b strings.Builder
	for i, p := range parts {
		if i%2 == 0 {
			b.WriteString(p)
		}
	}
	return b.String()
}

// headings returns the anchors of file's headings, slugged as GitHub does:
// lower case, punctuation dropped, spaces to hyphens, repeats numbered.
func headings(t *testing.T, file string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		slug := slugify(strings.TrimLeft(line, "# "))
		if k := seen[slug]; k > 0 {
			out[slug+"-"+strconv.Itoa(k)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

func slugify(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

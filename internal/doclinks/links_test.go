// Package doclinks holds the tests of the user's documents: every relative
// link of README.md, docs/*.md and the lab's records reaches a file of the
// repository, and every #anchor a heading of that file; no document is
// longer than a user reads; docs/README.md indexes every document. It has
// no code of its own.
package doclinks

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// root is the repository's root, seen from this package's folder.
const root = "../.."

// documents are the Markdown files whose links are checked, as globs from
// the root.
var documents = []string{"README.md", "docs/*.md", "lab/README.md", "lab/records/*.md"}

// link is a Markdown inline link's target: [text](target).
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// heading is a Markdown ATX heading line.
var heading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)

func TestRelativeLinks(t *testing.T) {
	var files []string
	for _, g := range documents {
		m, err := filepath.Glob(filepath.Join(root, g))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 3 {
		t.Fatalf("found %d documents under %s: the globs %v no longer match the tree", len(files), root, documents)
	}
	anchors := map[string]map[string]bool{}
	for _, f := range files {
		for _, bad := range brokenLinks(t, f, anchors) {
			rel, _ := filepath.Rel(root, f)
			t.Errorf("%s: %s", rel, bad)
		}
	}
}

// brokenLinks returns, for each relative link of file that reaches no file
// or no heading, one line saying which. anchors caches each target's
// heading anchors.
func brokenLinks(t *testing.T, file string, anchors map[string]map[string]bool) []string {
	t.Helper()
	var bad []string
	for n, line := range proseLines(t, file) {
		for _, m := range link.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.Join(filepath.Dir(file), path)
			}
			if _, err := os.Stat(dest); err != nil {
				bad = append(bad, fmt.Sprintf("line %d: %s: no such file", n+1, target))
				continue
			}
			if anchor == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			if anchors[dest] == nil {
				anchors[dest] = headingAnchors(t, dest)
			}
			if !anchors[dest][anchor] {
				bad = append(bad, fmt.Sprintf("line %d: %s: no heading #%s", n+1, target, anchor))
			}
		}
	}
	return bad
}

// proseLines returns file's lines with those of fenced code blocks
// blanked, so that a link shown as code is not checked.
func proseLines(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	fenced := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			lines[i] = ""
			continue
		}
		if fenced {
			lines[i] = ""
		}
	}
	return lines
}

// headingAnchors returns the anchors GitHub gives file's headings: the
// text lower-cased, without punctuation, spaces made hyphens, and a
// repeated anchor numbered -1, -2...
func headingAnchors(t *testing.T, file string) map[string]bool {
	t.Helper()
	seen := map[string]int{}
	out := map[string]bool{}
	for _, l := range proseLines(t, file) {
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		a := slug(m[1])
		if k := seen[a]; k > 0 {
			out[fmt.Sprintf("%s-%d", a, k)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// slug is GitHub's anchor of a heading's text.
func slug(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

func TestSlug(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		// Code spans keep their text, punctuation goes.
		{"The bench: fixed against jittered (`make bench`)", "the-bench-fixed-against-jittered-make-bench"},
		// A path loses its slashes and dots.
		{"A real rate limiter: scripts/nginx-limit.sh", "a-real-rate-limiter-scriptsnginx-limitsh"},
		// Every space is a hyphen, a comma goes.
		{"Scale, the simulator, and the published reference", "scale-the-simulator-and-the-published-reference"},
	} {
		if got := slug(c.text); got != c.want {
			t.Errorf("slug(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}

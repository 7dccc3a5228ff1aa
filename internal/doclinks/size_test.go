package doclinks

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// maxBytes bounds what a user reads in one document: the README, the
// simulator's page, and every other user document but the two
// references, which list every name.
var maxBytes = map[string]int{
	"README.md":            20_000,
	"docs/simulator.md":    25_000,
	"docs/cli.md":          0, // a reference
	"docs/summary-json.md": 0, // a reference
}

// defaultMaxBytes is the bound of a user document not in maxBytes.
const defaultMaxBytes = 40_000

// TestDocumentSizes: a user document over its bound says more than a
// user needs; dated runs go to lab/records, beside the programs that
// made them.
func TestDocumentSizes(t *testing.T) {
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	for _, f := range append(docs, filepath.Join(root, "README.md")) {
		rel, _ := filepath.Rel(root, f)
		limit, ok := maxBytes[rel]
		if !ok {
			limit = defaultMaxBytes
		}
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if limit > 0 && fi.Size() > int64(limit) {
			t.Errorf("%s: %d bytes, more than %d: condense it, or move dated records to lab/records", rel, fi.Size(), limit)
		}
	}
}

// indexed is a link from docs/README.md to a document beside it.
var indexed = regexp.MustCompile(`\]\(([a-z0-9-]+\.md)(#[^)]*)?\)`)

// TestIndexNamesEveryDocument: docs/README.md, the index of which
// document answers which question, links to every document in docs/.
func TestIndexNamesEveryDocument(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range indexed.FindAllStringSubmatch(string(b), -1) {
		listed[m[1]] = true
	}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	for _, f := range docs {
		name := filepath.Base(f)
		if name != "README.md" && !listed[name] {
			t.Errorf("docs/%s: not in docs/README.md; add the question it answers", name)
		}
	}
	if !strings.Contains(string(b), "(simulator.md)") {
		t.Error("docs/README.md: no link to simulator.md; the index's links are no longer read")
	}
}

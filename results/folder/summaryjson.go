package folder

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stampede-dev/stampede/internal/redact"
	"github.com/stampede-dev/stampede/results/summary"
)

// SummaryFile is the name of the summary in a results folder.
const SummaryFile = "summary.json"

// WriteSummary writes s as dir/summary.json, indented, keys in struct order,
// with the secrets every text hides (redact.Policy) hidden, mode FileMode.
// It writes a temporary file and renames it, so a reader never sees half a
// summary. Write writes a whole results folder, with the run's own
// secrets hidden too.
func WriteSummary(dir string, s *summary.Summary) error {
	return writeSummary(dir, s, redact.Policy{})
}

// writeSummary is WriteSummary hiding what p names.
func writeSummary(dir string, s *summary.Summary, p redact.Policy) error {
	b, err := redactedJSON(s, p)
	if err != nil {
		return err
	}
	return WriteBytes(filepath.Join(dir, SummaryFile), b)
}

// redactedJSON is s as summary.json holds it: every string of it (the
// config's above all) with p's secrets hidden, indented.
func redactedJSON(s *summary.Summary, p redact.Policy) ([]byte, error) {
	// No HTML escaping: an SLO "r99<1ms" stays readable (and greppable).
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, fmt.Errorf("results: encoding summary: %w", err)
	}
	compact, err := p.JSON(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("results: encoding summary: %w", err)
	}
	buf.Reset()
	if err := json.Indent(&buf, compact, "", "  "); err != nil {
		return nil, fmt.Errorf("results: encoding summary: %w", err)
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// ReadSummary reads a summary.json. Unknown fields (from a newer stampede)
// are ignored.
func ReadSummary(path string) (*summary.Summary, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err // *fs.PathError: "open DIR/summary.json: ..."
	}
	s := &summary.Summary{}
	if err := json.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// Config is kept compact, as Summarize makes it, whatever the file's
	// indentation.
	var c bytes.Buffer
	if len(s.Config) > 0 && json.Compact(&c, s.Config) == nil {
		s.Config = c.Bytes()
	}
	return s, nil
}

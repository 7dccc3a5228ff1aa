package results

import (
	"testing"
	"time"
)

// TestParseStepLine: rolling-deploy.sh's lines parse; anything else is the
// command's ordinary output.
func TestParseStepLine(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 7, 42, 504e6, time.UTC)
	for _, c := range []struct {
		name, line string
		ok         bool
		want       StepLine
	}{
		// A drain with its detail, as rolling-deploy.sh prints it.
		{"drain", "stampede-event: drain s1 2026-12-01T10:07:42.504Z 100 session(s)\n", true, StepLine{"drain", "s1", at, "100 session(s)"}},
		// No detail.
		{"ready", "stampede-event: ready s1 2026-12-01T10:07:42.504Z", true, StepLine{"ready", "s1", at, ""}},
		// Another zone is read as the same instant, kept in UTC.
		{"offset", "stampede-event: up s2 2026-12-01T11:07:42.504+01:00", true, StepLine{"up", "s2", at, ""}},
		// Ordinary output.
		{"other", "restarting s1", false, StepLine{}},
		// The prefix but no time.
		{"no time", "stampede-event: drain s1", false, StepLine{}},
		// A time that is not RFC 3339.
		{"bad time", "stampede-event: drain s1 10:07:42", false, StepLine{}},
		// An empty kind.
		{"empty kind", "stampede-event:  s1 2026-12-01T10:07:42.504Z", false, StepLine{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := ParseStepLine(c.line)
			if ok != c.ok || got != c.want {
				t.Errorf("ParseStepLine(%q) = %+v, %v; want %+v, %v", c.line, got, ok, c.want, c.ok)
			}
		})
	}
}

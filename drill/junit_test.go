package drill

import (
	"bytes"
	"encoding/xml"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/internal/redact"
	"github.com/stampede-dev/stampede/results/summary"
)

// TestJUnit: one testcase per SLO and per check, a <failure> in exactly
// those that failed, one more failing testcase for an interrupted run;
// the document parses back with encoding/xml and escapes what it quotes.
func TestJUnit(t *testing.T) {
	s := &summary.Summary{RunID: "r1", Clients: 10, DurationS: 12.5, Complete: true,
		SLO:    []summary.SLOResult{{Expr: "r99<2s", Pass: true, Detail: "r99 = 1s"}, {Expr: "wasted_attempts<0.1", Pass: false, Detail: "wasted_attempts = 2, over"}},
		Checks: []summary.Check{{Name: "deploy", Pass: true, Detail: "`a && b <c>`: exit status 0"}}}
	for _, tc := range []struct {
		name        string
		interrupted bool
		tests       int
		failed      []string
	}{
		{"complete", false, 3, []string{"slo wasted_attempts<0.1"}},
		{"interrupted", true, 4, []string{"slo wasted_attempts<0.1", "run"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.Interrupted = tc.interrupted
			var b bytes.Buffer
			if err := EncodeJUnit(&b, JUnitOf(s, "ws://<redacted>@127.0.0.1:1/", time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))); err != nil {
				t.Fatal(err)
			}
			var doc JUnitSuites
			if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
				t.Fatalf("does not parse: %v\n%s", err, b.String())
			}
			st := doc.Suites[0]
			var failed []string
			for _, c := range st.Cases {
				if c.Failure != nil {
					failed = append(failed, c.Name)
					if c.Failure.Message == "" {
						t.Errorf("%s: failure without a message", c.Name)
					}
				}
			}
			if st.Tests != tc.tests || len(st.Cases) != tc.tests || st.Failures != len(tc.failed) || doc.Failures != len(tc.failed) || !equal(failed, tc.failed) {
				t.Errorf("tests %d failures %d failed %v; want %d, %v\n%s", st.Tests, st.Failures, failed, tc.tests, tc.failed, b.String())
			}
			if got := st.Cases[2].SystemOut; got != "check deploy: pass (`a && b <c>`: exit status 0)" {
				t.Errorf("system-out %q", got)
			}
			if st.Timestamp != "2026-12-01T10:00:00" || st.Properties[1].Value != "ws://<redacted>@127.0.0.1:1/" {
				t.Errorf("timestamp %q properties %v", st.Timestamp, st.Properties)
			}
		})
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestJUnitRedacted: a secret quoted by a check's line (a deploy command
// that printed a token) or in the target's query is <redacted> in every
// text of the document; the rest is kept.
func TestJUnitRedacted(t *testing.T) {
	s := &summary.Summary{RunID: "r1", Complete: true,
		Checks: []summary.Check{{Name: "deploy", Pass: false, Detail: "exit status 1: curl -H 'Authorization: Bearer S3cr3t' failed"}}}
	doc := JUnitOf(s, "wss://127.0.0.1:1/ws?access_token=S3cr3t", time.Time{}).Redacted(redact.Policy{Values: []string{"S3cr3t"}})
	var b bytes.Buffer
	if err := EncodeJUnit(&b, doc); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b.Bytes(), []byte("S3cr3t")) || !bytes.Contains(b.Bytes(), []byte("exit status 1")) {
		t.Errorf("junit.xml:\n%s", b.String())
	}
	if s.Checks[0].Detail == "" || doc.Suites[0].Properties[1].Value != "wss://127.0.0.1:1/ws?access_token=<redacted>" {
		t.Errorf("target %q", doc.Suites[0].Properties[1].Value)
	}
}

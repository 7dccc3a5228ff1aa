package report

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/summary"
)

// httpFolder writes an HTTP fleet's results folder as httpfleet does:
// 200s, then 429s, then refused connections; no WebSocket file.
func httpFolder(t *testing.T, dir string) {
	t.Helper()
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var tl results.HTTPTimeline
	lat := results.NewHistogram()
	for i := range 30 {
		off := time.Duration(i) * 10 * time.Millisecond
		status := 200
		switch {
		case i >= 20:
			status = 0
		case i >= 10:
			status = 429
		}
		tl.Add(off, status)
		results.RecordLatency(lat, time.Duration(i+1)*time.Millisecond)
	}
	h := results.HTTP{URL: "http://127.0.0.1:1/?access_token=<redacted>", Method: "GET", Policy: "exp", Requests: 30, Attempts: 30, Succeeded: 10,
		Statuses: map[string]uint64{"200": 10, "429": 10, "refused": 10}, Outcomes: map[string]uint64{"ok": 10, "status_429": 10, "refused": 10},
		LatencyMS: results.Percentiles(lat), AttemptLatencyMS: results.Percentiles(lat)}
	sum := summary.SummarizeHTTP(summary.Input{RunID: "r", End: 300 * time.Millisecond}, 3, h)
	hlog := func(name string) func(io.Writer) error {
		return func(w io.Writer) error { return results.WriteHistogramLog(w, name, lat, start, 300*time.Millisecond) }
	}
	if err := folder.Write(dir, folder.Folder{Summary: sum, Render: Render, Files: []folder.File{
		{Name: results.HTTPTimelineFile, Write: tl.WriteCSV},
		{Name: results.HTTPLatencyLogFile, Write: hlog("http")},
		{Name: results.HTTPAttemptLogFile, Write: hlog("http_attempt")},
	}}); err != nil {
		t.Fatal(err)
	}
}

// TestHTTPFleetPage: an HTTP fleet's folder loads with its own files (no
// WebSocket file listed missing) and renders goodput, statuses and
// latency plots from them, not a WebSocket run's.
func TestHTTPFleetPage(t *testing.T) {
	dir := t.TempDir()
	httpFolder(t, dir)
	run, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Missing) != 0 || run.HTTP == nil || len(run.HTTP.Buckets) != 3 || run.Latency["http"] == nil || run.Latency["http_attempt"] == nil {
		t.Fatalf("loaded: missing %v, timeline %v, latency %v", run.Missing, run.HTTP, run.Latency)
	}
	d := runDataOf(run).HTTP
	if d == nil || len(d.T) != 3 || d.Goodput[0] != 100 || d.Goodput[1] != 0 || d.Statuses["429"][1] != 100 || d.Statuses["no answer"][2] != 100 || d.Attempts[2] != 100 {
		t.Errorf("plot data %+v", d)
	}
	var b bytes.Buffer
	if err := Write(&b, []*Run{run}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{`data-chart="http-rate"`, `data-chart="http-statuses"`, `data-chart="http-latency"`, "status_429", "goodput /s"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page has no %s", want)
		}
	}
	if strings.Contains(page, `data-chart="connected"`) {
		t.Error("the page draws a WebSocket run's plots")
	}
}

// TestWriteFilePrivate: report.html is 0600, rendered again into a
// private folder or written anywhere else.
func TestWriteFilePrivate(t *testing.T) {
	dir := t.TempDir()
	httpFolder(t, dir)
	page := filepath.Join(dir, File)
	if err := os.Chmod(page, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Render(dir); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(page); st.Mode().Perm() != 0o600 {
		t.Errorf("report.html mode %v, want 0600", st.Mode().Perm())
	}
}

// TestHTTPFleetCompare: several HTTP fleets are compared by their own
// figures and curves.
func TestHTTPFleetCompare(t *testing.T) {
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	httpFolder(t, a)
	httpFolder(t, b)
	runs, err := LoadDirs([]string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := Write(&page, runs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`data-chart="cmp-goodput"`, `data-chart="cmp-http-latency"`, "<th>goodput /s</th>"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the comparison has no %s", want)
		}
	}
	if strings.Contains(page.String(), `data-chart="cmp-connected"`) {
		t.Error("the comparison draws WebSocket curves for HTTP fleets")
	}
}

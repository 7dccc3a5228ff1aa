package httpfleet

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stampede-dev/stampede/results"
)

// WriteFiles writes the run's http_timeline.csv and its two HdrHistogram
// interval logs (http_latency.hlog, http_attempt.hlog) into dir; the
// caller writes summary.json.
func (r *Result) WriteFiles(dir string) error {
	f, err := os.Create(filepath.Join(dir, results.HTTPTimelineFile))
	if err != nil {
		return fmt.Errorf("httpfleet: %w", err)
	}
	err = r.Timeline.WriteCSV(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("httpfleet: writing %s: %w", results.HTTPTimelineFile, err)
	}
	for _, l := range []struct {
		file, name string
		h          *hdrhistogram.Histogram
	}{{results.HTTPLatencyLogFile, "http", r.Latency}, {results.HTTPAttemptLogFile, "http_attempt", r.AttemptLatency}} {
		h := l.h
		f, err := os.Create(filepath.Join(dir, l.file))
		if err != nil {
			return fmt.Errorf("httpfleet: %w", err)
		}
		err = results.WriteHistogramLog(f, l.name, h, r.Start, r.Elapsed)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("httpfleet: writing %s: %w", l.file, err)
		}
	}
	return nil
}

// redacted is the URL without its password, as results record it.
func redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Redacted()
}

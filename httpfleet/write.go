package httpfleet

import (
	"io"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stampede-dev/stampede/internal/redact"
	"github.com/stampede-dev/stampede/report"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/slo"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/spec"
)

// Redacted returns the config as results record it: the URL's user info
// and secret query parameters, and the values of secret headers, hidden
// (docs/secrets.md).
func (c Config) Redacted() Config {
	c.URL = redact.URLWith(c.URL, c.SecretHeaders)
	c.Header = redact.Header(c.Header, c.SecretHeaders)
	c.Body = nil
	return c
}

// Secrets names what results must hide of the run: its secret header
// names and the values of its secret headers and URL.
func (c Config) Secrets() redact.Policy {
	return redact.Policy{Headers: c.SecretHeaders, Values: redact.Values(c.Header, c.SecretHeaders, c.URL)}
}

// Summarize is the summary.json of a fleet run: the "http" object, the
// run's length and config, cfg.SLO evaluated on it. config is what
// summary.json records as "config" (the command's settings as the user
// spelled them); nil records cfg, redacted.
func Summarize(cfg Config, res *Result, config any) *summary.Summary {
	if config == nil {
		config = cfg.Redacted()
	}
	load := cfg.HTTPFleet.WithDefaults()
	sum := summary.SummarizeHTTP(summary.Input{
		RunID: summary.NewRunID(res.Start, cfg.Retry.Seed), Seed: cfg.Retry.Seed, Config: config, End: res.Elapsed,
		Spec: &spec.Run{Kind: spec.KindHTTP, HTTPFleet: &load, Duration: load.Duration},
	}, cfg.Clients, res.Summary)
	sum.Machine = res.Machine
	sum.Interrupted = res.Interrupted
	sum.SetSLO(slo.EvalSLOs(cfg.SLO, sum))
	return sum
}

// WriteResults writes the run's results folder with folder.Write:
// summary.json, http_timeline.csv, the two HdrHistogram interval logs
// (http_latency.hlog, http_attempt.hlog) and report.html; the folder
// 0700, its files 0600, the config's secrets hidden.
func WriteResults(dir string, cfg Config, res *Result, sum *summary.Summary) error {
	return folder.Write(dir, folder.Folder{
		Summary: sum,
		Files:   res.Files(),
		Secrets: cfg.Secrets(),
		Render:  report.Render,
	})
}

// Files are the run's own files of its results folder: the timeline and
// the latency logs.
func (r *Result) Files() []folder.File {
	hlog := func(name string, h *hdrhistogram.Histogram) func(io.Writer) error {
		return func(w io.Writer) error { return results.WriteHistogramLog(w, name, h, r.Start, r.Elapsed) }
	}
	return []folder.File{
		{Name: results.HTTPTimelineFile, Write: r.Timeline.WriteCSV},
		{Name: results.HTTPLatencyLogFile, Write: hlog("http", r.Latency)},
		{Name: results.HTTPAttemptLogFile, Write: hlog("http_attempt", r.AttemptLatency)},
	}
}

package httpfleet

import (
	"context"
	"maps"
	"path/filepath"
	"slices"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stampede-dev/stampede/report/live"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/summary"
)

// RunTo is Run, then the run's summary (Summarize, recording
// cfg.Settings) and its results folder in dir (none for ""). With
// cfg.Live it serves the run's live page from before the first request
// on: the fleet's figures so far, fed while the fleet runs, and at the
// end the results folder's, whose report.html the page becomes.
func RunTo(ctx context.Context, cfg Config, dir string) (*Result, *summary.Summary, error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	cfg = cfg.withDefaults()
	m := newMeter()
	var page *live.Server
	if cfg.Live != nil {
		label := "http"
		if dir != "" {
			label = filepath.Base(dir)
		}
		var err error
		if page, err = live.StartFed(*cfg.Live, func() live.Snapshot { return m.snapshot(cfg, label) }); err != nil {
			return nil, nil, err
		}
		defer page.Close()
	}
	res := drive(ctx, cfg, m)
	sum := Summarize(cfg, res, cfg.Settings)
	if dir != "" {
		if err := WriteResults(dir, cfg, res, sum); err != nil {
			return res, sum, err
		}
	}
	if page != nil {
		if err := page.Finish(dir, live.FinishWait); err != nil {
			return res, sum, err
		}
	}
	return res, sum, nil
}

// snapshot is the run so far as the live page shows it: the figures
// counted until now, as its results folder would hold them, labelled
// label. Before the run starts it is an empty run's.
func (m *meter) snapshot(cfg Config, label string) live.Snapshot {
	now := cfg.Now()
	m.mu.Lock()
	start := m.start
	s := m.sum
	s.Statuses, s.Outcomes = maps.Clone(s.Statuses), maps.Clone(s.Outcomes)
	tl := results.HTTPTimeline{Buckets: slices.Clone(m.timeline.Buckets)}
	lat, att := m.lat.Clone(), m.att.Clone()
	m.mu.Unlock()
	if start.IsZero() {
		start = now
	}
	at := max(0, now.Sub(start))
	res := &Result{Summary: derive(cfg, s, &tl, lat, att, at), Timeline: tl, Latency: lat, AttemptLatency: att, Start: start, Elapsed: at}
	sum := Summarize(cfg, res, cfg.Settings)
	return live.Snapshot{At: at, Label: label, RunID: sum.RunID, Seed: sum.Seed, Clients: cfg.Clients, SLO: cfg.SLO,
		HTTP: &live.HTTPSnapshot{Summary: sum, Timeline: tl, Latency: map[string]*hdrhistogram.Histogram{"http": lat, "http_attempt": att}}}
}

package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/stampede-dev/stampede/report"
	"github.com/stampede-dev/stampede/results"
)

// Summarize computes the summary of a simulated run, as storm.Run does for
// a real one, marked Simulated. slo, when not empty, is evaluated and
// recorded.
func Summarize(res *Result, slo []results.SLO) *results.Summary {
	cfg := res.Config
	var config any = cfg
	if cfg.Settings != nil {
		config = cfg.Settings
	}
	in := results.Input{
		RunID:      results.NewRunID(cfg.Start, cfg.Seed),
		Seed:       cfg.Seed,
		Config:     config,
		Report:     res.Report,
		Events:     res.Events,
		Partials:   res.Partials,
		End:        cfg.Duration,
		Kernel:     res.Kernel,
		KernelRead: true,
	}
	sum := results.Summarize(in)
	sum.Simulated = true
	sum.Complete = true
	sum.SetSLO(results.EvalSLOs(slo, sum))
	return sum
}

// WriteResults writes a simulated run's results folder as a real run's
// (storm.WriteResults): summary.json, timeline.csv, the HdrHistogram logs
// and report.html rendered from them. There is no resources.csv or
// kernel.csv: nothing was sampled.
func WriteResults(dir string, sum *results.Summary, rep *results.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if err := sum.WriteJSON(dir); err != nil {
		return err
	}
	name := filepath.Join(dir, results.TimelineFile)
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	err = results.WriteTimelineCSV(f, results.TimelineRows(rep.Timeline, sum.Events, sum.DurationS))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := results.WriteHistogramLogs(dir, rep, time.Duration(sum.DurationS*float64(time.Second))); err != nil {
		return err
	}
	return report.Render(dir)
}

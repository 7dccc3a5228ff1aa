package sim

import (
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
	if res.Interrupted {
		in.End = res.End // what the figures cover
	}
	sum := results.Summarize(in)
	sum.Simulated = true
	sum.SimulatedNote = CalibrationNote(cfg.Clients)
	sum.Complete = true
	sum.Interrupted = res.Interrupted
	sum.SetSLO(results.EvalSLOs(slo, sum))
	return sum
}

// WriteResults writes a simulated run's results folder as a real run's
// (results.Write): summary.json, timeline.csv, the HdrHistogram logs and
// report.html rendered from them; the folder 0700, its files 0600. There
// is no resources.csv or kernel.csv: nothing was sampled.
func WriteResults(dir string, sum *results.Summary, rep *results.Report) error {
	return results.Write(dir, results.Folder{Summary: sum, Report: rep, Render: report.Render})
}

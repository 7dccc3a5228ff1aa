package sim

import (
	"github.com/stampede-dev/stampede/report"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/slo"
	"github.com/stampede-dev/stampede/results/summary"
)

// Summarize computes the summary of a simulated run, as storm.Run does for
// a real one, marked Simulated. slos, when not empty, are evaluated and
// recorded.
func Summarize(res *Result, slos []slo.SLO) *summary.Summary {
	cfg := res.Config
	var config any = cfg
	if cfg.Settings != nil {
		config = cfg.Settings
	}
	in := summary.Input{
		RunID:      summary.NewRunID(cfg.Start, cfg.Seed),
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
	sum := summary.Summarize(in)
	sum.Simulated = true
	sum.SimulatedNote = CalibrationNote(cfg.Clients)
	sum.Complete = true
	sum.Interrupted = res.Interrupted
	sum.SetSLO(slo.EvalSLOs(slos, sum))
	return sum
}

// WriteResults writes a simulated run's results folder as a real run's
// (folder.Write): summary.json, timeline.csv, the HdrHistogram logs and
// report.html rendered from them; the folder 0700, its files 0600. There
// is no resources.csv or kernel.csv: nothing was sampled.
func WriteResults(dir string, sum *summary.Summary, rep *results.Report) error {
	return folder.Write(dir, folder.Folder{Summary: sum, Report: rep, Render: report.Render})
}

package sim

import (
	"github.com/stampede-dev/stampede/report"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/slo"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/spec"
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
		Spec:       cfg.runSpec(),
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

// runSpec is what summary.json records as a simulated run's spec: the
// fleet and the server it modelled, every default applied (the model's
// own knobs are its config's).
func (c Config) runSpec() *spec.Run {
	c = c.withDefaults()
	return &spec.Run{Kind: spec.KindSimulate, Client: &c.Client, Server: &c.Server, Duration: c.Duration, Chaos: c.ScheduleText}
}

// WriteResults writes a simulated run's results folder as a real run's
// (folder.Write): summary.json, timeline.csv, the HdrHistogram logs and
// report.html rendered from them; the folder 0700, its files 0600. There
// is no resources.csv or kernel.csv: nothing was sampled.
func WriteResults(dir string, sum *summary.Summary, rep *results.Report) error {
	return folder.Write(dir, folder.Folder{Summary: sum, Report: rep, Render: report.Render})
}

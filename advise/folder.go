package advise

import (
	"github.com/stampede-dev/stampede/report"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/sim"
)

// WriteFolder writes the search's results folder to out (results/folder):
// sum (Summary, with any verifying runs) and the report of the
// recommended policy's simulation.
func (r *Result) WriteFolder(out string, sum *summary.Summary) error {
	return folder.Write(out, folder.Folder{Summary: sum, Report: r.Report(), Render: report.Render})
}

// WriteFolder writes the simulation the search had under way when it was
// interrupted to out, as a results folder marked interrupted, with
// settings (the command line's, as Summary's) recorded as its config.
func (e *InterruptedError) WriteFolder(out string, settings any) error {
	run := *e.Run
	run.Config.Settings = settings
	sum := sim.Summarize(&run, nil)
	return folder.Write(out, folder.Folder{Summary: sum, Report: run.Report, Render: report.Render})
}

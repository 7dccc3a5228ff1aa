package main

import (
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/report"
	"github.com/stampede-dev/stampede/results/folder"
	"github.com/stampede-dev/stampede/results/summary"
)

func init() {
	register(&cli.Command{
		Name:      "report",
		Usage:     "render one results folder's report.html again, or compare several runs",
		UsageText: "stampede report [--out FILE] DIR [DIR...]",
		Description: "From the folders alone (summary.json, timeline.csv, *.hlog, resources.csv, kernel.csv):\n" +
			"one DIR renders DIR/report.html again; several print a table of the key figures of each\n" +
			"run's worst event and write a comparison page (./compare.html unless --out) with the\n" +
			"runs' curves overlaid. A bench folder (with bench.json) stands for all its runs.\n" +
			"A simulated run (stampede simulate) and a real one, given together, are also printed\n" +
			"figure by figure, side by side, with the simulator's error relative to the real run.\n" +
			"The page is self-contained: it opens from disk with no network.\n\n" +
			"Example: stampede report stampede-results/first; stampede report stampede-results/first stampede-results/fixed --out compare.html",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "write the page to `FILE` (default DIR/report.html for one run, ./compare.html for several)"},
		},
		Action: reportAction,
	})
}

func reportAction(c *cli.Context) error {
	if c.NArg() == 0 {
		return fmt.Errorf("report: give at least one results folder DIR")
	}
	out := c.String("out")
	if out != "" { // before the runs are read and compared
		if err := folder.CheckFile(out); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	runs, err := report.LoadDirs(c.Args().Slice())
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if len(runs) > 1 {
		if b := report.MixedBanner(runs); b != "" {
			fmt.Fprintf(c.App.Writer, "note: %s\n", b)
		}
		rows := make([]summary.Row, len(runs))
		for i, r := range runs {
			rows[i] = summary.Row{Policy: r.Label, Summary: r.Summary}
		}
		if err := report.WriteComparison(c.App.Writer, rows); err != nil {
			return err
		}
		if len(runs) == 2 && runs[0].Summary.Simulated != runs[1].Summary.Simulated {
			// A simulated run and a real one: side by side, the
			// simulator's error relative to the real run.
			realRow, simRow := rows[0], rows[1]
			if runs[0].Summary.Simulated {
				realRow, simRow = rows[1], rows[0]
			}
			fmt.Fprintln(c.App.Writer)
			if err := report.WriteSideBySide(c.App.Writer, realRow, simRow); err != nil {
				return err
			}
		}
		switch {
		case out != "":
		case c.NArg() == 1: // a bench folder
			out = filepath.Join(c.Args().First(), report.File)
		default:
			out = "compare.html"
		}
	} else if out == "" {
		out = filepath.Join(runs[0].Dir, report.File)
	}
	if err := report.WriteFile(out, runs); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "report: %s\n", out)
	return nil
}

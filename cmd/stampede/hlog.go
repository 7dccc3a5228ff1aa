package main

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/folder"
)

func init() {
	register(&cli.Command{
		Name:      "hlog",
		Usage:     "merge HdrHistogram interval logs (.hlog) exactly and print their percentiles",
		UsageText: "stampede hlog FILE [FILE...]",
		Description: "Reads every interval of every FILE (a results folder's connect.hlog, ttr.hlog, ...), merges\n" +
			"them into one histogram (a histogram of another range or precision than stampede's is refused,\n" +
			"not approximated) and prints: values, p50, p90, p99, p99.9 and max in milliseconds.\n" +
			"The merged file of a run over agents equals the merge of agents/*/ of the same name:\n\n" +
			"Example: stampede hlog out/ttr.hlog; stampede hlog out/agents/*/ttr.hlog",
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return errors.New("hlog: give at least one .hlog FILE")
			}
			sum := results.NewHistogram()
			for _, f := range c.Args().Slice() {
				h, err := folder.ReadHistogramLogFile(f)
				if err != nil {
					return fmt.Errorf("%s: %w", f, err)
				}
				sum.Merge(h)
			}
			msOf := func(q float64) float64 { return float64(sum.ValueAtQuantile(q)) / 1000 }
			fmt.Fprintf(c.App.Writer, "values %d  p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f ms\n",
				sum.TotalCount(), msOf(50), msOf(90), msOf(99), msOf(99.9), float64(sum.Max())/1000)
			return nil
		},
	})
}

package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/sim"
)

func init() {
	register(&cli.Command{
		Name:      "contention",
		Usage:     "the AWS \"Exponential Backoff And Jitter\" contention model, with the backoff package's policies",
		UsageText: "stampede contention [--from N] [--to N] [--step N] [--trials T] [--seed S]",
		Description: "N clients race to write one row by optimistic concurrency (read the version, write it;\n" +
			"a stale write fails and the client backs off), network delay |Normal(10 ms, 2 ms)|, backoff\n" +
			"base 5 ms and cap 2 s, policies none, exponential, decorrelated, equal and full built from the\n" +
			"backoff package. Prints the server's calls and the time until the last client succeeded,\n" +
			"means over --trials, per fleet size, and at 100 clients the study's published figures beside\n" +
			"them (docs/simulator.md).\n\n" +
			"Example: stampede contention --from 10 --to 100 --step 30 --trials 20",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "from", Value: 10, Usage: "smallest fleet `N`"},
			&cli.IntFlag{Name: "to", Value: 190, Usage: "largest fleet `N`"},
			&cli.IntFlag{Name: "step", Value: 10, Usage: "fleet size step `N`"},
			&cli.IntFlag{Name: "trials", Value: 100, Usage: "runs `T` averaged per figure (the study's 100)"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed `S`"},
		},
		Action: contentionAction,
	})
}

func contentionAction(c *cli.Context) error {
	from, to, step, trials := c.Int("from"), c.Int("to"), c.Int("step"), c.Int("trials")
	switch {
	case from <= 0:
		return fmt.Errorf("--from: must be positive, got %d", from)
	case to < from:
		return fmt.Errorf("--to: must be at least --from (%d), got %d", from, to)
	case step <= 0:
		return fmt.Errorf("--step: must be positive, got %d", step)
	case trials <= 0:
		return fmt.Errorf("--trials: must be positive, got %d", trials)
	}
	pols := sim.ContentionPolicies()
	tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "clients\t")
	for _, p := range pols {
		fmt.Fprintf(tw, "%s calls\t%s ms\t", p.Name, p.Name)
	}
	fmt.Fprintln(tw)
	for n := from; n <= to; n += step {
		fmt.Fprintf(tw, "%d\t", n)
		for _, p := range pols {
			r, err := sim.Contention(p, n, trials, c.Uint64("seed"))
			if err != nil {
				return err
			}
			fmt.Fprintf(tw, "%.0f\t%.0f\t", r.Calls, r.TimeMS)
		}
		fmt.Fprintln(tw)
		if n == 100 {
			fmt.Fprint(tw, "study\t")
			for _, p := range pols {
				ref := sim.ContentionReference[p.Name]
				fmt.Fprintf(tw, "%.0f\t%.0f\t", ref[0], ref[1])
			}
			fmt.Fprintln(tw)
		}
	}
	return tw.Flush()
}

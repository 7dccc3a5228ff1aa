package main

import (
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

// contentionAction maps the flags to a sim.ContentionSweep and prints its
// table.
func contentionAction(c *cli.Context) error {
	sw := sim.ContentionSweep{From: c.Int("from"), To: c.Int("to"), Step: c.Int("step"), Trials: c.Int("trials"), Seed: c.Uint64("seed")}
	if err := sw.Validate(); err != nil {
		return flagError(err)
	}
	return sw.WriteTable(c.App.Writer)
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/storm"
)

// Exit statuses of the commands that run a fleet, besides 0 (done, every
// SLO passed) and 1 (an SLO failed): 2 for a usage error or a run that is
// incomplete (a process crashed, an agent was lost), 130 for a run stopped
// by Ctrl-C (SIGINT or SIGTERM), its folder still written.
const (
	exitIncomplete  = 2
	exitInterrupted = 130
)

// runStorm runs cfg with storm.Run (run, loadgen), prints the summary and
// maps the outcome to an exit status. The first Ctrl-C stops the fleet at
// once and still writes the folder; a second one ends the process, and its
// agents with it (they die with their parent).
func runStorm(c *cli.Context, cfg storm.Config, after func(*storm.Result)) error {
	ctx, cancel := context.WithCancel(c.Context)
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		if _, ok := <-sigs; !ok {
			return
		}
		fmt.Fprintln(c.App.ErrWriter, "stampede: stopping the fleet; results are still written (Ctrl-C again to kill everything)")
		cancel()
		if _, ok := <-sigs; ok {
			os.Exit(exitInterrupted)
		}
	}()
	res, err := storm.Run(ctx, cfg)
	if res == nil {
		return flagError(err)
	}
	if after != nil {
		after(res)
	}
	if perr := res.Summary.WriteText(c.App.Writer); perr != nil {
		return perr
	}
	if cfg.Out != "" {
		fmt.Fprintf(c.App.Writer, "results: %s\n", cfg.Out)
	}
	switch {
	case errors.Is(err, storm.ErrInterrupted):
		return cli.Exit("interrupted: the fleet was stopped early; the results cover what ran", exitInterrupted)
	case errors.Is(err, storm.ErrIncomplete):
		return cli.Exit("incomplete: a process of the run exited when nothing scheduled it (see the crash events)", exitIncomplete)
	case err != nil:
		return flagError(err)
	}
	return sloExit(res.Summary)
}

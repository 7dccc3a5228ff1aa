package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/report"
	"github.com/stampede-dev/stampede/session"
	"github.com/stampede-dev/stampede/storm"
)

// Exit statuses of the commands that run a fleet, besides 0 (done, every
// SLO passed) and 1 (an SLO failed, or the fleet never connected): 2 for a usage error or a run that is
// incomplete (a process crashed, an agent was lost), 130 for a run stopped
// by Ctrl-C (SIGINT or SIGTERM), its folder still written.
const (
	exitIncomplete  = 2
	exitInterrupted = 130
)

// runStorm runs cfg with storm.Run (run, loadgen), prints the summary and
// maps the outcome to an exit status.
func runStorm(c *cli.Context, cfg storm.Config, after func(*storm.Result)) error {
	ctx, stop := interruptible(c)
	defer stop()
	res, err := storm.Run(ctx, cfg)
	if res == nil {
		return flagError(err)
	}
	if after != nil {
		after(res)
	}
	if perr := report.WriteText(c.App.Writer, res.Summary); perr != nil {
		return perr
	}
	if p := res.Summary.ServerSpeaks; p != "" {
		fmt.Fprintf(c.App.Writer, "the server speaks %s; use --protocol %s\n", session.Describe(p), p)
	}
	if cfg.Out != "" {
		fmt.Fprintf(c.App.Writer, "results: %s\n", cfg.Out)
	}
	if err != nil {
		return runError(err)
	}
	return sloExit(res.Summary)
}

// interruptible returns a context that the first Ctrl-C (SIGINT or
// SIGTERM) cancels: the fleet stops at once and the folder is still
// written. A second one ends the process, and its agents with it (they
// die with their parent). stop releases the signals.
func interruptible(c *cli.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(c.Context)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
		case <-done:
			return
		}
		fmt.Fprintln(c.App.ErrWriter, "stampede: stopping the fleet; results are still written (Ctrl-C again to kill everything)")
		cancel()
		select {
		case <-sigs:
			os.Exit(exitInterrupted)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}

// runError maps the error of a run (or a bench of runs) whose figures were
// written to its exit status: 130 interrupted, 2 incomplete or failed, 1
// for a run that tested nothing (its fleet never connected).
func runError(err error) error {
	var unreached *storm.UnreachableError
	switch {
	case errors.Is(err, storm.ErrInterrupted):
		return cli.Exit("interrupted: the fleet was stopped early; the results cover what ran", exitInterrupted)
	case errors.Is(err, storm.ErrIncomplete):
		return cli.Exit("incomplete: part of the run is missing (a process crashed or an agent was lost; see the crash events and the log)", exitIncomplete)
	case errors.As(err, &unreached):
		return cli.Exit(unreached.Error(), 1)
	}
	return flagError(err)
}

// Command stampede-worker is a lean agent for loadgen shares, speaking the
// agent protocol (docs/agent.md) on stdin/stdout: what `stampede run`,
// `bench` and `loadgen` start for each loadgen share, and a target group
// for each of its processes when the target has no store (the echo
// target). It does what the
// hidden `stampede agent` subcommand does, in a binary without the CLI,
// the report and the metrics server: each loadgen or target process then
// costs less RSS (about 9 MiB instead of 22 for a target process), which
// matters when a large fleet needs many of them. The stampede
// binary uses it when it is installed beside it, and falls back to
// `stampede agent` otherwise. It imports neither networked store backend
// (store/redisstore, store/pgstore), so their drivers stay out of every
// loadgen process (docs/protocol.md, "Stores").
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/stampede-dev/stampede/agent"
	"github.com/stampede-dev/stampede/calibration"
)

// gcPercent is the worker's GOGC unless the environment sets one: a heap
// may grow by half its live size before a collection, not by all of it.
// A worker holds little live heap and makes much short-lived garbage
// (failed attempts in a herd, results streaming), so the default's
// headroom was most of its heap. The figure is the embedded calibration
// file's worker.gc_percent, with the run that measured it and what it
// saved (package calibration; docs/sizing.md, "Memory per connection").
var gcPercent = calibration.MustInt("worker.gc_percent")

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := agent.ServeStdio(ctx, os.Stdin, os.Stdout, agent.AgentConfig{}); err != nil {
		fmt.Fprintln(os.Stderr, "stampede-worker:", err)
		os.Exit(1)
	}
}

// Command stampede-worker is one loadgen worker process, speaking the
// cluster protocol on stdin/stdout: what `stampede run`, `bench` and
// `loadgen` start when a fleet needs several processes. It does what the
// hidden `stampede worker` subcommand does, in a binary that links only the
// loadgen: each worker process then costs about 7 MB of RSS instead of
// about 16 MB, which matters when a 50,000-client fleet needs four of them.
// The stampede binary uses it when it is installed beside it, and falls
// back to `stampede worker` otherwise.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/stampede-dev/stampede/cluster"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cluster.Serve(ctx, cluster.NewStream(os.Stdin, os.Stdout, nil)); err != nil {
		fmt.Fprintln(os.Stderr, "stampede-worker:", err)
		os.Exit(1)
	}
}

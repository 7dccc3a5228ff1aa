package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/cluster"
)

func init() {
	register(&cli.Command{
		Name:   "agent",
		Usage:  "run one agent: a plan on stdin, messages on stdout (started by run, bench and loadgen; docs/agent.md)",
		Hidden: true,
		Action: func(c *cli.Context) error {
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			return cluster.Serve(ctx, cluster.NewStream(os.Stdin, os.Stdout, nil), cluster.AgentConfig{})
		},
	})
}

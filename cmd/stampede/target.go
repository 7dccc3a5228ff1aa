package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/agent"
	"github.com/stampede-dev/stampede/storm"
	"github.com/stampede-dev/stampede/target"
	"github.com/stampede-dev/stampede/target/group"
)

// targetCmd is `stampede target`. Its flag names are also what
// target.Config.Flags renders for group children; the round trip is tested.
var targetCmd = &cli.Command{
	Name:      "target",
	Usage:     "run the WebSocket server a reconnect storm is aimed at",
	UsageText: "stampede target [--addr IP:PORT] [--backlog N] [--accept-rate R] [--hold D] [--tls] [--procs N] ...",
	Description: "An echo WebSocket server on an epoll reactor whose capacity is a set of knobs: an explicit\n" +
		"listen backlog, an accept rate, CPU per handshake, a connection cap answered 503 with\n" +
		"Retry-After. When it starts accepting it prints one JSON line on stdout:\n" +
		`  {"ready":true,"addr":"127.0.0.1:PORT","pid":N,"control":"127.0.0.1:CPORT","token":"TOKEN","t":"..."}` + "\n" +
		"SIGTERM sends close 1001 to every client and exits 0; SIGUSR1 closes everything without\n" +
		"close frames (clients see 1006) and exits 0. The HTTP control API on --control-addr takes\n" +
		"POST /stall?for=3s, /backlog?n=16, /accept-rate?r=500,\n" +
		"/reject?status=503&retry_after=2s&for=3s, /shutdown?mode=graceful|abrupt (graceful takes\n" +
		"spread=D, hint_after=D, hint=D: closes spread over D, 1013 with a return hint) and GET /stats,\n" +
		"each with the ready line's token (else 401; docs/cli.md \"Control API\"):\n" +
		"  curl -H 'Authorization: Bearer TOKEN' http://127.0.0.1:CPORT/stats\n" +
		"  curl -H 'Authorization: Bearer TOKEN' -X POST 'http://127.0.0.1:CPORT/stall?for=3s'\n" +
		"--procs N runs N processes on one port (SO_REUSEPORT); signals and control requests go to all.\n" +
		"--admit-ramp D ramps a started process's accept rate up from --admit-floor; --shed D answers\n" +
		"upgrades beyond --accept-rate 503 at once with a Retry-After of 1 s to D.\n" +
		"--store URL makes it speak the message protocol (msg/ack/deliver, join, resume) instead of echo;\n" +
		"the store keeps messages across restarts (one process per store).\n" +
		"Requests to " + target.HTTPPath + " (any method) are plain HTTP: 200 under --http-limit, else\n" +
		"--limit-status with Retry-After; a repeated Idempotency-Key's 200 says Idempotent-Replayed: true.",
	Flags: append(knobFlags(targetFields...),
		&cli.IntFlag{Name: "procs", Value: 1, Usage: "server processes `N` on one port (one process holds about " + thousands(storm.PerProcess) + " connections here)"},
		&cli.StringFlag{Name: "control-addr", Value: "127.0.0.1:0", Usage: "address `IP:PORT` of the HTTP control API"},
	),
	Action: targetAction,
}

func init() { register(targetCmd) }

// targetAction maps the flags to a group.RunConfig and runs the target
// until it is shut down.
func targetAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("target: unexpected argument %q", c.Args().First())
	}
	rc := group.RunConfig{
		Server:      targetConfig(c, targetFields...),
		ControlAddr: c.String("control-addr"),
		Stdout:      c.App.Writer,
		Exit:        os.Exit,
	}
	rc.Server.Procs = c.Int("procs")
	if rc.Server.Procs > 1 {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("target: finding the stampede binary for --procs: %w", err)
		}
		rc.Spawn = agent.SpawnServer(exe, []string{"agent"}, c.App.ErrWriter)
	}
	return flagError(group.Run(c.Context, rc)) // Run validates rc once, before any socket opens
}

// targetConfig maps the flags of the given server knobs to a
// target.Config.
func targetConfig(c *cli.Context, fields ...string) target.Config {
	var cfg target.Config
	_ = fillKnobs(c, &cfg.Server, fields...) // no server knob parses a string
	return cfg
}

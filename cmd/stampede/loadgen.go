package main

import (
	"fmt"
	"net/http"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/loadgen"
	"github.com/stampede-dev/stampede/spec"
	"github.com/stampede-dev/stampede/storm"
)

// defaultLoadgenPolicy is the policy of `stampede loadgen` without --policy.
const defaultLoadgenPolicy = "exp:initial=1s,max=30s,jitter=0.5"

func init() { register(loadgenCmd) }

// loadgenCmd is `stampede loadgen`; run and bench take its fleet flags.
var loadgenCmd = &cli.Command{
	Name:      "loadgen",
	Usage:     "run a fleet of WebSocket clients against any server",
	UsageText: "stampede loadgen --url ws://HOST:PORT/PATH [--clients N] [--ramp R] [--policy SPEC] [--duration D] [flags]",
	Description: "Connects --clients WebSocket clients (epoll reactors, raw sockets) at --ramp clients/s,\n" +
		"holds them for --duration, reconnects them with the backoff --policy whenever the server\n" +
		"drops them, and prints a summary: attempts, failures by class, disconnects, connect\n" +
		"latency, and clients that gave up with their last error. --out DIR also writes the\n" +
		"results folder (its files are listed at --out), with outages detected from the clients'\n" +
		"side. A fleet larger than one process may hold (about " + thousands(storm.PerProcess) + " connections) runs\n" +
		"in several worker processes, started and collected automatically.\n" +
		"ws:// clients run on epoll reactors (about 200 bytes each); wss:// clients are one\n" +
		"goroutine each with TLS state (several KiB each).\n\n" +
		"Example (a server on this machine, 30 s): stampede loadgen --url ws://127.0.0.1:9001/ \\\n" +
		"           --clients 500 --ramp 250 --duration 30s --out stampede-results/loadgen",
	Flags:  loadgenFlagList(),
	Before: requireFlags("url"),
	Action: loadgenAction,
}

func loadgenFlagList() []cli.Flag {
	flags := knobFlags("Client.URL")
	flags = append(flags, fleetFlags(fleetDefaults{policy: defaultLoadgenPolicy, out: "none: the summary is printed, no folder written"})...)
	flags = append(flags,
		&headersFlag{cli.GenericFlag{Name: "header", Value: &headerFlag{}, Usage: "upgrade request header `'Name: value'` (repeatable; -H is the same)"}},
		&headersFlag{cli.GenericFlag{Name: "H", Value: &headerFlag{}, Hidden: true}},
	)
	flags = append(flags, knobFlags("Client.Protocols", "Client.TLSInsecure", "Client.SecretHeaders")...)
	flags = append(flags, haproxySocketFlag, allowRemoteFlag)
	return append(flags, agentFlags()...)
}

func loadgenAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("loadgen: unexpected argument %q", c.Args().First())
	}
	if err := refuseRemote(c, "--url", c.String("url")); err != nil {
		return err
	}
	cfg, err := loadgenConfig(c)
	if err != nil {
		return err
	}
	run := storm.Config{Fleet: cfg, LoadgenProcs: c.Int("loadgen-procs")}
	if err := fleetRunConfig(c, "", &run); err != nil {
		return err
	}
	if run.HAProxySockets, err = haproxySockets(c); err != nil {
		return err
	}
	if err := agentRunConfig(c, &run); err != nil {
		return err
	}
	run.Settings = fleetSettings(c, run.Fleet)
	return runStorm(c, run, func(res *storm.Result) {
		if n, last := res.Report.FirstConnects(); n > 0 && last > 0 {
			fmt.Fprintf(c.App.Writer, "first connects: %d clients within %.3fs of the start (%.0f/s)\n", n, last.Seconds(), float64(n)/last.Seconds())
		}
	})
}

// loadgenConfig maps the flags to a loadgen.Config; a bad value gives an
// error naming its flag.
func loadgenConfig(c *cli.Context) (loadgen.Config, error) {
	cfg, err := fleetConfig(c)
	if err != nil {
		return cfg, err
	}
	cfg.URL = c.String("url")
	for _, h := range c.Generic("header").(*headerFlag).fields {
		if cfg.Header == nil {
			cfg.Header = http.Header{}
		}
		cfg.Header.Add(h[0], h[1])
	}
	if err := fillKnobs(c, &cfg.Client, "Client.Protocols", "Client.TLSInsecure", "Client.SecretHeaders",
		"Client.TLSCAFile", "Client.TLSCertFile", "Client.TLSKeyFile", "Client.TLSServerName"); err != nil {
		return cfg, err
	}
	return cfg, nil // storm.Run validates it, once, before any socket opens
}

// fleetConfig maps the fleet flags shared by loadgen, run and bench to a
// loadgen.Config without URL, which each command sets.
func fleetConfig(c *cli.Context) (loadgen.Config, error) {
	var cfg loadgen.Config
	if err := fillKnobs(c, &cfg.Client, fleetFields...); err != nil {
		return cfg, err
	}
	if err := fillSession(c, &cfg.Client); err != nil {
		return cfg, err
	}
	if c.IsSet("ping-interval") && cfg.PingInterval == 0 {
		return cfg, fmt.Errorf("--ping-interval: 0 is no interval: leave it unset for the default, or give -1s to turn the keepalive off")
	}
	// The message protocol's own flags imply its mode, so that
	// `stampede run --rooms 200` speaks it.
	if !c.IsSet("mode") && (c.IsSet("rooms") || c.Bool("no-resume") || c.Bool("no-retry-queue")) {
		cfg.Mode = spec.ModeStampede
	}
	return cfg, nil
}

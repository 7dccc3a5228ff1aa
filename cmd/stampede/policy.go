package main

import (
	"encoding/json"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/backoff"
)

// Bounds of the policy preview's flags: enough for any real schedule and
// for the simulator's fleet sizes, small enough to answer in seconds.
const (
	maxPreviewAttempts = 100_000
	maxPreviewClients  = 100_000_000
)

func init() {
	register(&cli.Command{
		Name:      "policy",
		Usage:     "preview a backoff policy's delays, or a fleet's first-retry spread, without sockets",
		UsageText: "stampede policy --policy SPEC [--attempts N] [--seed S] [--client C] [--json]\nstampede policy --policy SPEC --clients N [--seed S] [--json]",
		Description: "A policy is KIND[:key=value,...]: KIND one of fixed, exp, full, equal, decorrelated;\n" +
			"keys initial, multiplier, max, jitter, spread (MIN-MAX), attempts.\n" +
			"KIND may also name a client library's own rule, with its own option names:\n" +
			"socketio, signalr, phoenix, centrifuge, graphql-ws, reconnecting-websocket, actioncable,\n" +
			"pusher, ably, mqttjs, paho, nats, grpc, stompjs, sgcwebsockets (docs/clients.md).\n" +
			"Without --clients, prints one client's delays before retries 1..N, one per line.\n" +
			"With --clients, prints a histogram of every client's first retry per 100 ms window\n" +
			"and its peak-to-mean (the herd metric of a run).\n\n" +
			"Example: stampede policy --policy exp:initial=1s,max=60s,jitter=0.5 --attempts 6; stampede policy --policy fixed:initial=1s --clients 2000",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "policy", Usage: "backoff policy `SPEC`, e.g. exp:initial=1s,max=60s,jitter=0.5"},
			&cli.IntFlag{Name: "attempts", Value: 10, Usage: "number of retries `N` to print (1.." + fmt.Sprint(maxPreviewAttempts) + ")"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "run seed `S` for every random draw"},
			&cli.Uint64Flag{Name: "client", Usage: "client ID `C` whose delays to print"},
			&cli.IntFlag{Name: "clients", Usage: "fleet size `N`: print the first-retry spread instead (1.." + fmt.Sprint(maxPreviewClients) + ")"},
			&cli.BoolFlag{Name: "json", Usage: "print JSON instead of text"},
		},
		Action: policyAction,
	})
}

// policyAction maps flags to one backoff call and prints its result.
func policyAction(c *cli.Context) error {
	if c.Args().Present() {
		return fmt.Errorf("policy: unexpected argument %q (flags only)", c.Args().First())
	}
	if !c.IsSet("policy") {
		return fmt.Errorf("--policy is required, e.g. --policy exp:initial=1s,max=60s,jitter=0.5")
	}
	p, err := backoff.Parse(c.String("policy"))
	if err != nil {
		return fmt.Errorf("--policy: %w", err)
	}
	seed := c.Uint64("seed")
	out := c.App.Writer

	if c.IsSet("clients") {
		if c.IsSet("attempts") || c.IsSet("client") {
			return fmt.Errorf("--clients previews a fleet's first retry; it does not take --attempts or --client")
		}
		n := c.Int("clients")
		if n < 1 || n > maxPreviewClients {
			return fmt.Errorf("--clients must be within 1..%d, got %d", maxPreviewClients, n)
		}
		s := backoff.FirstRetrySpread(p, seed, n)
		if c.Bool("json") {
			return writeJSON(c, s)
		}
		return s.WriteText(out)
	}
	n := c.Int("attempts")
	if n < 1 || n > maxPreviewAttempts {
		return fmt.Errorf("--attempts must be within 1..%d, got %d", maxPreviewAttempts, n)
	}
	s := p.Schedule(seed, c.Uint64("client"), n)
	if c.Bool("json") {
		err = writeJSON(c, s)
	} else {
		err = s.WriteText(out)
	}
	if err == nil && len(s.Delays) < n {
		// After the delays, on stderr, so stdout stays one delay per line.
		fmt.Fprintf(c.App.ErrWriter, "stampede: policy gives up after %d attempts; showing %d of %d\n", len(s.Delays), len(s.Delays), n)
	}
	return err
}

// writeJSON prints v as indented JSON on the app's writer.
func writeJSON(c *cli.Context, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = c.App.Writer.Write(append(b, '\n'))
	return err
}

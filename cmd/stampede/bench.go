package main

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/report"
	"github.com/stampede-dev/stampede/results/summary"
	"github.com/stampede-dev/stampede/storm"
)

// The bench's defaults: a storm that shows the herd on this machine in
// under five minutes for the four default policies. The server has a
// capacity limit (a small backlog and an accept rate): without one,
// loopback absorbs any herd and jitter only slows recovery (FIELD-NOTES).
const (
	benchClients          = 10000
	benchBacklog          = 128
	benchAcceptRate       = 2000
	benchChaos            = "at 8s restart abrupt down=2s"
	benchDuration         = 45 * time.Second
	benchSynRetries       = 2
	benchHandshakeTimeout = 5 * time.Second
)

func init() {
	register(&cli.Command{
		Name:  "bench",
		Usage: "the same storm once per backoff policy, then a comparison table",
		UsageText: "stampede bench [--policies SPEC ...] [--clients N] [--chaos SCHEDULE] [--out DIR] [flags]\n" +
			"stampede bench --mitigations [--policy SPEC] [--mitigation-window D] [flags]",
		Description: "Runs `stampede run` once per --policies entry against the same target, schedule and\n" +
			"fleet, each into DIR/N-POLICY/, writes DIR/bench.json, and prints one row per policy:\n" +
			"R99, R100, herd peak per 100 ms, peak-to-mean, failed attempts per client after the\n" +
			"target was ready (wasted) and during the outage, and ListenOverflows.\n" +
			"The defaults (10,000 clients, backlog 128, 2,000 accepts/s, an abrupt restart with 2 s\n" +
			"down, TCP_SYNCNT 2, 5 s upgrade timeout) make the herd visible on a 2-core machine\n" +
			"and finish in under five minutes.\n\n" +
			"With --mitigations it compares what the server can do for a fleet it cannot change: one\n" +
			"policy (--policy, default fixed:initial=1s) against the server as it is (none), an\n" +
			"admission ramp (admit-ramp), shedding with a Retry-After spread over a window (shed), a\n" +
			"restart whose close frames are spread over a window (spread) and one that closes 1013\n" +
			"telling each client when to return (hint); against a wss:// target also its ticket keys kept\n" +
			"across the restart (tickets-kept) and ECDSA instead of RSA (ecdsa). Every restart of the schedule is graceful in\n" +
			"every row (a crash sends no close frames). The window is --mitigation-window, by default\n" +
			"the time the server needs to take the fleet back (clients over --accept-rate). Below the\n" +
			"measured table the simulator's prediction of each row, and whether it orders the\n" +
			"mitigations as measured (by wasted attempts per client, then R99).\n\n" +
			"With --tls it runs the storm over TLS instead, one policy (--policy, default\n" +
			storm.DefaultBenchPolicies[2] + "), three ways side by side: the certificate\n" +
			"(--tls-cert-kind, default rsa-2048) with its session-ticket keys in memory, the same with the\n" +
			"keys in a file kept across the restart (DIR/ticket.keys), and ECDSA P-256 instead of RSA; it\n" +
			"prints each run's reconnects after the restart by handshake (full, resumed), the target's CPU\n" +
			"per reconnect and per handshake, R99, and crypto/tls's handshake cost measured in-process.\n\n" +
			"Example (under a minute on a laptop): stampede bench --clients 1000 --accept-rate 500 --duration 20s \\\n" +
			"           --policies fixed:initial=1s --policies exp:initial=1s,max=60s,jitter=0.5\n" +
			"Example (about five minutes): stampede bench --mitigations --policy fixed:initial=1s\n" +
			"Example (about six minutes): stampede bench --tls",
		Flags:  benchFlags(),
		Action: benchAction,
	})
}

func benchFlags() []cli.Flag {
	flags := runFlags()
	out := make([]cli.Flag, 0, len(flags)+1)
	for _, f := range flags {
		switch f.Names()[0] {
		case "policy":
			out = append(out, &cli.StringSliceFlag{Name: "policies", Usage: "policy `SPEC` to compare (repeatable; default: fixed, exp, exp with jitter and spread, full)"},
				withDefaultText(withUsage(f, "one policy `SPEC` to bench: the same as --policies SPEC"), "none; with --mitigations "+benchMitigationPolicy),
				&cli.BoolFlag{Name: "mitigations", Usage: "compare server-side mitigations for one policy instead of policies"},
				&cli.DurationFlag{Name: "mitigation-window", DefaultText: "clients over --accept-rate, whole seconds, at least 1s",
					Usage: "the mitigations' window `D`: the ramp's length, the Retry-After range, the closes' spread, the return window"})
		case "clients":
			out = append(out, withDefault(f, benchClients))
		case "backlog":
			out = append(out, withDefault(f, benchBacklog))
		case "accept-rate":
			out = append(out, withDefault(f, float64(benchAcceptRate)))
		case "chaos":
			out = append(out, withDefault(f, benchChaos))
		case "duration":
			out = append(out, withDefault(f, benchDuration))
		case "syn-retries":
			out = append(out, withDefault(f, benchSynRetries))
		case "out":
			out = append(out, withDefaultText(f, "stampede-results/bench-TIME, a folder per policy inside"))
		case "tls":
			out = append(out, withUsage(f, "a TLS bench instead of policies: ticket keys in memory, kept across the restart (a file), ECDSA instead of RSA, side by side, "+
				"then crypto/tls's handshake cost here; RSA-2048, --ramp 500, an abrupt restart 10 s after the first connects and 90 s for the herd, no accept rate, the run's SYN retries and upgrade timeout unless set"))
		case "handshake-timeout":
			out = append(out, withDefault(f, benchHandshakeTimeout))
		default:
			out = append(out, f)
		}
	}
	return out
}

func benchAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("bench: unexpected argument %q", c.Args().First())
	}
	cfg, err := stormConfig(c, filepath.Join("stampede-results", "bench-"+time.Now().UTC().Format("2006-01-02T15-04-05Z")))
	if err != nil {
		return err
	}
	if c.Bool("tls") {
		if err := benchTLSDefaults(c, &cfg); err != nil {
			return err
		}
	}
	bc := storm.BenchConfig{Storm: cfg, Policies: c.StringSlice("policies"), Out: cfg.Out, Progress: c.App.ErrWriter}
	if c.IsSet("policy") {
		if c.IsSet("policies") {
			return fmt.Errorf("--policy: give one policy with --policy or several with --policies, not both")
		}
		bc.Policies = []string{c.String("policy")}
	}
	if c.IsSet("mitigation-window") && !c.Bool("mitigations") {
		return fmt.Errorf("--mitigation-window: only with --mitigations")
	}
	if c.Bool("mitigations") {
		if err := benchMitigations(c, &bc); err != nil {
			return err
		}
	}
	flags := fleetSettings(c, cfg.Fleet)
	bc.Settings = func(policy string) any { return flags.with("policy", policy, "policies") }
	if c.Bool("tls") {
		return benchTLS(c, bc)
	}
	ctx, stop := interruptible(c)
	defer stop()
	runs, err := storm.Bench(ctx, bc)
	if len(runs) > 0 {
		if perr := writeBenchTable(c, runs, cfg.Out); perr != nil {
			return perr
		}
	}
	if len(bc.Mitigations) > 0 && len(runs) == len(bc.Mitigations) && ctx.Err() == nil {
		if perr := storm.PredictMitigations(ctx, bc, runs, c.App.Writer); perr != nil {
			return perr
		}
	}
	if err != nil {
		return runError(err)
	}
	sums := make([]*summary.Summary, len(runs))
	for i, r := range runs {
		writeSLOLines(c.App.Writer, r.Policy+": ", r.Summary)
		sums[i] = r.Summary
	}
	return sloExit(sums...)
}

func writeBenchTable(c *cli.Context, runs []storm.BenchRun, dir string) error {
	w := c.App.Writer
	if err := report.WriteComparison(w, storm.Rows(runs)); err != nil {
		return err
	}
	fmt.Fprintf(w, "results: %s\n", dir)
	return nil
}

// withDefault returns a copy of flag f with another default value (shown
// as it is); the shared flag itself is not changed.
func withDefault(f cli.Flag, v any) cli.Flag {
	switch f := f.(type) {
	case *cli.IntFlag:
		g := *f
		g.Value, g.DefaultText = v.(int), ""
		return &g
	case *cli.Float64Flag:
		g := *f
		g.Value, g.DefaultText = v.(float64), ""
		return &g
	case *cli.DurationFlag:
		g := *f
		g.Value, g.DefaultText = v.(time.Duration), ""
		return &g
	case *cli.StringFlag:
		g := *f
		g.Value, g.DefaultText = v.(string), ""
		return &g
	case *cli.Uint64Flag:
		g := *f
		g.Value, g.DefaultText = v.(uint64), ""
		return &g
	}
	panic(fmt.Sprintf("stampede: withDefault: unsupported flag type %T", f))
}

// withDefaultText returns a copy of string flag f whose help shows text as
// its default.
func withDefaultText(f cli.Flag, text string) cli.Flag {
	g := *f.(*cli.StringFlag)
	g.DefaultText = text
	return &g
}

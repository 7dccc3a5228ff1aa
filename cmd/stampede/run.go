package main

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/storm"
)

// defaultRunPolicy is the policy of `stampede run` without --policy.
const defaultRunPolicy = "exp:initial=1s,max=60s,jitter=0.5,spread=100ms-500ms"

// stormFlags are the flags of `run` and `bench` beyond the target's and
// the fleet's.
func stormFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "procs", DefaultText: "0, as many as the fleet needs", Usage: "target processes `N` in one SO_REUSEPORT group"},
		&cli.StringFlag{Name: "chaos", Usage: "chaos schedule `SCHEDULE`, e.g. 'at 5s restart abrupt down=2s' (see docs/chaos.md)"},
		&cli.StringFlag{Name: "chaos-file", Usage: "read the chaos schedule from `FILE`"},
		&cli.BoolFlag{Name: "proxy", Usage: "relay the fleet through the TCP fault proxy (on by itself when the schedule has proxy events)"},
	}
}

func init() {
	register(&cli.Command{
		Name:      "run",
		Usage:     "one reconnect storm on this machine: target + loadgen + chaos, one results folder",
		UsageText: "stampede run [--clients N] [--policy SPEC] [--chaos SCHEDULE] [--duration D] [--out DIR] [flags]",
		Description: "Starts the bundled target (as many processes as the fleet needs), a fleet of --clients\n" +
			"WebSocket clients in loadgen worker processes, and applies the --chaos schedule on the\n" +
			"fleet's time axis. At the end it writes DIR/summary.json (events, recovery R50..R100,\n" +
			"herd peak, wasted attempts, latency percentiles, kernel counters, resources) and\n" +
			"prints the recovery of each event.\n\n" +
			"Example (20 s on a laptop): stampede run --clients 2000 --backlog 128 --accept-rate 2000 \\\n" +
			"           --policy exp:initial=1s,max=60s,jitter=0.5,spread=100ms-500ms \\\n" +
			"           --chaos 'at 5s restart abrupt down=2s' --duration 20s --slo 'herd_peak_to_mean<10'",
		Flags:  runFlags(),
		Action: runAction,
	})
}

func runFlags() []cli.Flag {
	flags := knobFlags(runTargetFields...)
	flags = append(flags, fleetFlags(fleetDefaults{policy: defaultRunPolicy, out: "stampede-results/TIME"})...)
	flags = append(flags, stormFlags()...)
	flags = append(flags, runAllowFlag)
	return append(flags, agentFlags()...)
}

func runAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("run: unexpected argument %q", c.Args().First())
	}
	cfg, err := stormConfig(c, filepath.Join("stampede-results", time.Now().UTC().Format("2006-01-02T15-04-05Z")))
	if err != nil {
		return err
	}
	if err := agentRunConfig(c, &cfg); err != nil {
		return err
	}
	cfg.Settings = fleetSettings(c, cfg.Fleet)
	return runStorm(c, cfg, nil) // storm.Run validates cfg, once, before any process starts
}

// stormConfig maps the flags shared by run and bench to a storm.Config;
// defaultOut is the results folder without --out.
func stormConfig(c *cli.Context, defaultOut string) (storm.Config, error) {
	fleet, err := fleetConfig(c)
	if err != nil {
		return storm.Config{}, err
	}
	cfg := storm.Config{
		Target:       targetConfig(c, runTargetFields...),
		Fleet:        fleet,
		LoadgenProcs: c.Int("loadgen-procs"),
		Proxy:        c.Bool("proxy"),
	}
	// The bundled target serves the clients' session (socketio, mqtt,
	// actioncable; its check refuses the others).
	cfg.Target.Session = fleet.Session.Protocol
	if err := fleetRunConfig(c, defaultOut, &cfg); err != nil {
		return cfg, err
	}
	cfg.Target.Addr = "" // a free port outside the ephemeral range
	cfg.Target.Procs = c.Int("procs")
	text := c.String("chaos")
	if f := c.String("chaos-file"); f != "" {
		if text != "" {
			return cfg, fmt.Errorf("--chaos and --chaos-file: give one schedule, not both")
		}
		b, err := chaos.ReadSource(f)
		if err != nil {
			return cfg, fmt.Errorf("--chaos-file: %w", err)
		}
		text = b
	}
	if text != "" {
		sched, err := chaos.Parse(text)
		if err != nil {
			if f := c.String("chaos-file"); f != "" {
				return cfg, fmt.Errorf("--chaos-file %s: %w", f, err)
			}
			return cfg, fmt.Errorf("--chaos: %w", err)
		}
		cfg.Schedule, cfg.ScheduleText = sched, text
	}
	return cfg, nil
}

// pickFlags returns the flags of from with the given names, in that order;
// a missing name is a programming error.
func pickFlags(from []cli.Flag, names ...string) []cli.Flag {
	out := make([]cli.Flag, 0, len(names))
	for _, n := range names {
		found := false
		for _, f := range from {
			if f.Names()[0] == n {
				out, found = append(out, f), true
				break
			}
		}
		if !found {
			panic("stampede: no flag --" + n)
		}
	}
	return out
}

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/storm"
)

// runTargetFlags are the target's flags that `run` and `bench` take.
var runTargetFlags = []string{"backlog", "accept-rate", "accept-burst", "handshake-cost", "tls", "max-conns", "reject-retry-after",
	"store", "no-dedupe", "retention"}

// runFleetFlags are the loadgen's flags that `run` and `bench` take.
var runFleetFlags = []string{"clients", "loadgen-procs", "ramp", "max-inflight", "seed", "source-ips", "connect-timeout",
	"handshake-timeout", "syn-retries", "no-retry-after", "mode", "msg-rate", "msg-size", "rooms", "no-resume", "no-retry-queue", "quiet-period", "reactors"}

// stormFlags are the flags of `run` and `bench` beyond the target's and
// the loadgen's.
func stormFlags(defaultDuration time.Duration) []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "procs", Usage: "target processes `N` in one SO_REUSEPORT group (0 = as many as the fleet needs)"},
		&cli.StringFlag{Name: "chaos", Usage: "chaos schedule `SCHEDULE`, e.g. 'at 5s restart abrupt down=2s' (see docs/chaos.md)"},
		&cli.StringFlag{Name: "chaos-file", Usage: "read the chaos schedule from `FILE`"},
		&cli.BoolFlag{Name: "proxy", Usage: "relay the fleet through the TCP fault proxy (on by itself when the schedule has proxy events)"},
		&cli.DurationFlag{Name: "duration", Value: defaultDuration, Usage: "length `D` of the run from the start barrier"},
		&cli.StringFlag{Name: "out", Usage: "results folder `DIR` (default stampede-results/RUN_ID)"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print no progress lines"},
		&cli.DurationFlag{Name: "progress-interval", Value: storm.DefaultProgressInterval, Usage: "time `D` between progress lines when stderr is not a terminal (a terminal gets one status line, redrawn every second; 0 = --quiet)"},
		&cli.StringFlag{Name: "metrics-addr", Usage: "serve Prometheus metrics on `ADDR`/metrics while the run goes, e.g. 127.0.0.1:9100"},
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
			"Example: stampede run --clients 10000 --backlog 128 --accept-rate 2000 \\\n" +
			"           --policy exp:initial=1s,max=60s,jitter=0.5,spread=100ms-500ms \\\n" +
			"           --chaos 'at 5s restart abrupt down=2s' --duration 30s",
		Flags:        runFlags(),
		OnUsageError: func(_ *cli.Context, err error, _ bool) error { return err },
		Action:       runAction,
	})
}

func runFlags() []cli.Flag {
	flags := append(pickFlags(targetCmd.Flags, runTargetFlags...), pickFlags(loadgenCmd.Flags, runFleetFlags...)...)
	flags = append(flags, &cli.StringFlag{Name: "policy", Value: "exp:initial=1s,max=60s,jitter=0.5,spread=100ms-500ms", Usage: "reconnect backoff policy `SPEC` (see stampede policy)"})
	flags = append(flags, sloFlag())
	return append(flags, stormFlags(30*time.Second)...)
}

func runAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("run: unexpected argument %q", c.Args().First())
	}
	cfg, err := stormConfig(c)
	if err != nil {
		return err
	}
	pol, err := parsePolicyFlag(c.String("policy"))
	if err != nil {
		return err
	}
	cfg.Fleet.Policy = pol
	if err := cfg.Validate(); err != nil {
		return flagError(err)
	}
	return runStorm(c, cfg, nil)
}

// stormConfig maps the flags shared by run and bench to a storm.Config.
func stormConfig(c *cli.Context) (storm.Config, error) {
	fleet, err := fleetConfig(c)
	if err != nil {
		return storm.Config{}, err
	}
	cfg := storm.Config{
		Target:       targetConfig(c),
		TargetProcs:  c.Int("procs"),
		Fleet:        fleet,
		LoadgenProcs: c.Int("loadgen-procs"),
		Duration:     c.Duration("duration"),
		Proxy:        c.Bool("proxy"),
		Out:          c.String("out"),
		MetricsAddr:  c.String("metrics-addr"),
	}
	cfg.Target.Addr = "" // a free port outside the ephemeral range
	if cfg.ProgressInterval = c.Duration("progress-interval"); cfg.ProgressInterval < 0 {
		return cfg, fmt.Errorf("--progress-interval must not be negative, got %s", cfg.ProgressInterval)
	}
	if !c.Bool("quiet") && cfg.ProgressInterval > 0 {
		cfg.Log = c.App.ErrWriter
	}
	text := c.String("chaos")
	if f := c.String("chaos-file"); f != "" {
		if text != "" {
			return cfg, fmt.Errorf("--chaos and --chaos-file: give one schedule, not both")
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return cfg, fmt.Errorf("--chaos-file: %w", err)
		}
		text = string(b)
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
	if cfg.SLO, err = sloFlagValue(c); err != nil {
		return cfg, err
	}
	if cfg.Out == "" {
		cfg.Out = filepath.Join("stampede-results", time.Now().UTC().Format("2006-01-02T15-04-05Z"))
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

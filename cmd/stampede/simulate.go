package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/sim"
)

// simFleetFlags are the flags of run that a simulation takes as they are.
var simFleetFlags = []string{"clients", "ramp", "max-inflight", "policy", "seed", "duration", "connect-timeout",
	"handshake-timeout", "syn-retries", "no-retry-after", "out", "force", "quiet", "slo"}

func init() {
	register(&cli.Command{
		Name:      "simulate",
		Usage:     "the same fleet, policy, seed and chaos against a model of the server and kernel, in virtual time",
		UsageText: "stampede simulate [--clients N] [--policy SPEC] [--chaos SCHEDULE] [--duration D] [--out DIR] [model flags]",
		Description: "Runs the fleet of `stampede run` (the backoff package, seed and chaos schedule) against a\n" +
			"discrete-event model of the target's listen sockets and this kernel: accept queue of\n" +
			"--backlog, --accept-rate, SYN drops and retransmits on the kernel's schedule, final-ACK drops\n" +
			"(handshake_timeout), refusals while the port is closed, restart modes, stalls, SYN cookies and\n" +
			"an optional load balancer. Every client draws exactly the delays it would draw in a real run.\n" +
			"Ten million clients fit one process (about 2.2 GiB). It writes the same results folder as run\n" +
			"(summary.json marked \"simulated\": true, timeline.csv, *.hlog, report.html); compare it with\n" +
			"a real run with `stampede report SIMDIR REALDIR`. The model and its calibration against real\n" +
			"runs: docs/simulator.md.\n\n" +
			"Example: stampede simulate --clients 10000000 --chaos 'at 10s restart abrupt down=2s' \\\n" +
			"           --policy exp:initial=1s,max=60s,jitter=0.5,spread=100ms-500ms",
		Flags:  simulateFlags(),
		Action: simulateAction,
	})
}

func simulateFlags() []cli.Flag {
	flags := pickFlags(fleetFlags(fleetDefaults{policy: defaultRunPolicy, out: "stampede-results/sim-TIME"}), simFleetFlags...)
	flags = append(flags, pickFlags(targetCmd.Flags, "backlog", "accept-rate", "accept-burst", "handshake-cost")...)
	flags = append(flags, pickFlags(stormFlags(), "procs", "chaos", "chaos-file")...)
	return append(flags,
		&cli.StringFlag{Name: "syn-schedule", DefaultText: "1s,2s,3s,4s,5s,7s,11s,19s,35s,67s,131s (this kernel's)", Usage: "model: SYN retransmit times `LIST` from the first SYN"},
		&cli.IntFlag{Name: "kernel-hz", Value: sim.DefaultHZ, Usage: "model: the kernel's tick rate `HZ`: its TCP retransmit timers fire together on a timer wheel of that many jiffies a second (negative: exact timers)"},
		&cli.IntFlag{Name: "netdev-backlog", Value: sim.DefaultNetdevBacklog, Usage: "model: net.core.netdev_max_backlog `N`: of the retransmits one timer tick fires, those beyond N+1 are dropped before TCP sees them (negative: no limit)"},
		&cli.BoolFlag{Name: "no-syn-cookies", Usage: "model: SYN cookies off (a SYN that finds the SYN queue full is dropped)"},
		&cli.Float64Flag{Name: "proc-capacity", Value: sim.DefaultProcCapacity, Usage: "model: upgrades per second `R` one target process completes when nothing else limits it"},
		&cli.DurationFlag{Name: "rtt", Value: sim.DefaultRTT, Usage: "model: handshake round trip `D`: SYNs within it see the same accept queue"},
		&cli.DurationFlag{Name: "data-rto", Value: sim.DefaultDataRTO, Usage: "model: tcp_rto_min `D`: an upgrade request whose final ACK was dropped is sent again D, D, 2D, 4D... apart (a loss probe, then retransmit timeouts)"},
		&cli.DurationFlag{Name: "stop-time", Value: sim.DefaultStopTime, Usage: "model: a restarted process's exit `D` (closing its connections; its listener still open, accepting nothing), before the down= time with the port closed (negative: none)"},
		&cli.DurationFlag{Name: "start-time", Value: sim.DefaultStartTime, Usage: "model: a restarted process's start, from listening to accepting, `D` (negative: none)"},
		&cli.Float64Flag{Name: "close-rate", Value: sim.DefaultCloseRate, Usage: "model: connections per second `R` a stopping target process closes (negative: all at once)"},
		&cli.Float64Flag{Name: "issue-rate", Usage: "model: attempts per second `R` the fleet's machine can start; given, the fleet also shares that machine's kernel timers and softnet backlog (0 = unlimited: independent devices, each its own kernel; this machine's loadgens started 48,000-106,000 a second in their fastest 100 ms in calibration)"},
		&cli.Float64Flag{Name: "lb-rate", Usage: "model: put a load balancer in front taking `R` connections per second (0 with --lb-queue: unlimited)"},
		&cli.IntFlag{Name: "lb-queue", DefaultText: "128 with a load balancer", Usage: "model: the load balancer's listen backlog `N`"},
	)
}

func simulateAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("simulate: unexpected argument %q", c.Args().First())
	}
	cfg, out, err := simConfig(c)
	if err != nil {
		return err
	}
	cfg.Settings = renderSettings(c)
	ctx, stop := interruptible(c)
	defer stop()
	started := time.Now()
	res, err := sim.Run(ctx, cfg)
	if err != nil {
		return flagError(err)
	}
	slos, err := sloFlagValue(c)
	if err != nil {
		return err
	}
	sum := sim.Summarize(res, slos)
	if err := sim.WriteResults(out, sum, res.Report); err != nil {
		return err
	}
	if err := sum.WriteText(c.App.Writer); err != nil {
		return err
	}
	if !c.Bool("quiet") {
		fmt.Fprintf(c.App.ErrWriter, "simulated %d clients, %s of virtual time, %d events in %s; %d orphaned accepts\n",
			cfg.Clients, cfg.Duration, res.Processed, time.Since(started).Round(time.Millisecond), res.Orphans)
	}
	fmt.Fprintf(c.App.Writer, "results: %s (simulated)\n", out)
	return sloExit(sum)
}

// simConfig maps the flags to a sim.Config and the results folder.
func simConfig(c *cli.Context) (sim.Config, string, error) {
	pol, err := parsePolicyFlag(c.String("policy"))
	if err != nil {
		return sim.Config{}, "", err
	}
	cfg := sim.Config{
		Clients:          c.Int("clients"),
		Policy:           pol,
		Seed:             c.Uint64("seed"),
		Duration:         c.Duration("duration"),
		Ramp:             c.Float64("ramp"),
		MaxInflight:      c.Int("max-inflight"),
		ConnectTimeout:   c.Duration("connect-timeout"),
		HandshakeTimeout: c.Duration("handshake-timeout"),
		SynRetries:       c.Int("syn-retries"),
		NoRetryAfter:     c.Bool("no-retry-after"),
		Procs:            c.Int("procs"),
		Backlog:          c.Int("backlog"),
		AcceptRate:       c.Float64("accept-rate"),
		AcceptBurst:      c.Int("accept-burst"),
		HandshakeCost:    c.Duration("handshake-cost"),
		ProcCapacity:     c.Float64("proc-capacity"),
		IssueRate:        c.Float64("issue-rate"),
		CloseRate:        c.Float64("close-rate"),
		NoSynCookies:     c.Bool("no-syn-cookies"),
		RTT:              c.Duration("rtt"),
		HZ:               c.Int("kernel-hz"),
		NetdevBacklog:    c.Int("netdev-backlog"),
		DataRTO:          c.Duration("data-rto"),
		StopTime:         c.Duration("stop-time"),
		StartTime:        c.Duration("start-time"),
	}
	checks := []struct {
		bad  bool
		flag string
		msg  string
	}{
		{cfg.Clients <= 0 || cfg.Clients > sim.MaxClients, "clients", fmt.Sprintf("must be within 1..%d, got %d", sim.MaxClients, cfg.Clients)},
		{cfg.Duration <= 0 || cfg.Duration > 24*time.Hour, "duration", fmt.Sprintf("must be within (0, 24h], got %s", cfg.Duration)},
		{cfg.Ramp < 0, "ramp", fmt.Sprintf("must not be negative, got %g", cfg.Ramp)},
		{cfg.MaxInflight < 0, "max-inflight", fmt.Sprintf("must not be negative, got %d", cfg.MaxInflight)},
		{cfg.SynRetries < 0 || cfg.SynRetries > 255, "syn-retries", fmt.Sprintf("must be within 0..255, got %d", cfg.SynRetries)},
		{cfg.Procs < 0 || cfg.Procs > 1<<16, "procs", fmt.Sprintf("must be within 0..65536, got %d", cfg.Procs)},
		{cfg.Backlog < 0, "backlog", fmt.Sprintf("must not be negative, got %d", cfg.Backlog)},
		{cfg.AcceptRate < 0, "accept-rate", fmt.Sprintf("must not be negative, got %g", cfg.AcceptRate)},
		{cfg.AcceptBurst < 0, "accept-burst", fmt.Sprintf("must not be negative, got %d", cfg.AcceptBurst)},
		{cfg.HandshakeCost < 0, "handshake-cost", fmt.Sprintf("must not be negative, got %s", cfg.HandshakeCost)},
		{cfg.ProcCapacity <= 0, "proc-capacity", fmt.Sprintf("must be positive, got %g", cfg.ProcCapacity)},
		{cfg.RTT <= 0, "rtt", fmt.Sprintf("must be positive, got %s", cfg.RTT)},
		{cfg.DataRTO <= 0, "data-rto", fmt.Sprintf("must be positive, got %s", cfg.DataRTO)},
		{cfg.IssueRate < 0, "issue-rate", fmt.Sprintf("must not be negative, got %g", cfg.IssueRate)},
		{c.Float64("lb-rate") < 0, "lb-rate", fmt.Sprintf("must not be negative, got %g", c.Float64("lb-rate"))},
		{c.Int("lb-queue") < 0, "lb-queue", fmt.Sprintf("must not be negative, got %d", c.Int("lb-queue"))},
	}
	for _, ch := range checks {
		if ch.bad {
			return cfg, "", fmt.Errorf("--%s: %s", ch.flag, ch.msg)
		}
	}
	if cfg.Ramp == 0 && cfg.AcceptRate > 0 {
		cfg.Ramp = 0.9 * cfg.AcceptRate // as run: first connects below the accept rate
	}
	if c.IsSet("lb-rate") || c.IsSet("lb-queue") {
		cfg.LB = &sim.LB{Rate: c.Float64("lb-rate"), Queue: c.Int("lb-queue")}
	}
	if s := c.String("syn-schedule"); s != "" {
		for _, w := range strings.Split(s, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(w))
			if err != nil || d <= 0 || len(cfg.SynSchedule) > 0 && d <= cfg.SynSchedule[len(cfg.SynSchedule)-1] {
				return cfg, "", fmt.Errorf("--syn-schedule %q: want increasing positive durations, e.g. 1s,3s,7s", s)
			}
			cfg.SynSchedule = append(cfg.SynSchedule, d)
		}
	}
	text := c.String("chaos")
	if f := c.String("chaos-file"); f != "" {
		if text != "" {
			return cfg, "", fmt.Errorf("--chaos and --chaos-file: give one schedule, not both")
		}
		b, err := chaos.ReadSource(f)
		if err != nil {
			return cfg, "", fmt.Errorf("--chaos-file: %w", err)
		}
		text = b
	}
	if text != "" {
		sched, err := chaos.Parse(text)
		if err != nil {
			return cfg, "", fmt.Errorf("--chaos: %w", err)
		}
		for _, e := range sched.Entries {
			if e.Event.Kind == chaos.ProxyEvent {
				return cfg, "", fmt.Errorf("--chaos: %q: the fault proxy is not modelled by simulate", e.Text)
			}
		}
		cfg.Schedule, cfg.ScheduleText = sched, text
	}
	out := c.String("out")
	if out == "" {
		out = filepath.Join("stampede-results", "sim-"+time.Now().UTC().Format("2006-01-02T15-04-05Z"))
	}
	if err := checkOut(c, out); err != nil {
		return cfg, "", err
	}
	return cfg, out, nil
}

package main

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/sim"
)

// simRunFlags are the other flags of run that a simulation takes as they
// are.
var simRunFlags = []string{"duration", "out", "force", "quiet", "slo"}

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
			"Ten million clients fit one process (the example below: 0.65 GiB, docs/measurements.md).\n" +
			"It writes a results folder as run does, less what only real processes give (no resources.csv,\n" +
			"kernel.csv): summary.json marked \"simulated\": true, timeline.csv, *.hlog, report.html;\n" +
			"compare it with a real run with `stampede report SIMDIR REALDIR`. The model and its\n" +
			"calibration against real runs: docs/simulator.md.\n\n" +
			"Example: stampede simulate --clients 10000000 --chaos 'at 10s restart abrupt down=2s' \\\n" +
			"           --policy exp:initial=1s,max=60s,jitter=0.5,spread=100ms-500ms",
		Flags:  simulateFlags(),
		Action: simulateAction,
	})
}

// simUsage is the help of the flags of run whose words there (worker
// processes, files a simulation does not write) are not true of a
// simulation.
var simUsage = map[string]string{
	"clients":      "number of clients `N`, all simulated in this one process",
	"max-inflight": "first connects in flight at once `N` over the whole fleet (0 = 2000); never limits reconnects",
	"out": fmt.Sprintf("results folder `DIR`: %s, %s, %s, %s, %s, %s, %s, report.html (nothing is sampled: no %s or %s)",
		results.SummaryFile, results.TimelineFile, results.ConnectLogFile, results.TTRLogFile, results.RTTLogFile,
		results.RTTScheduledLogFile, results.ResumeLogFile, results.ResourcesFile, results.KernelFile),
	"quiet": "print no line on stderr about the simulation's events and time",
	"procs": "model: target processes `N` in one SO_REUSEPORT group",
}

func simulateFlags() []cli.Flag {
	var flags []cli.Flag
	for _, f := range fleetFlags(fleetDefaults{policy: defaultRunPolicy, out: "stampede-results/sim-TIME"}) {
		name := f.Names()[0] // run's order and defaults
		for _, field := range simFleetFields {
			if flagOf(field) == name {
				flags = append(flags, f)
			}
		}
		for _, n := range simRunFlags {
			if n == name {
				flags = append(flags, f)
			}
		}
	}
	flags = append(flags, knobFlags(simServerFields...)...)
	flags = append(flags, pickFlags(stormFlags(), "procs", "chaos", "chaos-file")...)
	for i, f := range flags {
		if u, ok := simUsage[f.Names()[0]]; ok {
			flags[i] = withUsage(f, u)
		}
		if p, ok := flags[i].(*cli.IntFlag); ok && p.Name == "procs" {
			p.DefaultText = fmt.Sprintf("0, one per %s clients", thousands(sim.PerProcess))
		}
	}
	flags = append(flags, knobFlags(simModelFields...)...)
	return append(flags,
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
	cfg.Start = started.UTC() // the run ID names when it was simulated
	res, err := sim.Run(ctx, cfg)
	if err != nil {
		return flagError(err)
	}
	slos, err := sloFlagValue(c, false)
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
		if cfg.Cores > 0 {
			u := res.CPU
			fmt.Fprintf(c.App.ErrWriter, "cpu on %g cores: loadgen %.1fs, target %.1fs, kernel retransmits %.1fs, pings %.1fs; a restart's closes took %.2fs\n",
				cfg.Cores, u.Loadgen.Seconds(), u.Target.Seconds(), u.Kernel.Seconds(), u.Pings.Seconds(), u.Closes.Seconds())
		}
	}
	fmt.Fprintf(c.App.Writer, "results: %s (simulated)\n", out)
	return sloExit(sum)
}

// simConfig maps the flags to a sim.Config and the results folder.
func simConfig(c *cli.Context) (sim.Config, string, error) {
	cfg := sim.Config{Duration: c.Duration("duration")}
	cfg.Server.Procs = c.Int("procs")
	if err := fillKnobs(c, &cfg.Client, simFleetFields...); err != nil {
		return cfg, "", err
	}
	if err := fillKnobs(c, &cfg.Server, simServerFields...); err != nil {
		return cfg, "", err
	}
	if err := fillKnobs(c, &cfg, simModelFields...); err != nil {
		return cfg, "", err
	}
	if cfg.Ramp == 0 && cfg.AcceptRate > 0 {
		cfg.Ramp = 0.9 * cfg.AcceptRate // as run: first connects below the accept rate
	}
	if c.IsSet("lb-rate") || c.IsSet("lb-queue") {
		cfg.LB = &sim.LB{Rate: c.Float64("lb-rate"), Queue: c.Int("lb-queue")}
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
		cfg.Schedule, cfg.ScheduleText = sched, text
	}
	out := c.String("out")
	if out == "" {
		out = filepath.Join("stampede-results", "sim-"+time.Now().UTC().Format("2006-01-02T15-04-05Z"))
	}
	if err := checkOut(c, out); err != nil {
		return cfg, "", err
	}
	return cfg, out, nil // sim.Run validates it, once, before it simulates
}

// withUsage is f with another help text.
func withUsage(f cli.Flag, usage string) cli.Flag {
	switch f := f.(type) {
	case *cli.IntFlag:
		g := *f
		g.Usage = usage
		return &g
	case *cli.StringFlag:
		g := *f
		g.Usage = usage
		return &g
	case *cli.BoolFlag:
		g := *f
		g.Usage = usage
		return &g
	}
	panic(fmt.Sprintf("stampede: withUsage: unsupported flag type %T", f))
}

package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/chaos"
	"github.com/stampede-dev/stampede/report"
	"github.com/stampede-dev/stampede/results"
	"github.com/stampede-dev/stampede/results/folder"
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
			"Ten million clients fit one process (0.65 GiB, about 20 s; docs/measurements.md).\n" +
			"It writes a results folder as run does, less what only real processes give (no resources.csv,\n" +
			"kernel.csv): summary.json marked \"simulated\": true, timeline.csv, *.hlog, report.html;\n" +
			"compare it with a real run with `stampede report SIMDIR REALDIR`. The model and its\n" +
			"calibration against real runs: docs/simulator.md.\n\n" +
			"Example (seconds on a laptop): stampede simulate --clients 2000 --chaos 'at 10s restart abrupt down=2s' \\\n" +
			"           --policy exp:initial=1s,max=60s,jitter=0.5,spread=100ms-500ms\n\n" +
			"Both ends on one machine of 2 cores, at its own CPU per connect (a small real run's summary.json\n" +
			"resources.loadgen.cpu_us_per_connect and resources.target.cpu_us_per_connect):\n" +
			"  stampede simulate --clients 250000 --chaos 'at 120s restart abrupt down=2s' --duration 240s \\\n" +
			"           --cores 2 --cpu-per-connect 40us,40us",
		Flags:  simulateFlags(),
		Before: checkCPUFlags,
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
		folder.SummaryFile, folder.TimelineFile, results.ConnectLogFile, results.TTRLogFile, results.RTTLogFile,
		results.RTTScheduledLogFile, results.ResumeLogFile, results.ResourcesFile, results.KernelFile),
	"quiet":           "print no line on stderr about the simulation's events and time",
	"procs":           "model: target processes `N` in one SO_REUSEPORT group",
	"tls":             "model: the server speaks wss://: each upgrade pays a TLS handshake's CPU, full or resumed, at each end (Go crypto/tls's, measured on this project's machine: docs/simulator.md)",
	"tls-cert-kind":   "model: the certificate's key `KIND` whose handshake costs are charged: ecdsa-p256, rsa-2048 or rsa-4096 (implies --tls)",
	"tls-ticket-keys": "model: the server keeps its session-ticket keys in `FILE` (not read): they survive a restart, and the clients' sessions resume (implies --tls)",
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
	flags = append(flags, knobFlags("Sim.CPU")...)
	return append(flags,
		&cli.StringFlag{Name: "cpu-per-connect", DefaultText: defaultPerConnect() + ", this project's 2-core machine's at a small fleet",
			Usage: "model, with --cores: each end's CPU per first connect on the machine modelled, `LOADGEN,TARGET` such as 65us,60us, read off a small real run on it (its summary.json resources.loadgen.cpu_us_per_connect and resources.target.cpu_us_per_connect), which the model grows with the fleet (--cpu-costs loadgen_growth, target_growth): TARGET is the target's accept cost, LOADGEN the loadgen's attempt and upgrade costs together, split 44 : 57.5 as profiled (every try pays the attempt, only a success the upgrade); not with --cpu-costs attempt, upgrade or accept"},
		&cli.Float64Flag{Name: "lb-rate", Usage: "model: put a load balancer in front taking `R` connections per second (0 with --lb-queue: unlimited)"},
		&cli.IntFlag{Name: "lb-queue", DefaultText: "128 with a load balancer", Usage: "model: the load balancer's listen backlog `N`"},
	)
}

// cpuCosts returns the machine's CPU costs --cpu-costs and
// --cpu-per-connect give (zero fields: the defaults), refusing either
// without --cores, whose cores they are the costs of, and
// --cpu-per-connect with a --cpu-costs key it sets too.
func cpuCosts(c *cli.Context) (sim.CPUCosts, error) {
	spec, perConnect := c.String("cpu-costs"), c.String("cpu-per-connect")
	if c.Float64("cores") <= 0 {
		for _, n := range []string{"cpu-costs", "cpu-per-connect"} {
			if c.String(n) != "" {
				return sim.CPUCosts{}, fmt.Errorf("--%s needs --cores: the costs are of the cores --cores models", n)
			}
		}
	}
	costs, err := sim.ParseCPUCosts(spec)
	if err != nil {
		return costs, flagError(err)
	}
	if perConnect == "" {
		return costs, nil
	}
	loadgen, target, err := parseCPUPerConnect(perConnect)
	if err != nil {
		return costs, fmt.Errorf("--cpu-per-connect: invalid value %q: %w", perConnect, err)
	}
	for _, f := range []struct {
		key string
		v   time.Duration
	}{{"attempt", costs.Attempt}, {"upgrade", costs.Upgrade}, {"accept", costs.Accept}} {
		if f.v != 0 {
			return costs, fmt.Errorf("--cpu-per-connect and --cpu-costs %s: give one; --cpu-per-connect sets attempt, upgrade and accept", f.key)
		}
	}
	return costs.PerConnect(loadgen, target), nil
}

// parseCPUPerConnect reads --cpu-per-connect's LOADGEN,TARGET.
func parseCPUPerConnect(s string) (loadgen, target time.Duration, err error) {
	lg, tg, ok := strings.Cut(s, ",")
	if ok {
		loadgen, err = time.ParseDuration(strings.TrimSpace(lg))
	}
	if ok && err == nil {
		target, err = time.ParseDuration(strings.TrimSpace(tg))
	}
	if !ok || err != nil || loadgen <= 0 || target <= 0 {
		return 0, 0, errors.New("want LOADGEN,TARGET, each end's CPU per first connect, two positive durations such as 65us,60us")
	}
	return loadgen, target, nil
}

// simSettings is what a simulation's summary.json records as its config:
// the flags as given, but with --cores, --cpu-costs the costs used, every
// key, so that the file reproduces the run whatever the defaults (a
// --cpu-per-connect is in its attempt, upgrade and accept, and recorded
// empty).
func simSettings(c *cli.Context, cfg sim.Config) settings {
	s := renderSettings(c)
	if cfg.Cores > 0 {
		s = s.with("cpu-costs", cfg.CPU.WithDefaults().String(), "cpu-per-connect").with("cpu-per-connect", "", "lb-rate")
	}
	return s
}

func simulateAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("simulate: unexpected argument %q", c.Args().First())
	}
	cfg, out, err := simConfig(c)
	if err != nil {
		return err
	}
	cfg.Settings = simSettings(c, cfg)
	ctx, stop := interruptible(c)
	defer stop()
	started := time.Now()
	cfg.Start = started.UTC() // the run ID names when it was simulated
	res, err := sim.Run(ctx, cfg)
	if err != nil && !errors.Is(err, sim.ErrInterrupted) {
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
	if err := report.WriteText(c.App.Writer, sum); err != nil {
		return err
	}
	if !c.Bool("quiet") {
		fmt.Fprintf(c.App.ErrWriter, "simulated %d clients, %s of virtual time, %d events in %s; %d orphaned accepts\n",
			cfg.Clients, cfg.Duration, res.Processed, time.Since(started).Round(time.Millisecond), res.Orphans)
		if cfg.Cores > 0 {
			u, k := res.CPU, res.Config.CPU.AtFleet(cfg.Clients)
			fmt.Fprintf(c.App.ErrWriter, "cpu on %g cores, a connect at this fleet costing the loadgen %s (attempt %s + upgrade %s) and the target %s (accept): loadgen %.1fs, target %.1fs, kernel retransmits %.1fs, pings %.1fs; a restart's closes took %.2fs\n",
				cfg.Cores, k.LoadgenPerConnect(), k.Attempt, k.Upgrade, k.TargetPerConnect(),
				u.Loadgen.Seconds(), u.Target.Seconds(), u.Kernel.Seconds(), u.Pings.Seconds(), u.Closes.Seconds())
		}
	}
	fmt.Fprintf(c.App.Writer, "results: %s (simulated)\n", out)
	if res.Interrupted {
		return cli.Exit("interrupted: the simulation was stopped early; the results cover the virtual time it reached", exitInterrupted)
	}
	return sloExit(sum)
}

// checkCPUFlags is the Before of the commands that simulate: their CPU
// costs are checked before anything runs.
func checkCPUFlags(c *cli.Context) error {
	_, err := cpuCosts(c)
	return err
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
	var err error
	if cfg.CPU, err = cpuCosts(c); err != nil {
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

// defaultPerConnect is --cpu-per-connect's default as it would be given:
// each end's CPU per first connect at a small fleet, the model's own.
func defaultPerConnect() string {
	return sim.CostDuration(sim.CPUCosts{}.LoadgenPerConnect()) + "," + sim.CostDuration(sim.CPUCosts{}.TargetPerConnect())
}
